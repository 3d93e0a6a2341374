import { createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { lastResults, resultText } from "../support/results.ts";
import { collect, Gates, labels, noEager, OverlapMeter } from "./helpers.ts";

/**
 * Three calls whose handlers finish in reverse order (c, b, a), with every hook traced. With
 * `eager: false`, a pass-through batch policy turns eager execution off (DESIGN).
 */
async function reverseOrderRun({ eager }: { eager: boolean }) {
  const gates = new Gates();
  const trace = gates.trace;
  const hooks = new OverlapMeter();
  const step = tool(
    "step",
    "A step",
    z.object({ id: z.string() }),
    async ({ id }, ctx) => {
      ctx.emit({ type: "app.start", id });
      await gates.pass(id);
      ctx.emit({ type: "app.end", id });
      return `result ${id}`;
    },
    { isConcurrencySafe: () => true },
  );
  const model = scriptedModel([
    {
      toolCalls: ["a", "b", "c"].map((id) => ({ id, name: "step", input: { id } })),
    },
    { text: "done" },
  ]);
  const agent = createBareAgent({
    model,
    tools: [step],
    ...(eager ? {} : { toolBatchPolicy: noEager }),
    hooks: {
      beforeToolCall: ({ callId }) => hooks.around(() => void trace.push(`before:${callId}`)),
      afterToolCall: ({ callId }) => hooks.around(() => void trace.push(`after:${callId}`)),
      onToolResult: ({ callId }) => hooks.around(() => void trace.push(`onResult:${callId}`)),
    },
  });
  const running = collect(agent.stream("go"));
  await gates.started("a", "b", "c");
  await gates.finish("c");
  await gates.finish("b");
  await gates.finish("a");
  const { events, result } = await running;
  return { trace, events, result, model, hooks };
}

describe("order around a concurrent batch (DESIGN decision 5)", () => {
  it("without eager execution (pass-through batch policy), runs tool_start and beforeToolCall in call order before any handler", async () => {
    const { trace, events } = await reverseOrderRun({ eager: false });
    expect(trace.slice(0, 6)).toEqual([
      "before:a",
      "before:b",
      "before:c",
      "start:a",
      "start:b",
      "start:c",
    ]);
    const tools = labels(events).filter((entry) => /^(tool_|app\.)/.test(entry));
    expect(tools.slice(0, 6)).toEqual([
      "tool_start:a",
      "tool_start:b",
      "tool_start:c",
      "app.start:a",
      "app.start:b",
      "app.start:c",
    ]);
  });

  it("without eager execution (pass-through batch policy), runs afterToolCall, onToolResult and tool_end in call order after the whole batch", async () => {
    const { trace, events } = await reverseOrderRun({ eager: false });
    expect(trace.slice(6)).toEqual([
      "end:c",
      "end:b",
      "end:a",
      "after:a",
      "onResult:a",
      "after:b",
      "onResult:b",
      "after:c",
      "onResult:c",
    ]);
    expect(labels(events)).toEqual([
      "run_start",
      "turn_start",
      "message",
      "tool_start:a",
      "tool_start:b",
      "tool_start:c",
      "app.start:a",
      "app.start:b",
      "app.start:c",
      "app.end:c",
      "app.end:b",
      "app.end:a",
      "tool_end:a",
      "tool_end:b",
      "tool_end:c",
      "turn_end",
      "turn_start",
      "text_delta",
      "message",
      "turn_end",
      "result",
    ]);
  });

  it("with eager execution, runs each call's tool_start and beforeToolCall in call order, before its own handler", async () => {
    const { trace, events } = await reverseOrderRun({ eager: true });
    const ids = ["a", "b", "c"];
    expect(trace.filter((entry) => entry.startsWith("before:"))).toEqual(
      ids.map((id) => `before:${id}`),
    );
    for (const id of ids)
      expect(trace.indexOf(`before:${id}`)).toBeLessThan(trace.indexOf(`start:${id}`));
    const seen = labels(events);
    expect(seen.filter((entry) => entry.startsWith("tool_start:"))).toEqual(
      ids.map((id) => `tool_start:${id}`),
    );
    for (const id of ids)
      expect(seen.indexOf(`tool_start:${id}`)).toBeLessThan(seen.indexOf(`app.start:${id}`));
  });

  it("with eager execution, still runs afterToolCall, onToolResult and tool_end in call order after the whole batch", async () => {
    const { trace, events } = await reverseOrderRun({ eager: true });
    // The test lets no handler end before all three have started, so the first six entries are
    // the three beforeToolCall hooks and the three handler starts, in an order checked above.
    expect(trace.slice(0, 6).sort()).toEqual([
      "before:a",
      "before:b",
      "before:c",
      "start:a",
      "start:b",
      "start:c",
    ]);
    expect(trace.slice(6)).toEqual([
      "end:c",
      "end:b",
      "end:a",
      "after:a",
      "onResult:a",
      "after:b",
      "onResult:b",
      "after:c",
      "onResult:c",
    ]);
    const seen = labels(events);
    const firstEnd = seen.indexOf("app.end:c");
    expect(seen.slice(0, 2)).toEqual(["run_start", "turn_start"]);
    expect(seen.slice(2, firstEnd).sort()).toEqual([
      "app.start:a",
      "app.start:b",
      "app.start:c",
      "message",
      "tool_start:a",
      "tool_start:b",
      "tool_start:c",
    ]);
    expect(seen.slice(firstEnd)).toEqual([
      "app.end:c",
      "app.end:b",
      "app.end:a",
      "tool_end:a",
      "tool_end:b",
      "tool_end:c",
      "turn_end",
      "turn_start",
      "text_delta",
      "message",
      "turn_end",
      "result",
    ]);
  });

  for (const eager of [false, true]) {
    const mode = eager ? "with eager execution" : "without eager execution";
    it(`sends the tool_result blocks in call order, not completion order (${mode})`, async () => {
      const { model, result } = await reverseOrderRun({ eager });
      const sent = lastResults(model.requests[1]!.messages);
      expect(sent.map((block) => block.tool_use_id)).toEqual(["a", "b", "c"]);
      expect(sent.map(resultText)).toEqual(["result a", "result b", "result c"]);
      const turnEnd = result.messages[2]!;
      expect(lastResults([turnEnd]).map((block) => block.tool_use_id)).toEqual(["a", "b", "c"]);
      expect(result.steps[0]!.toolCalls.map((call) => call.callId)).toEqual(["a", "b", "c"]);
    });

    it(`never calls hooks concurrently (${mode})`, async () => {
      const { hooks, trace } = await reverseOrderRun({ eager });
      expect(trace.filter((entry) => /^(before|after|onResult):/.test(entry))).toHaveLength(9);
      expect(hooks.peak).toBe(1);
    });
  }

  it("carries each call's input and result to its hooks, not a neighbour's", async () => {
    const seen: string[] = [];
    const step = tool("step", "A step", z.object({ id: z.string() }), async ({ id }) => `r-${id}`, {
      isConcurrencySafe: () => true,
    });
    const agent = createBareAgent({
      model: scriptedModel([
        { toolCalls: ["x", "y"].map((id) => ({ id, name: "step", input: { id } })) },
        { text: "ok" },
      ]),
      tools: [step],
      hooks: {
        beforeToolCall: ({ callId, name, input }) =>
          void seen.push(`before ${callId} ${name} ${JSON.stringify(input)}`),
        afterToolCall: ({ callId, result, isError }) =>
          void seen.push(`after ${callId} ${String(result.content)} ${isError}`),
        onToolResult: ({ callId, result }) =>
          void seen.push(`onResult ${callId} ${String(result.content)}`),
      },
    });
    await agent.run("go");
    expect(seen).toEqual([
      'before x step {"id":"x"}',
      'before y step {"id":"y"}',
      "after x r-x false",
      "onResult x r-x",
      "after y r-y false",
      "onResult y r-y",
    ]);
  });
});
