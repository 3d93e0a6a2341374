import { type AgentOptions, createBareAgent, defineTool, type RunState, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { expectValidTranscript, resultText, toolResultsOf } from "../support/results.ts";
import { collect, labels } from "./helpers.ts";

/** The same options give both agents: the first pauses, a new one resumes from the JSON state. */
function setup() {
  const counts = { lookup: 0, askExecute: 0, responses: [] as unknown[] };
  const lookup = tool(
    "lookup",
    "Local lookup",
    z.object({ key: z.string() }),
    async ({ key }) => {
      counts.lookup++;
      return `value of ${key}`;
    },
    { isConcurrencySafe: () => true },
  );
  const approveRefund = defineTool({
    id: "approve-refund",
    description: "A person approves the refund in the app.",
    parameters: {
      type: "object",
      properties: { amount: { type: "number" } },
      required: ["amount"],
    },
    execute: false,
  });
  const askUser = defineTool({
    id: "ask-user",
    parameters: { type: "object", properties: { question: { type: "string" } } },
    onToolCalled: () => null,
    onResponseReceived: (response: unknown, input: { question?: string }) => {
      counts.responses.push(response);
      return { answer: response, question: input.question };
    },
    async execute() {
      counts.askExecute++;
      return "should never run";
    },
  });
  const model = scriptedModel([
    {
      toolCalls: [
        { id: "l1", name: "lookup", input: { key: "order" } },
        { id: "r1", name: "approve-refund", input: { amount: "30" } },
        { id: "q1", name: "ask-user", input: { question: "Which order?" } },
        { id: "l2", name: "lookup", input: { key: "customer" } },
      ],
    },
    { text: "Refund approved." },
  ]);
  const options: AgentOptions = { model, tools: [lookup, approveRefund, askUser] };
  return { counts, model, options };
}

async function paused() {
  const setupResult = setup();
  const result = await createBareAgent(setupResult.options).run("refund order 7");
  const state = JSON.parse(JSON.stringify(result.state)) as RunState;
  return { ...setupResult, result, state };
}

describe("pausing for the app", () => {
  it("pauses on execute: false and on onToolCalled returning null, listing the pending calls", async () => {
    const { result, counts, model } = await paused();
    expect(result.subtype).toBe("paused");
    expect(result.isError).toBe(false);
    expect(result.pending).toEqual([
      { id: "r1", name: "approve-refund", input: { amount: 30 }, reason: "external" },
      { id: "q1", name: "ask-user", input: { question: "Which order?" }, reason: "external" },
    ]);
    expect(result.state).toBeDefined();
    expect(counts).toEqual({ lookup: 2, askExecute: 0, responses: [] });
    expect(model.requests).toHaveLength(1);
  });

  it("emits tool_start for every call, and tool_end only for the calls that finished", async () => {
    const { options } = setup();
    const { events } = await collect(createBareAgent(options).stream("go"));
    expect(labels(events)).toEqual([
      "run_start",
      "turn_start",
      // Eager execution: calls are prepared, one after another, as their blocks complete in the
      // stream. The scripted stream has no network delay, so the prepare chain falls behind it
      // and the message comes before l2's tool_start.
      "tool_start:l1",
      "tool_start:r1",
      "tool_start:q1",
      "message",
      "tool_start:l2",
      "tool_end:l1",
      "tool_end:l2",
      // The stream ends with the pause: its turn ends too (a resumed run opens it again).
      "turn_end",
      "result",
    ]);
  });
});

describe("resuming", () => {
  it("continues on a new agent as if the tools ran: the model sees the outputs as tool_results", async () => {
    const { state, options, model, counts } = await paused();
    const resumed = await createBareAgent(options).resume(state, {
      toolOutputs: { r1: { approved: true }, q1: "order 7" },
    });
    expect(resumed.subtype).toBe("success");
    expect(resumed.result).toBe("Refund approved.");
    expect(model.requests).toHaveLength(2);
    const blocks = toolResultsOf(model.requests[1]!.messages.at(-1));
    expect(blocks.map((block) => [block.tool_use_id, resultText(block), block.is_error])).toEqual([
      ["l1", "value of order", false],
      ["r1", '{"approved":true}', false],
      ["q1", '{"answer":"order 7","question":"Which order?"}', false],
      ["l2", "value of customer", false],
    ]);
    expect(counts).toEqual({ lookup: 2, askExecute: 0, responses: ["order 7"] });
    expectValidTranscript(resumed.messages);
    expect(resumed.sessionId).toBe(state.sessionId);
    expect(resumed.numTurns).toBe(2);
    expect(resumed.steps[0]!.toolCalls.map((call) => call.callId)).toEqual([
      "l1",
      "r1",
      "q1",
      "l2",
    ]);
  });

  it("answers a pending call with no output with an error result, and goes on", async () => {
    const { state, options, model } = await paused();
    const resumed = await createBareAgent(options).resume(state, {
      toolOutputs: { q1: "order 7" },
    });
    expect(resumed.subtype).toBe("success");
    const blocks = toolResultsOf(model.requests[1]!.messages.at(-1));
    expect(blocks.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ["l1", false],
      ["r1", true],
      ["q1", false],
      ["l2", false],
    ]);
    expect(resultText(blocks[1])).toContain("approve-refund");
  });

  it("takes the state as JSON text as well", async () => {
    const { result, options } = await paused();
    const resumed = await createBareAgent(options).resume(JSON.stringify(result.state), {
      toolOutputs: { r1: "yes", q1: "no" },
    });
    expect(resumed.subtype).toBe("success");
  });

  it("streams the resumed run: run_start (resumed), the paused turn opened again with its calls' tool_end, then the next turn, ending with the result", async () => {
    const { state, options } = await paused();
    const { events, result } = await collect(
      createBareAgent(options).resumeStream(state, { toolOutputs: { r1: "yes", q1: "no" } }),
    );
    expect(labels(events)).toEqual([
      "run_start",
      // The paused turn, opened again for the rest of its batch.
      "turn_start",
      "tool_end:r1",
      "tool_end:q1",
      "turn_end",
      "turn_start",
      "text_delta",
      "message",
      "turn_end",
      "result",
    ]);
    expect(events[0]).toMatchObject({ type: "run_start", resumed: true });
    expect(result.subtype).toBe("success");
  });

  it("runs hooks for the resumed calls: afterToolCall can replace an app's output", async () => {
    const { state, options, model } = await paused();
    const seen: string[] = [];
    const resumed = await createBareAgent({
      ...options,
      hooks: {
        afterToolCall: ({ callId }) => {
          seen.push(`after:${callId}`);
          return callId === "r1" ? { result: "checked by hook" } : undefined;
        },
        onToolResult: ({ callId }) => void seen.push(`onResult:${callId}`),
      },
    }).resume(state, { toolOutputs: { r1: "yes", q1: "no" } });
    expect(resumed.subtype).toBe("success");
    expect(seen).toEqual(["after:r1", "onResult:r1", "after:q1", "onResult:q1"]);
    expect(resultText(toolResultsOf(model.requests[1]!.messages.at(-1))[1])).toBe(
      "checked by hook",
    );
  });

  it("lets an onToolCalled that returns a value answer without pausing or executing", async () => {
    let executed = 0;
    const quick = defineTool({
      id: "quick",
      onToolCalled: () => ({ cached: true }),
      async execute() {
        executed++;
        return "fresh";
      },
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "k", name: "quick", input: {} }] },
      { text: "ok" },
    ]);
    const result = await createBareAgent({ model, tools: [quick] }).run("go");
    expect(result.subtype).toBe("success");
    expect(executed).toBe(0);
    expect(resultText(toolResultsOf(model.requests[1]!.messages.at(-1))[0])).toBe(
      '{"cached":true}',
    );
  });

  it("pauses again when the resumed run meets another external call", async () => {
    const external = defineTool({ id: "external", execute: false });
    const model = scriptedModel([
      { toolCalls: [{ id: "e1", name: "external", input: {} }] },
      { toolCalls: [{ id: "e2", name: "external", input: {} }] },
      { text: "done" },
    ]);
    const options: AgentOptions = { model, tools: [external] };
    const first = await createBareAgent(options).run("go");
    const second = await createBareAgent(options).resume(JSON.parse(JSON.stringify(first.state)), {
      toolOutputs: { e1: "one" },
    });
    expect(second.subtype).toBe("paused");
    expect(second.pending).toEqual([{ id: "e2", name: "external", input: {}, reason: "external" }]);
    const third = await createBareAgent(options).resume(JSON.parse(JSON.stringify(second.state)), {
      toolOutputs: { e2: "two" },
    });
    expect(third.subtype).toBe("success");
    expect(third.numTurns).toBe(3);
    expectValidTranscript(third.messages);
  });
});

describe("a paused batch keeps what its finished calls decided", () => {
  function endingBatch(finishResult: unknown, hooks: AgentOptions["hooks"] = {}) {
    const finish = tool("finish", "Finish", z.object({}), async () => finishResult as never, {
      isConcurrencySafe: () => true,
    });
    const external = defineTool({ id: "external", execute: false });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "f", name: "finish", input: {} },
          { id: "e", name: "external", input: {} },
        ],
      },
      { text: "should not be asked" },
    ]);
    return { model, options: { model, tools: [finish, external], hooks } as AgentOptions };
  }

  it("an endTurn result ends the run once the paused calls are answered, with its structuredResult", async () => {
    const { model, options } = endingBatch({
      content: "final",
      endTurn: true,
      structuredResult: { ok: 1 },
    });
    const first = await createBareAgent(options).run("go");
    expect(first.subtype).toBe("paused");
    const resumed = await createBareAgent(options).resume(JSON.parse(JSON.stringify(first.state)), {
      toolOutputs: { e: "app output" },
    });
    expect(resumed.subtype).toBe("success");
    expect(resumed.result).toBe("final");
    expect(resumed.structuredResult).toEqual({ ok: 1 });
    expect(model.requests).toHaveLength(1);
    expectValidTranscript(resumed.messages);
  });

  it("an afterToolCall { stop: true } ends the run once the paused calls are answered", async () => {
    const { model, options } = endingBatch("stopped here", {
      afterToolCall: ({ callId }) => (callId === "f" ? { stop: true } : undefined),
    });
    const first = await createBareAgent(options).run("go");
    expect(first.subtype).toBe("paused");
    const resumed = await createBareAgent(options).resume(JSON.parse(JSON.stringify(first.state)), {
      toolOutputs: { e: "app output" },
    });
    expect(resumed.subtype).toBe("success");
    expect(resumed.result).toBe("stopped here");
    expect(model.requests).toHaveLength(1);
  });
});
