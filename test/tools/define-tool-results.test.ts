import { defineTool } from "skein";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { runCall, textOfBlock } from "./harness.ts";

describe("defineTool() results", () => {
  it.each([
    ["a string, as is", "plain", "plain"],
    ["an object, as JSON", { id: "T-1", tags: ["a"] }, '{"id":"T-1","tags":["a"]}'],
    ["an array, as JSON", [1, 2], "[1,2]"],
    ["a number, as JSON", 42, "42"],
    ["a boolean, as JSON", false, "false"],
    ["null, as JSON", null, "null"],
    ["a string that looks like JSON, as is", '{"a":1}', '{"a":1}'],
  ])("%s", async (_label, value, text) => {
    const produce = defineTool({ id: "produce", execute: () => value });
    const run = await runCall(produce, {});
    expect(run.toolResults).toEqual([
      { type: "tool_result", tool_use_id: "call_1", content: text, is_error: false },
    ]);
  });

  it.each([
    ["a BigInt", { size: 10n }, /could not be serialised to JSON.*BigInt/i],
    [
      "a circular object",
      (() => {
        const node: Record<string, unknown> = {};
        node.self = node;
        return node;
      })(),
      /could not be serialised to JSON.*circular/i,
    ],
    ["a function", () => 1, /no JSON form/],
  ])("%s becomes an error result", async (_label, value, message) => {
    const produce = defineTool({ id: "produce", execute: () => value });
    const run = await runCall(produce, {});
    expect(run.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(run.toolResults[0])).toMatch(message);
  });

  it("outputSchema rejects a bad result after execute ran, naming the field", async () => {
    let calls = 0;
    const index = defineTool({
      id: "index",
      outputSchema: z.object({ indexed: z.number() }),
      execute: () => {
        calls++;
        return { indexed: "many" };
      },
    });
    const run = await runCall(index, {});
    expect(calls).toBe(1);
    expect(run.toolResults[0]?.is_error).toBe(true);
    const text = textOfBlock(run.toolResults[0]);
    expect(text).toMatch(/^Tool "index" returned a result skein cannot use: .*outputSchema/);
    expect(text).toMatch(/indexed: .*number/);
  });

  it("outputSchema that accepts: its parsed value is what the model gets", async () => {
    const index = defineTool({
      id: "index",
      outputSchema: z.object({ indexed: z.number() }),
      execute: () => ({ indexed: 3, internal: "dropped by the schema" }),
    });
    const run = await runCall(index, {});
    expect(run.toolResults[0]).toEqual({
      type: "tool_result",
      tool_use_id: "call_1",
      content: '{"indexed":3}',
      is_error: false,
    });
  });

  it("an async generator (seed 003): yields are preliminary results, the return is the JSON result", async () => {
    const indexRepository = defineTool({
      id: "index-repository",
      async *execute(_input: { path: string }) {
        yield { phase: "scan" };
        yield { phase: "embed" };
        return { indexed: 248 };
      },
    });
    const run = await runCall(indexRepository, { path: "." });
    expect(run.updates.map((event) => event.update)).toEqual([
      { phase: "scan" },
      { phase: "embed" },
    ]);
    expect(run.result.steps[0]?.toolCalls[0]).toEqual({
      callId: "call_1",
      name: "index-repository",
      input: { path: "." },
      result: { content: '{"indexed":248}' },
      isError: false,
      preliminaryResults: [{ phase: "scan" }, { phase: "embed" }],
    });
  });
});
