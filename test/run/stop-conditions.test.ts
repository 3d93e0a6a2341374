import { createBareAgent, type ToolResult, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { resultText, toolResultsOf } from "../support/results.ts";
import { Gates } from "./helpers.ts";

/** A tool that returns whatever result the call asks for, after the test releases it. */
function returning(gates?: Gates) {
  return tool(
    "give",
    "Returns a prepared result",
    z.object({ id: z.string(), result: z.any() }),
    async ({ id, result }) => {
      await gates?.pass(id);
      return result as ToolResult;
    },
    { isConcurrencySafe: () => true },
  );
}

describe("a text-only answer", () => {
  it("ends the run with subtype success and the text as result", async () => {
    const model = scriptedModel([{ text: "The answer is 42." }]);
    const result = await createBareAgent({ model }).run("question");
    expect(result).toMatchObject({
      type: "result",
      subtype: "success",
      result: "The answer is 42.",
      isError: false,
      numTurns: 1,
    });
    expect(result.messages).toEqual([
      { role: "user", content: "question" },
      { role: "assistant", content: [{ type: "text", text: "The answer is 42." }] },
    ]);
  });
});

describe("endTurn", () => {
  it("ends after the whole batch: the other calls complete and enter the transcript, no further model call", async () => {
    const gates = new Gates();
    const model = scriptedModel([
      {
        toolCalls: [
          {
            id: "finish",
            name: "give",
            input: {
              id: "finish",
              result: { content: "final answer", endTurn: true, structuredResult: { score: 7 } },
            },
          },
          { id: "slow", name: "give", input: { id: "slow", result: "slow result" } },
        ],
      },
      { text: "never asked" },
    ]);
    const run = createBareAgent({ model, tools: [returning(gates)] }).run("go");
    await gates.started("finish", "slow");
    await gates.finish("finish");
    await gates.finish("slow");
    const result = await run;
    expect(model.requests).toHaveLength(1);
    expect(result.subtype).toBe("success");
    expect(result.isError).toBe(false);
    expect(result.result).toBe("final answer");
    expect(result.structuredResult).toEqual({ score: 7 });
    const blocks = toolResultsOf(result.messages.at(-1));
    expect(blocks.map((block) => [block.tool_use_id, resultText(block)])).toEqual([
      ["finish", "final answer"],
      ["slow", "slow result"],
    ]);
  });

  it("takes the first result in call order, not the first to finish, when several set endTurn", async () => {
    const gates = new Gates();
    const model = scriptedModel([
      {
        toolCalls: [
          {
            id: "one",
            name: "give",
            input: { id: "one", result: { content: "first", endTurn: true } },
          },
          {
            id: "two",
            name: "give",
            input: { id: "two", result: { content: "second", endTurn: true, structuredResult: 2 } },
          },
        ],
      },
    ]);
    const run = createBareAgent({ model, tools: [returning(gates)] }).run("go");
    await gates.started("one", "two");
    await gates.finish("two");
    await gates.finish("one");
    const result = await run;
    expect(result.result).toBe("first");
    expect(result.structuredResult).toBeUndefined();
    expect(model.requests).toHaveLength(1);
  });

  it("joins the text blocks of an endTurn result that returns content blocks", async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          {
            id: "f",
            name: "give",
            input: {
              id: "f",
              result: {
                content: [
                  { type: "text", text: "part one, " },
                  { type: "text", text: "part two" },
                ],
                endTurn: true,
              },
            },
          },
        ],
      },
    ]);
    const result = await createBareAgent({ model, tools: [returning()] }).run("go");
    expect(result.result).toBe("part one, part two");
  });

  it("ignores structuredResult without endTurn: the run goes on", async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          {
            id: "s",
            name: "give",
            input: { id: "s", result: { content: "x", structuredResult: 1 } },
          },
        ],
      },
      { text: "carried on" },
    ]);
    const result = await createBareAgent({ model, tools: [returning()] }).run("go");
    expect(model.requests).toHaveLength(2);
    expect(result.result).toBe("carried on");
    expect(result.structuredResult).toBeUndefined();
    expect("structuredResult" in result).toBe(false);
  });
});

describe("terminate", () => {
  it("stops after the batch when every result sets it", async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "a", name: "give", input: { id: "a", result: { content: "A", terminate: true } } },
          { id: "b", name: "give", input: { id: "b", result: { content: "B", terminate: true } } },
        ],
      },
      { text: "never asked" },
    ]);
    const result = await createBareAgent({ model, tools: [returning()] }).run("go");
    expect(model.requests).toHaveLength(1);
    expect(result.subtype).toBe("success");
    expect(result.isError).toBe(false);
    expect(result.result).toBe("A");
    expect(toolResultsOf(result.messages.at(-1)).map((block) => block.tool_use_id)).toEqual([
      "a",
      "b",
    ]);
  });

  it("does not stop when only some results set it", async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "a", name: "give", input: { id: "a", result: { content: "A", terminate: true } } },
          { id: "b", name: "give", input: { id: "b", result: "B" } },
        ],
      },
      { text: "went on" },
    ]);
    const result = await createBareAgent({ model, tools: [returning()] }).run("go");
    expect(model.requests).toHaveLength(2);
    expect(result.result).toBe("went on");
  });

  it("does not stop when a call that failed sits beside the terminating ones", async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "a", name: "give", input: { id: "a", result: { content: "A", terminate: true } } },
          { id: "b", name: "missing_tool", input: {} },
        ],
      },
      { text: "went on" },
    ]);
    const result = await createBareAgent({ model, tools: [returning()] }).run("go");
    expect(model.requests).toHaveLength(2);
    expect(result.subtype).toBe("success");
  });
});
