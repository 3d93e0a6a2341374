import { defineTool } from "skein";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { issueLine, runCall, textOfBlock } from "./harness.ts";

describe("defineTool() validator", () => {
  const parameters = {
    type: "object",
    properties: { count: { type: "integer" } },
    required: ["count"],
  };

  it("a function: its return value is the input; parameters are checked (and coerced) first", async () => {
    const validatorSaw: unknown[] = [];
    const executeSaw: unknown[] = [];
    const doubled = defineTool({
      id: "doubled",
      parameters,
      validator: (value: unknown) => {
        validatorSaw.push(value);
        return { count: (value as { count: number }).count * 2 };
      },
      execute: (input: { count: number }) => {
        executeSaw.push(input);
        return String(input.count);
      },
    });
    const run = await runCall(doubled, { count: "4" });
    expect(validatorSaw).toEqual([{ count: 4 }]);
    expect(executeSaw).toEqual([{ count: 8 }]);
    expect(textOfBlock(run.toolResults[0])).toBe("8");
  });

  it("a function that returns true keeps the input, false or a throw rejects it", async () => {
    const executed: unknown[] = [];
    const make = (validator: (value: unknown) => unknown) =>
      defineTool({
        id: "checked",
        validator: validator as (value: unknown) => boolean,
        execute: (input: unknown) => {
          executed.push(input);
          return "ran";
        },
      });
    const kept = await runCall(
      make(() => true),
      { a: 1 },
    );
    expect(kept.toolResults[0]?.is_error).toBe(false);
    expect(executed).toEqual([{ a: 1 }]);

    const refused = await runCall(
      make(() => false),
      { a: 1 },
    );
    expect(refused.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(refused.toolResults[0])).toMatch(/rejected by the tool's validator/);

    const threw = await runCall(
      make(() => {
        throw new Error("a must be even");
      }),
      { a: 1 },
    );
    expect(threw.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(threw.toolResults[0])).toMatch(/a must be even/);
    expect(executed).toHaveLength(1);
  });

  it("an object with parse(): its return is the input, a throw rejects", async () => {
    const executed: unknown[] = [];
    const parser = {
      parse(value: unknown) {
        const { name } = value as { name?: unknown };
        if (typeof name !== "string") throw new Error("name must be a string");
        return { name: name.toUpperCase() };
      },
    };
    const shout = defineTool({
      id: "shout",
      validator: parser,
      execute: (input) => {
        executed.push(input);
        return input.name;
      },
    });
    const ok = await runCall(shout, { name: "hey" });
    expect(textOfBlock(ok.toolResults[0])).toBe("HEY");
    const bad = await runCall(shout, { name: 1 });
    expect(bad.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(bad.toolResults[0])).toMatch(/name must be a string/);
    expect(executed).toEqual([{ name: "HEY" }]);
  });

  it("an object with safeParse(): data is the input, success: false rejects with its error", async () => {
    const executed: unknown[] = [];
    const safe = {
      safeParse(value: unknown) {
        const { n } = value as { n?: unknown };
        return typeof n === "number"
          ? { success: true, data: { n: n + 1 } }
          : { success: false, error: new Error("n must be a number") };
      },
    };
    const increment = defineTool({
      id: "increment",
      validator: safe,
      execute: (input: { n: number }) => {
        executed.push(input);
        return String(input.n);
      },
    });
    expect(textOfBlock((await runCall(increment, { n: 1 })).toolResults[0])).toBe("2");
    const bad = await runCall(increment, { n: "x" });
    expect(bad.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(bad.toolResults[0])).toMatch(/n must be a number/);
    expect(executed).toEqual([{ n: 2 }]);
  });

  it("a Zod schema: the model sees its JSON Schema, input is coerced, and every bad path is named", async () => {
    let calls = 0;
    const search = defineTool({
      id: "search_docs",
      validator: z.object({ query: z.string().min(1), limit: z.number().int().max(50) }),
      execute: ({ query, limit }) => {
        calls++;
        return `${query}:${limit}`;
      },
    });
    expect(search.inputSchema).toMatchObject({
      type: "object",
      properties: { query: { type: "string", minLength: 1 }, limit: { type: "integer" } },
      required: ["query", "limit"],
    });
    const ok = await runCall(search, { query: "tools", limit: "10" });
    expect(textOfBlock(ok.toolResults[0])).toBe("tools:10");
    const bad = await runCall(search, { query: "", limit: 99 });
    const text = textOfBlock(bad.toolResults[0]);
    expect(issueLine(text, "query")).toMatch(/""/);
    expect(issueLine(text, "limit")).toMatch(/50.*99/);
    expect(calls).toBe(1);
  });

  it("parameters and a validator together: parameters are what the model sees, both must pass", async () => {
    const executed: unknown[] = [];
    const ranged = defineTool({
      id: "ranged",
      parameters,
      validator: z.object({ count: z.number().max(10) }),
      execute: (input) => {
        executed.push(input);
        return "ok";
      },
    });
    expect(ranged.inputSchema).toEqual(parameters);
    const tooBig = await runCall(ranged, { count: 11 });
    expect(tooBig.toolResults[0]?.is_error).toBe(true);
    expect(issueLine(textOfBlock(tooBig.toolResults[0]), "count")).toMatch(/10/);
    const notInteger = await runCall(ranged, { count: 1.5 });
    expect(issueLine(textOfBlock(notInteger.toolResults[0]), "count")).toMatch(/integer.*1\.5/);
    await runCall(ranged, { count: "3" });
    expect(executed).toEqual([{ count: 3 }]);
  });

  it("refuses at assembly a validator that is none of the accepted forms", () => {
    expect(() =>
      defineTool({ id: "v", validator: { check: () => true } as never, execute: () => "x" }),
    ).toThrow(
      /defineTool\("v"\): validator must be a function, or an object with parse\(\) or safeParse\(\)/,
    );
  });
});
