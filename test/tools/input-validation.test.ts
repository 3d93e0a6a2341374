import { defineTool, tool } from "skein";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { issueLine, runCall, runCalls, textOfBlock } from "./harness.ts";

const person = z.object({
  name: z.string(),
  email: z.string(),
  age: z.number().int(),
  address: z.object({ zip: z.string(), geo: z.object({ lat: z.number() }) }),
  tags: z.array(z.string()),
  flags: z.array(z.object({ on: z.boolean() })),
  "odd key": z.number(),
});

function countingTool() {
  const counter = { calls: 0 };
  const definition = tool("save_person", "Saves a person", person, () => {
    counter.calls++;
    return "saved";
  });
  return { definition, counter };
}

describe("a validation failure", () => {
  it("is one error result naming every bad field path, what was expected and what was received", async () => {
    const { definition, counter } = countingTool();
    const run = await runCall(definition, {
      name: 1,
      age: "old",
      address: { zip: 12345, geo: { lat: "north" } },
      tags: ["ok", 2],
      flags: [{ on: "maybe" }],
      "odd key": "z",
    });
    expect(counter.calls).toBe(0);
    expect(run.toolResults).toHaveLength(1);
    expect(run.toolResults[0]?.is_error).toBe(true);
    const text = textOfBlock(run.toolResults[0]);
    expect(text.split("\n")[0]).toBe('Invalid input for tool "save_person":');
    expect(issueLine(text, "name")).toMatch(/expected string; received number 1$/);
    expect(issueLine(text, "email")).toMatch(/required field is missing.*string/);
    expect(issueLine(text, "age")).toMatch(/number.*; received string "old"$/);
    expect(issueLine(text, "address.zip")).toMatch(/expected string; received number 12345$/);
    expect(issueLine(text, "address.geo.lat")).toMatch(/expected number; received string "north"$/);
    expect(issueLine(text, "tags[1]")).toMatch(/expected string; received number 2$/);
    expect(issueLine(text, "flags[0].on")).toMatch(/expected boolean; received string "maybe"$/);
    expect(issueLine(text, '["odd key"]')).toMatch(/expected number; received string "z"$/);
    expect(text.split("\n").filter((line) => line.startsWith("- "))).toHaveLength(8);
  });

  it("reports only what is still wrong after coercion", async () => {
    const { definition, counter } = countingTool();
    const run = await runCall(definition, {
      name: "Ada",
      email: "ada@example.com",
      age: "36",
      address: { zip: "N1", geo: { lat: "51.5" } },
      tags: [],
      flags: [{ on: "true" }],
      "odd key": 7,
      extraIgnoredByZod: true,
    });
    expect(counter.calls).toBe(1);
    expect(run.toolResults[0]?.is_error).toBe(false);

    const stillWrong = await runCall(definition, {
      name: 5,
      email: "a@b.c",
      age: "36",
      address: { zip: "N1", geo: { lat: 1 } },
      tags: [],
      flags: [],
      "odd key": 1,
    });
    const text = textOfBlock(stillWrong.toolResults[0]);
    expect(text.split("\n").filter((line) => line.startsWith("- "))).toEqual([
      "- name: expected string; received number 5",
    ]);
    expect(counter.calls).toBe(1);
  });

  it("names the unknown keys a strict Zod object refuses", async () => {
    let calls = 0;
    const strict = tool("strict", "Strict", z.strictObject({ a: z.number() }), () => {
      calls++;
      return "ran";
    });
    const run = await runCall(strict, { a: 1, b: 2, c: 3 });
    expect(calls).toBe(0);
    expect(run.toolResults[0]?.is_error).toBe(true);
    const text = textOfBlock(run.toolResults[0]);
    expect(text).toContain('"b"');
    expect(text).toContain('"c"');
  });

  it("is visible to the app: tool_start and tool_end are emitted, with the issues in details", async () => {
    const { definition } = countingTool();
    const run = await runCall(definition, { name: 1 });
    const toolEvents = run.events.filter((event) => event.type.startsWith("tool_"));
    expect(toolEvents.map((event) => event.type)).toEqual(["tool_start", "tool_end"]);
    expect(run.toolEnds[0]).toMatchObject({
      callId: "call_1",
      name: "save_person",
      isError: true,
      details: { reason: "invalid_input" },
    });
    const details = run.toolEnds[0]?.details as { issues: { path: unknown[] }[] };
    expect(details.issues.map((issue) => issue.path)).toEqual([
      ["name"],
      ["email"],
      ["age"],
      ["address"],
      ["tags"],
      ["flags"],
      ["odd key"],
    ]);
    expect(run.result.steps[0]?.toolCalls[0]?.isError).toBe(true);
  });

  it("does not end the run: the model gets the error and answers", async () => {
    const { definition } = countingTool();
    const run = await runCall(definition, { name: 1 });
    expect(run.result.subtype).toBe("success");
    expect(run.result.result).toBe("done");
    expect(run.model.requests).toHaveLength(2);
  });

  it("of one call leaves the other calls of the batch alone", async () => {
    const { definition, counter } = countingTool();
    const echo = tool("echo", "Echoes", z.object({ text: z.string() }), ({ text }) => text);
    const run = await runCalls(
      [definition, echo],
      [
        { id: "a", name: "echo", input: { text: "first" } },
        { id: "b", name: "save_person", input: {} },
        { id: "c", name: "echo", input: { text: "last" } },
      ],
    );
    expect(counter.calls).toBe(0);
    expect(run.toolResults.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ["a", false],
      ["b", true],
      ["c", false],
    ]);
    expect(textOfBlock(run.toolResults[2])).toBe("last");
  });
});

describe("input that is not an object", () => {
  const cases: [string, unknown, RegExp][] = [
    ["a string", "Tokyo", /received the string "Tokyo"/],
    ["an array", ["Tokyo"], /received an array/],
    ["null", null, /received null/],
    ["a number", 3, /received a number/],
  ];

  it.each(cases)("%s gets a clear error from tool()", async (_label, input, received) => {
    let calls = 0;
    const weather = tool("get_weather", "Weather", z.object({ city: z.string() }), () => {
      calls++;
      return "sunny";
    });
    const run = await runCall(weather, input);
    expect(calls).toBe(0);
    expect(run.toolResults[0]?.is_error).toBe(true);
    const text = textOfBlock(run.toolResults[0]);
    expect(text).toMatch(/^Invalid input for tool "get_weather": the input must be a JSON object/);
    expect(text).toMatch(received);
  });

  it.each(cases)(
    "%s gets a clear error from a defineTool() without parameters",
    async (_label, input, received) => {
      let calls = 0;
      const anything = defineTool({
        id: "anything",
        execute: () => {
          calls++;
          return "ran";
        },
      });
      const run = await runCall(anything, input);
      expect(calls).toBe(0);
      expect(run.toolResults[0]?.is_error).toBe(true);
      expect(textOfBlock(run.toolResults[0])).toMatch(/the input must be a JSON object/);
      expect(textOfBlock(run.toolResults[0])).toMatch(received);
    },
  );
});

describe("an unknown tool", () => {
  it('gets "does not exist" with the available tools, and nothing runs', async () => {
    const echo = tool("echo", "Echoes", z.object({}), () => "x");
    const run = await runCalls([echo], [{ id: "x", name: "ech0", input: {} }]);
    expect(run.toolResults).toEqual([
      {
        type: "tool_result",
        tool_use_id: "x",
        content: 'Tool "ech0" does not exist. Available tools: echo.',
        is_error: true,
      },
    ]);
  });
});
