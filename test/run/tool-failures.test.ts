import { createBareAgent, defineTool, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { expectValidTranscript, resultText, toolResultsOf } from "../support/results.ts";
import { Gates } from "./helpers.ts";

/** Runs one batch of calls and returns the tool_result blocks the model got next, and the result. */
async function batch(
  tools: Parameters<typeof createBareAgent>[0]["tools"],
  calls: { id: string; name: string; input: unknown }[],
  options: Omit<Parameters<typeof createBareAgent>[0], "model" | "tools"> = {},
) {
  const model = scriptedModel([{ toolCalls: calls }, { text: "carried on" }]);
  const result = await createBareAgent({ model, tools, ...options }).run("go");
  expect(result.subtype).toBe("success");
  expect(result.result).toBe("carried on");
  expectValidTranscript(result.messages);
  return { blocks: toolResultsOf(model.requests[1]!.messages.at(-1)), result };
}

const hostile = new Proxy(
  {},
  {
    get() {
      throw new Error("getter trap");
    },
    getPrototypeOf() {
      throw new Error("prototype trap");
    },
    ownKeys() {
      throw new Error("keys trap");
    },
  },
);

describe("a handler that throws (B1)", () => {
  const thrown: [string, () => unknown][] = [
    ["an Error", () => new Error("disk on fire")],
    ["a string", () => "plain string failure"],
    ["undefined", () => undefined],
    ["null", () => null],
    ["a hostile Proxy", () => hostile],
    ["an object without message", () => ({ code: 42 })],
  ];
  for (const [what, value] of thrown) {
    it(`gives exactly one is_error result for ${what}, without a stack, and the loop goes on`, async () => {
      const bad = tool("bad", "Throws", z.object({}), async () => {
        throw value();
      });
      const { blocks } = await batch([bad], [{ id: "x", name: "bad", input: {} }]);
      expect(blocks).toHaveLength(1);
      expect(blocks[0]!.is_error).toBe(true);
      const text = resultText(blocks[0]);
      expect(text).toContain('"bad"');
      expect(text).not.toMatch(/\n\s+at /);
      expect(text).not.toContain(process.cwd());
    });
  }

  it("carries the Error's message and a string's text to the model", async () => {
    const error = tool("error", "E", z.object({}), async () => {
      throw new Error("disk on fire");
    });
    const text = tool("text", "T", z.object({}), () => {
      throw "plain string failure";
    });
    const { blocks } = await batch(
      [error, text],
      [
        { id: "e", name: "error", input: {} },
        { id: "t", name: "text", input: {} },
      ],
    );
    expect(resultText(blocks[0])).toContain("disk on fire");
    expect(resultText(blocks[1])).toContain("plain string failure");
  });

  it("keeps the successful results of the same batch, in call order (B11)", async () => {
    const gates = new Gates();
    const work = tool(
      "work",
      "Work",
      z.object({ id: z.string(), fail: z.boolean() }),
      async ({ id, fail }) => {
        await gates.pass(id);
        if (fail) throw new Error(`${id} failed`);
        return `${id} ok`;
      },
      { isConcurrencySafe: () => true },
    );
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "a", name: "work", input: { id: "a", fail: false } },
          { id: "b", name: "work", input: { id: "b", fail: true } },
          { id: "c", name: "work", input: { id: "c", fail: false } },
        ],
      },
      { text: "ok" },
    ]);
    const run = createBareAgent({ model, tools: [work] }).run("go");
    await gates.started("a", "b", "c");
    await gates.finish("b");
    await gates.finish("c");
    await gates.finish("a");
    await run;
    const blocks = toolResultsOf(model.requests[1]!.messages.at(-1));
    expect(blocks.map((block) => [block.tool_use_id, resultText(block), block.is_error])).toEqual([
      ["a", "a ok", false],
      ["b", 'Tool "work" failed: b failed', true],
      ["c", "c ok", false],
    ]);
  });

  it("turns a synchronous throw and a rejected generator into error results too", async () => {
    const sync = tool("sync", "S", z.object({}), () => {
      throw new Error("sync");
    });
    const generator = tool("gen", "G", z.object({}), async function* () {
      yield "step";
      throw new Error("generator broke");
    });
    const { blocks, result } = await batch(
      [sync, generator],
      [
        { id: "s", name: "sync", input: {} },
        { id: "g", name: "gen", input: {} },
      ],
    );
    expect(blocks.map((block) => block.is_error)).toEqual([true, true]);
    expect(resultText(blocks[1])).toContain("generator broke");
    expect(result.steps[0]!.toolCalls[1]!.preliminaryResults).toEqual(["step"]);
  });
});

describe("values a tool cannot send (B5)", () => {
  const circular: Record<string, unknown> = {};
  circular.self = circular;
  const values: [string, () => unknown][] = [
    ["a circular object", () => circular],
    ["a BigInt", () => 10n],
    ["a function", () => () => 1],
    ["a Symbol", () => Symbol("s")],
  ];
  for (const [what, value] of values) {
    it(`defineTool returning ${what} gives an error result and the run goes on`, async () => {
      const odd = defineTool({ id: "odd", execute: async () => value() });
      const { blocks } = await batch([odd], [{ id: "o", name: "odd", input: {} }]);
      expect(blocks[0]!.is_error).toBe(true);
      expect(resultText(blocks[0])).toContain("odd");
    });
  }

  it("defineTool returning a Buffer sends a safe string", async () => {
    const buffer = defineTool({ id: "buffer", execute: async () => Buffer.from("hi") });
    const { blocks } = await batch([buffer], [{ id: "b", name: "buffer", input: {} }]);
    expect(blocks[0]!.is_error).toBe(false);
    expect(typeof blocks[0]!.content).toBe("string");
  });

  it("tool() returning something that is not a string, blocks or a ToolResult says what was expected", async () => {
    const wrong = tool("wrong", "W", z.object({}), async () => ({ answer: 1 }) as never);
    const { blocks } = await batch([wrong], [{ id: "w", name: "wrong", input: {} }]);
    expect(blocks[0]!.is_error).toBe(true);
    expect(resultText(blocks[0])).toMatch(/expected a string/);
  });
});

describe("calls that cannot run", () => {
  it("an unknown tool gets an error naming it, and nothing runs (B8)", async () => {
    let ran = 0;
    const known = tool("known", "K", z.object({}), async () => {
      ran++;
      return "k";
    });
    const { blocks } = await batch([known], [{ id: "u", name: "unknown_tool", input: {} }]);
    expect(ran).toBe(0);
    expect(blocks[0]!.is_error).toBe(true);
    expect(resultText(blocks[0])).toContain("unknown_tool");
    expect(resultText(blocks[0])).toContain("known");
  });

  it("a tool hidden by disallowedTools is not run (B8)", async () => {
    let ran = 0;
    const hidden = tool("hidden", "H", z.object({}), async () => {
      ran++;
      return "h";
    });
    const { blocks } = await batch([hidden], [{ id: "h", name: "hidden", input: {} }], {
      disallowedTools: ["hidden"],
    });
    expect(ran).toBe(0);
    expect(blocks[0]!.is_error).toBe(true);
  });

  for (const name of ["toString", "constructor", "__proto__", "hasOwnProperty"]) {
    it(`a call to "${name}" is an unknown tool (B9)`, async () => {
      const { blocks } = await batch([], [{ id: "p", name, input: {} }]);
      expect(blocks[0]!.is_error).toBe(true);
      expect(resultText(blocks[0])).toContain("does not exist");
    });
  }

  it("a registered tool named toString runs normally (B9)", async () => {
    const named = tool("toString", "Oddly named", z.object({}), async () => "ran");
    const { blocks } = await batch([named], [{ id: "t", name: "toString", input: {} }]);
    expect(blocks[0]).toMatchObject({ is_error: false, content: "ran" });
  });

  const nonObjects: [string, unknown][] = [
    ["a string", "{not json"],
    ["an array", [1, 2]],
    ["null", null],
    ["a number", 7],
  ];
  for (const [what, input] of nonObjects) {
    it(`input that is ${what} is an error result and the handler does not run`, async () => {
      let ran = 0;
      const strict = tool("strict", "S", z.object({ a: z.number().optional() }), async () => {
        ran++;
        return "ran";
      });
      const { blocks } = await batch([strict], [{ id: "s", name: "strict", input }]);
      expect(ran).toBe(0);
      expect(blocks[0]!.is_error).toBe(true);
      expect(resultText(blocks[0])).toContain("strict");
    });
  }

  it("input failing the schema names every bad field and does not run (B7)", async () => {
    let ran = 0;
    const typed = tool(
      "typed",
      "T",
      z.strictObject({ path: z.string(), count: z.number() }),
      async () => {
        ran++;
        return "ran";
      },
    );
    const { blocks } = await batch(
      [typed],
      [{ id: "t", name: "typed", input: { count: "many", forged: true } }],
    );
    expect(ran).toBe(0);
    expect(blocks[0]!.is_error).toBe(true);
    const text = resultText(blocks[0]);
    expect(text).toContain("path");
    expect(text).toContain("count");
    expect(text).toContain("forged");
  });

  it("a call the model did not finish is answered and never run (B6)", async () => {
    let ran = 0;
    const write = tool("write", "W", z.object({ path: z.string() }), async () => {
      ran++;
      return "written";
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "cut", name: "write", input: {} },
          { id: "whole", name: "write", input: { path: "a.txt" } },
        ],
        stopReason: "max_tokens",
        incompleteToolCalls: [{ id: "cut", name: "write", reason: "max_tokens" }],
      },
      { text: "retrying smaller" },
    ]);
    const result = await createBareAgent({ model, tools: [write] }).run("go");
    expect(ran).toBe(1);
    const blocks = toolResultsOf(model.requests[1]!.messages.at(-1));
    expect(blocks.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ["cut", true],
      ["whole", false],
    ]);
    expect(resultText(blocks[0])).toMatch(/again/i);
    expectValidTranscript(result.messages);
  });
});

describe("hooks that throw (B14)", () => {
  it("a throwing beforeToolCall denies the call, never allows it", async () => {
    let ran = 0;
    const guarded = tool("guarded", "G", z.object({}), async () => {
      ran++;
      return "ran";
    });
    const { blocks } = await batch([guarded], [{ id: "g", name: "guarded", input: {} }], {
      hooks: {
        beforeToolCall: async () => {
          throw new Error("policy service down");
        },
      },
    });
    expect(ran).toBe(0);
    expect(blocks[0]!.is_error).toBe(true);
  });

  it("a throwing onToolResult does not break execution of the other calls", async () => {
    const ok = tool("ok", "O", z.object({ n: z.number() }), async ({ n }) => `ok ${n}`);
    const { blocks } = await batch(
      [ok],
      [
        { id: "a", name: "ok", input: { n: 1 } },
        { id: "b", name: "ok", input: { n: 2 } },
      ],
      {
        hooks: {
          onToolResult: () => {
            throw hostile;
          },
        },
      },
    );
    expect(blocks.map(resultText)).toEqual(["ok 1", "ok 2"]);
  });
});

describe("a model that keeps calling an unknown tool (B8, B15)", () => {
  it("is bounded by maxTurns", async () => {
    const model = scriptedModel(() => ({ toolCalls: [{ name: "ghost", input: {} }] }));
    const result = await createBareAgent({ model, maxTurns: 4 }).run("go");
    expect(result.subtype).toBe("error_max_turns");
    expect(model.requests).toHaveLength(4);
    expectValidTranscript(result.messages);
  });
});
