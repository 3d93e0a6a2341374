import { createBareAgent, type Model, type ModelStreamEvent, type ToolContext, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  expectValidTranscript,
  resultText,
  toolResultsOf,
  toolUseIds,
} from "../support/results.ts";
import { collect, labels } from "./helpers.ts";

function counter() {
  const runs: number[] = [];
  const count = tool("count", "Count", z.object({ n: z.number() }), async ({ n }) => {
    runs.push(n);
    return `counted ${n}`;
  });
  return { runs, count };
}

describe("a repeated call id", () => {
  it("within one message: the repeat is renamed <id>~2, answered with an error, never run", async () => {
    const { runs, count } = counter();
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "dup", name: "count", input: { n: 1 } },
          { id: "dup", name: "count", input: { n: 2 } },
        ],
      },
      { text: "ok" },
    ]);
    const { events, result } = await collect(
      createBareAgent({ model, tools: [count] }).stream("go"),
    );
    expect(runs).toEqual([1]);
    expect(toolUseIds(result.messages[1])).toEqual(["dup", "dup~2"]);
    const blocks = toolResultsOf(result.messages[2]);
    expect(blocks.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ["dup", false],
      ["dup~2", true],
    ]);
    expect(resultText(blocks[1])).toContain("dup");
    expectValidTranscript(result.messages);
    expect(labels(events).filter((entry) => entry.startsWith("tool_"))).toEqual([
      "tool_start:dup",
      "tool_start:dup~2",
      "tool_end:dup",
      "tool_end:dup~2",
    ]);
    // The model is sent the renamed id, so its transcript stays valid.
    expect(toolUseIds(model.requests[1]!.messages[1])).toEqual(["dup", "dup~2"]);
  });

  it("across turns: a model replaying its previous message verbatim never runs a call twice (B12)", async () => {
    const { runs, count } = counter();
    const turn = {
      toolCalls: [
        { id: "a", name: "count", input: { n: 1 } },
        { id: "b", name: "count", input: { n: 2 } },
      ],
    };
    const model = scriptedModel([turn, turn, { text: "ok" }]);
    const result = await createBareAgent({ model, tools: [count] }).run("go");
    expect(runs).toEqual([1, 2]);
    expect(toolUseIds(result.messages[3])).toEqual(["a~2", "b~2"]);
    expect(toolResultsOf(result.messages[4]).map((block) => block.is_error)).toEqual([true, true]);
    expectValidTranscript(result.messages);
  });

  it("a third repeat becomes <id>~3", async () => {
    const { runs, count } = counter();
    const call = { id: "same", name: "count", input: { n: 1 } };
    const model = scriptedModel([{ toolCalls: [call, call, call] }, { text: "ok" }]);
    const result = await createBareAgent({ model, tools: [count] }).run("go");
    expect(runs).toEqual([1]);
    expect(toolUseIds(result.messages[1])).toEqual(["same", "same~2", "same~3"]);
    expectValidTranscript(result.messages);
  });

  it("does not collide with an id the model already used in the form <id>~2", async () => {
    const { runs, count } = counter();
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "x~2", name: "count", input: { n: 1 } },
          { id: "x", name: "count", input: { n: 2 } },
          { id: "x", name: "count", input: { n: 3 } },
        ],
      },
      { text: "ok" },
    ]);
    const result = await createBareAgent({ model, tools: [count] }).run("go");
    expect(runs).toEqual([1, 2]);
    const ids = toolUseIds(result.messages[1]);
    expect(ids.slice(0, 2)).toEqual(["x~2", "x"]);
    expect(new Set(ids).size).toBe(3);
    expectValidTranscript(result.messages);
  });
});

describe("a call without an id", () => {
  it("gets a fresh id, runs, and is answered under that id", async () => {
    const { runs, count } = counter();
    let turn = 0;
    const model: Model = {
      provider: "test",
      modelId: "no-ids",
      async *stream(): AsyncGenerator<ModelStreamEvent> {
        turn++;
        if (turn === 1) {
          yield {
            type: "message",
            stopReason: "tool_use",
            message: {
              role: "assistant",
              content: [
                { type: "tool_use", id: "", name: "count", input: { n: 1 } },
                { type: "tool_use", name: "count", input: { n: 2 } } as never,
              ],
            },
          };
        } else {
          yield {
            type: "message",
            stopReason: "end_turn",
            message: { role: "assistant", content: [{ type: "text", text: "ok" }] },
          };
        }
      },
    };
    const result = await createBareAgent({ model, tools: [count] }).run("go");
    expect(runs).toEqual([1, 2]);
    const ids = toolUseIds(result.messages[1]);
    expect(ids).toHaveLength(2);
    for (const id of ids) expect(id).toMatch(/\S/);
    expect(new Set(ids).size).toBe(2);
    expectValidTranscript(result.messages);
  });
});

describe("progress after a call ended", () => {
  it("is dropped: no tool_update after that call's tool_end", async () => {
    let saved: ToolContext | undefined;
    const leaky = tool("leaky", "Keeps its context", z.object({}), async (_input, ctx) => {
      saved = ctx;
      ctx.update("during");
      return "returned";
    });
    const model = scriptedModel((_request, index) => {
      if (index === 0) return { toolCalls: [{ id: "l", name: "leaky", input: {} }] };
      saved!.update("after the end");
      saved!.emit({ type: "app.late", id: "l" });
      return { text: "ok" };
    });
    const { events, result } = await collect(
      createBareAgent({ model, tools: [leaky] }).stream("go"),
    );
    expect(labels(events)).toEqual([
      "run_start",
      "turn_start",
      // Eager execution: the call is prepared as its block completes, before the reply is.
      "tool_start:l",
      "message",
      "tool_update:l",
      "tool_end:l",
      "turn_end",
      "turn_start",
      "text_delta",
      "message",
      "turn_end",
      "result",
    ]);
    expect(result.steps[0]!.toolCalls[0]!.preliminaryResults).toEqual(["during"]);
  });
});
