import { createBareAgent, defineTool, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { runCalls, textOfBlock } from "./harness.ts";

const PROTOTYPE_NAMES = ["toString", "constructor", "hasOwnProperty", "__proto__", "valueOf"];

describe("tools named like Object.prototype members are ordinary tools", () => {
  it.each(PROTOTYPE_NAMES)("%s: defined, listed for the model, called, answered", async (name) => {
    const seen: unknown[] = [];
    const definition = tool(name, `The ${name} tool`, z.object({ n: z.number() }), (input) => {
      seen.push(input);
      return `${name} got ${input.n}`;
    });
    expect(definition.name).toBe(name);
    expect(Object.hasOwn(definition, "name")).toBe(true);

    const run = await runCalls([definition], [{ id: "c1", name, input: { n: "2" } }]);
    expect(run.model.requests[0]?.tools.map((spec) => spec.name)).toEqual([name]);
    expect(seen).toEqual([{ n: 2 }]);
    expect(run.toolResults).toEqual([
      { type: "tool_result", tool_use_id: "c1", content: `${name} got 2`, is_error: false },
    ]);
    expect(run.toolEnds.map((event) => event.name)).toEqual([name]);
  });

  it("all of them side by side in one agent, each reaching its own handler", async () => {
    const tools = PROTOTYPE_NAMES.map((name) =>
      defineTool({ id: name, execute: () => `from ${name}` }),
    );
    const run = await runCalls(
      tools,
      PROTOTYPE_NAMES.map((name, index) => ({ id: `c${index}`, name, input: {} })),
    );
    expect(run.toolResults.map((block) => textOfBlock(block))).toEqual(
      PROTOTYPE_NAMES.map((name) => `from ${name}`),
    );
    expect(run.toolResults.every((block) => block.is_error === false)).toBe(true);
  });

  it("duplicates among them are caught like any other duplicate", () => {
    const a = tool("__proto__", "a", z.object({}), () => "a");
    const b = tool("__proto__", "b", z.object({}), () => "b");
    expect(() => createBareAgent({ model: scriptedModel([]), tools: [a, b] })).toThrow(
      /two tools are named "__proto__"/,
    );
  });
});

describe("a call to a prototype member name that is no tool", () => {
  it.each(PROTOTYPE_NAMES)('%s gets "does not exist", never a prototype method', async (name) => {
    const echo = tool("echo", "Echoes", z.object({}), () => "echo");
    const run = await runCalls([echo], [{ id: "c1", name, input: {} }]);
    expect(run.toolResults).toEqual([
      {
        type: "tool_result",
        tool_use_id: "c1",
        content: `Tool "${name}" does not exist. Available tools: echo.`,
        is_error: true,
      },
    ]);
    expect(run.toolEnds[0]).toMatchObject({ name, isError: true });
    expect(run.result.subtype).toBe("success");
  });

  it("with no tools at all, the answer says none are available", async () => {
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "toString", input: {} }] },
      { text: "ok" },
    ]);
    const result = await createBareAgent({ model }).run("go");
    expect(result.messages[2]?.content).toEqual([
      {
        type: "tool_result",
        tool_use_id: "c1",
        content: 'Tool "toString" does not exist. Available tools: none.',
        is_error: true,
      },
    ]);
  });

  it("allowedTools naming a prototype member does not conjure a tool", async () => {
    const echo = tool("echo", "Echoes", z.object({}), () => "echo");
    const run = await runCalls([echo], [{ id: "c1", name: "constructor", input: {} }], {
      agent: { allowedTools: ["echo", "constructor"] },
    });
    expect(run.model.requests[0]?.tools.map((spec) => spec.name)).toEqual(["echo"]);
    expect(textOfBlock(run.toolResults[0])).toBe(
      'Tool "constructor" does not exist. Available tools: echo.',
    );
  });
});
