/**
 * `tool_input_delta.partialInput` is parsed when it is read, not for every delta: a run whose
 * events nobody reads (`run()`) does not pay for parsing partial JSON (issue 10, section 5:
 * event work nobody uses), and a reader gets the same value each time it looks.
 */
import { type AgentEvent, createBareAgent, type Model, type ModelStreamEvent, tool } from "skein";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";

const parses = vi.hoisted(() => ({ count: 0 }));
vi.mock("partial-json", async (importOriginal) => {
  const actual = await importOriginal<typeof import("partial-json")>();
  return {
    ...actual,
    parse: (...args: Parameters<typeof actual.parse>) => {
      parses.count++;
      return actual.parse(...args);
    },
  };
});

/** One reply streaming a call's arguments in three fragments, then the final answer. */
function streamingModel(): Model {
  let call = 0;
  return {
    provider: "test",
    modelId: "test",
    async *stream(): AsyncGenerator<ModelStreamEvent> {
      if (call++ > 0) {
        yield {
          type: "message",
          message: { role: "assistant", content: [{ type: "text", text: "done" }] },
          stopReason: "end_turn",
        };
        return;
      }
      for (const delta of ['{"ci', 'ty":"Pa', 'ris"}'])
        yield { type: "tool_input_delta", id: "c1", name: "weather", delta };
      const input = { city: "Paris" };
      yield { type: "tool_call", id: "c1", name: "weather", input };
      yield {
        type: "message",
        message: {
          role: "assistant",
          content: [{ type: "tool_use", id: "c1", name: "weather", input }],
        },
        stopReason: "tool_use",
      };
    },
  };
}

const weather = tool(
  "weather",
  "The weather.",
  z.object({ city: z.string() }),
  async () => "sunny",
);

describe("tool_input_delta.partialInput", () => {
  it("is not parsed in a run nobody streams", async () => {
    parses.count = 0;
    const result = await createBareAgent({ model: streamingModel(), tools: [weather] }).run("go");
    expect(result.result).toBe("done");
    expect(parses.count).toBe(0);
  });

  it("is parsed when read, once per event, with what came so far", async () => {
    parses.count = 0;
    const deltas: Extract<AgentEvent, { type: "tool_input_delta" }>[] = [];
    for await (const event of createBareAgent({ model: streamingModel(), tools: [weather] }).stream(
      "go",
    )) {
      if (event.type === "tool_input_delta") deltas.push(event);
    }
    expect(parses.count).toBe(0);
    expect(deltas.map((event) => event.partialInput)).toEqual([
      {},
      { city: "Pa" },
      { city: "Paris" },
    ]);
    expect(deltas[2]!.partialInput).toBe(deltas[2]!.partialInput);
    expect(parses.count).toBe(3);
    expect(JSON.parse(JSON.stringify(deltas[1]))).toMatchObject({ partialInput: { city: "Pa" } });
  });
});
