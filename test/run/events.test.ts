import { type AgentEvent, type CustomEvent, createBareAgent, defineTool, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { resultText, toolResultsOf } from "../support/results.ts";
import { collect, labels } from "./helpers.ts";

type ToolEnd = Extract<AgentEvent, { type: "tool_end" }>;
const toolEnds = (events: AgentEvent[]) =>
  events.filter((event): event is ToolEnd => event.type === "tool_end");

const indexRepository = defineTool({
  id: "index-repository",
  async *execute(_input: { path: string }) {
    yield { phase: "scan" };
    yield { phase: "embed" };
    return { indexed: 248 };
  },
});

const fetchRows = tool(
  "fetch_rows",
  "Fetch rows",
  z.object({ table: z.string() }),
  async (input, ctx) => {
    ctx.update({ status: "connecting" });
    ctx.emit({ type: "app.progress", table: input.table, percent: 50 });
    ctx.update({ status: "3 rows" });
    return { content: "3 rows", details: { rows: [1, 2, 3] } };
  },
);

function twoTurnAgent() {
  const model = scriptedModel([
    {
      text: "Let me look.",
      toolCalls: [
        { id: "idx", name: "index-repository", input: { path: "." } },
        { id: "rows", name: "fetch_rows", input: { table: "users" } },
      ],
      usage: { inputTokens: 10, outputTokens: 5 },
    },
    { text: "Indexed 248 files; 3 users.", usage: { inputTokens: 20, outputTokens: 7 } },
  ]);
  return { model, agent: createBareAgent({ model, tools: [indexRepository, fetchRows] }) };
}

describe("the event stream", () => {
  it("has the full sequence of a two-turn run, ending with the result", async () => {
    const { agent } = twoTurnAgent();
    const { events, result } = await collect(agent.stream("index and count"));
    expect(labels(events)).toEqual([
      "run_start",
      "turn_start",
      "text_delta",
      // Eager execution: each call is prepared (tool_start) as its tool_use block completes in
      // the stream; neither tool is concurrency-safe, so both handlers wait for the reply.
      "tool_start:idx",
      "tool_start:rows",
      "message",
      "tool_update:idx",
      "tool_update:idx",
      "tool_update:rows",
      "app.progress",
      "tool_update:rows",
      "tool_end:idx",
      "tool_end:rows",
      "turn_end",
      "turn_start",
      "text_delta",
      "message",
      "turn_end",
      "result",
    ]);
    expect(events[0]).toMatchObject({
      type: "run_start",
      resumed: false,
      sessionId: result.sessionId,
    });
    expect(events.filter((event) => event.type === "turn_start")).toEqual([
      { type: "turn_start", turn: 1 },
      { type: "turn_start", turn: 2 },
    ]);
    expect(result.usage).toEqual({
      inputTokens: 30,
      outputTokens: 12,
      cacheReadInputTokens: 0,
      cacheCreationInputTokens: 0,
    });
    expect(result.numTurns).toBe(2);
  });

  it("gives turn_end the turn number, that turn's assistant message and its tool results", async () => {
    const { agent, model } = twoTurnAgent();
    const { events, result } = await collect(agent.stream("go"));
    const turnEnds = events.filter(
      (event): event is Extract<AgentEvent, { type: "turn_end" }> => event.type === "turn_end",
    );
    expect(turnEnds).toEqual([
      {
        type: "turn_end",
        turn: 1,
        message: result.messages[1],
        toolResults: toolResultsOf(model.requests[1]!.messages.at(-1)),
      },
      { type: "turn_end", turn: 2, message: result.messages[3], toolResults: [] },
    ]);
    expect(turnEnds[0]!.message.role).toBe("assistant");
    expect(turnEnds[1]!.message.role).toBe("assistant");
  });

  it("carries both generator yields and ctx.update() as tool_update, and ctx.emit events as they are", async () => {
    const { agent } = twoTurnAgent();
    const { events } = await collect(agent.stream("go"));
    const updates = events.filter((event) => event.type === "tool_update");
    expect(updates).toEqual([
      { type: "tool_update", callId: "idx", name: "index-repository", update: { phase: "scan" } },
      { type: "tool_update", callId: "idx", name: "index-repository", update: { phase: "embed" } },
      { type: "tool_update", callId: "rows", name: "fetch_rows", update: { status: "connecting" } },
      { type: "tool_update", callId: "rows", name: "fetch_rows", update: { status: "3 rows" } },
    ]);
    expect(events.filter((event) => event.type === "app.progress")).toEqual([
      { type: "app.progress", table: "users", percent: 50 },
    ]);
  });

  it("gives tool_end the full result, isError, details and durationMs; details never reach the model", async () => {
    const { agent, model } = twoTurnAgent();
    const { events } = await collect(agent.stream("go"));
    const [idx, rows] = toolEnds(events);
    expect(idx).toMatchObject({
      callId: "idx",
      name: "index-repository",
      result: { content: '{"indexed":248}' },
      isError: false,
    });
    expect(rows).toMatchObject({
      callId: "rows",
      name: "fetch_rows",
      result: { content: "3 rows", details: { rows: [1, 2, 3] } },
      isError: false,
      details: { rows: [1, 2, 3] },
    });
    for (const end of [idx!, rows!]) {
      expect(typeof end.durationMs).toBe("number");
      expect(end.durationMs).toBeGreaterThanOrEqual(0);
    }
    const sent = model.requests[1]!.messages.at(-1)!;
    expect(JSON.stringify(sent)).not.toContain('rows":[1');
    expect(toolResultsOf(sent)).toEqual([
      { type: "tool_result", tool_use_id: "idx", content: '{"indexed":248}', is_error: false },
      { type: "tool_result", tool_use_id: "rows", content: "3 rows", is_error: false },
    ]);
  });

  it("records steps: the model's message and each call with result and preliminary results", async () => {
    const { agent } = twoTurnAgent();
    const result = await agent.run("go");
    expect(result.steps).toHaveLength(2);
    expect(result.steps[0]).toEqual({
      message: result.messages[1],
      stopReason: "tool_use",
      usage: { inputTokens: 10, outputTokens: 5 },
      toolCalls: [
        {
          callId: "idx",
          name: "index-repository",
          input: { path: "." },
          result: { content: '{"indexed":248}' },
          isError: false,
          preliminaryResults: [{ phase: "scan" }, { phase: "embed" }],
        },
        {
          callId: "rows",
          name: "fetch_rows",
          input: { table: "users" },
          result: { content: "3 rows", details: { rows: [1, 2, 3] } },
          isError: false,
          preliminaryResults: [{ status: "connecting" }, { status: "3 rows" }],
        },
      ],
    });
    expect(result.steps[1]).toEqual({
      message: result.messages[3],
      stopReason: "end_turn",
      usage: { inputTokens: 20, outputTokens: 7 },
      toolCalls: [],
    });
  });

  it("refuses ctx.emit of one of skein's own event types: the call gets an error result", async () => {
    const forger = tool("forger", "Forges", z.object({}), async (_input, ctx) => {
      ctx.emit({ type: "tool_end", callId: "x" } as unknown as CustomEvent);
      return "should not get here";
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "f", name: "forger", input: {} }] },
      { text: "ok" },
    ]);
    const { events } = await collect(createBareAgent({ model, tools: [forger] }).stream("go"));
    expect(labels(events).filter((entry) => entry.startsWith("tool_"))).toEqual([
      "tool_start:f",
      "tool_end:f",
    ]);
    const [end] = toolEnds(events);
    expect(end!.isError).toBe(true);
    expect(String(end!.result.content)).toContain("tool_end");
    const [block] = toolResultsOf(model.requests[1]!.messages.at(-1));
    expect(block!.is_error).toBe(true);
  });

  it("gives calls that never ran a tool_start and a tool_end too", async () => {
    let ran = 0;
    const guarded = tool("guarded", "Guarded", z.object({ n: z.number() }), async () => {
      ran++;
      return "ran";
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "unknown", name: "nope", input: {} },
          { id: "invalid", name: "guarded", input: { n: "not a number" } },
          { id: "blocked", name: "guarded", input: { n: 1 } },
          { id: "fine", name: "guarded", input: { n: 2 } },
        ],
      },
      { text: "ok" },
    ]);
    const agent = createBareAgent({
      model,
      tools: [guarded],
      hooks: {
        beforeToolCall: ({ callId }) =>
          callId === "blocked" ? { block: true, reason: "not now" } : undefined,
      },
    });
    const { events } = await collect(agent.stream("go"));
    expect(ran).toBe(1);
    expect(labels(events).filter((entry) => entry.startsWith("tool_"))).toEqual([
      "tool_start:unknown",
      "tool_start:invalid",
      "tool_start:blocked",
      "tool_start:fine",
      "tool_end:unknown",
      "tool_end:invalid",
      "tool_end:blocked",
      "tool_end:fine",
    ]);
    expect(toolEnds(events).map((end) => [end.callId, end.isError])).toEqual([
      ["unknown", true],
      ["invalid", true],
      ["blocked", true],
      ["fine", false],
    ]);
    expect(
      toolEnds(events).map((end) => (end.details as { reason?: string } | undefined)?.reason),
    ).toEqual(["not_found", "invalid_input", "blocked", undefined]);
  });

  it("puts the tool's label on tool_start", async () => {
    const labelled = tool("labelled", "L", z.object({}), async () => "x", {
      label: "Labelled tool",
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "l", name: "labelled", input: {} }] },
      { text: "" },
    ]);
    const { events } = await collect(createBareAgent({ model, tools: [labelled] }).stream("go"));
    expect(events.find((event) => event.type === "tool_start")).toEqual({
      type: "tool_start",
      callId: "l",
      name: "labelled",
      input: {},
      label: "Labelled tool",
    });
  });

  it("ends the stream with the same result run() resolves with", async () => {
    const { agent } = twoTurnAgent();
    const { result } = await collect(agent.stream("go"));
    const { agent: again } = twoTurnAgent();
    const direct = await again.run("go");
    expect({ ...result, durationMs: 0, sessionId: "" }).toEqual({
      ...direct,
      durationMs: 0,
      sessionId: "",
    });
    expect(resultText(toolResultsOf(result.messages[2])[0])).toBe('{"indexed":248}');
  });
});
