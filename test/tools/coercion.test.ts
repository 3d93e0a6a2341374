import { defineTool, type JsonSchema, tool } from "skein";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { issueLine, runCall, textOfBlock } from "./harness.ts";

/** A Zod tool that records what its handler received. */
function zodRecorder<T extends z.ZodType>(schema: T) {
  const seen: unknown[] = [];
  const definition = tool("record", "Records its input", schema, (input) => {
    seen.push(input);
    return "ok";
  });
  return { definition, seen };
}

/** A defineTool that records what execute received. */
function jsonRecorder(parameters: JsonSchema) {
  const seen: unknown[] = [];
  const definition = defineTool({
    id: "record",
    parameters,
    execute: (input: unknown) => {
      seen.push(input);
      return "ok";
    },
  });
  return { definition, seen };
}

describe("coercion of strings the schema wants as numbers or booleans", () => {
  it('Zod: "3" -> 3 for number and integer, "true"/"false" -> booleans', async () => {
    const { definition, seen } = zodRecorder(
      z.object({ n: z.number(), i: z.number().int(), yes: z.boolean(), no: z.boolean() }),
    );
    const run = await runCall(definition, { n: "3.5", i: "3", yes: "true", no: "false" });
    expect(run.toolResults[0]?.is_error).toBe(false);
    expect(seen).toEqual([{ n: 3.5, i: 3, yes: true, no: false }]);
  });

  it("JSON Schema: number, integer and boolean fields, negative numbers too", async () => {
    const { definition, seen } = jsonRecorder({
      type: "object",
      properties: {
        n: { type: "number" },
        i: { type: "integer" },
        b: { type: "boolean" },
      },
      required: ["n", "i", "b"],
    });
    await runCall(definition, { n: "-0.25", i: "-7", b: "true" });
    expect(seen).toEqual([{ n: -0.25, i: -7, b: true }]);
  });

  it("leaves the transcript as the model sent it", async () => {
    const { definition } = zodRecorder(z.object({ n: z.number() }));
    const run = await runCall(definition, { n: "3" });
    expect(run.result.messages[1]?.content).toEqual([
      { type: "tool_use", id: "call_1", name: "record", input: { n: "3" } },
    ]);
  });

  it("reaches into nested objects and arrays", async () => {
    const { definition, seen } = zodRecorder(
      z.object({
        outer: z.object({ inner: z.object({ n: z.number() }) }),
        list: z.array(z.number()),
        rows: z.array(z.object({ on: z.boolean(), size: z.number().int() })),
        pair: z.tuple([z.string(), z.number()]),
      }),
    );
    const run = await runCall(definition, {
      outer: { inner: { n: "1" } },
      list: ["1", "2", 3],
      rows: [{ on: "true", size: "4" }],
      pair: ["5", "6"],
    });
    expect(run.toolResults[0]?.is_error).toBe(false);
    expect(seen).toEqual([
      {
        outer: { inner: { n: 1 } },
        list: [1, 2, 3],
        rows: [{ on: true, size: 4 }],
        pair: ["5", 6],
      },
    ]);
  });

  it("follows $ref into $defs (JSON Schema parameters)", async () => {
    const { definition, seen } = jsonRecorder({
      type: "object",
      $defs: {
        Point: {
          type: "object",
          properties: { x: { type: "number" }, y: { type: "number" } },
          required: ["x", "y"],
        },
      },
      properties: {
        origin: { $ref: "#/$defs/Point" },
        path: { type: "array", items: { $ref: "#/$defs/Point" } },
      },
      required: ["origin", "path"],
    });
    const run = await runCall(definition, {
      origin: { x: "0", y: "1" },
      path: [{ x: "2", y: 3 }],
    });
    expect(run.toolResults[0]?.is_error).toBe(false);
    expect(seen).toEqual([{ origin: { x: 0, y: 1 }, path: [{ x: 2, y: 3 }] }]);
  });

  it("follows $ref in a recursive Zod schema (emitted as $defs)", async () => {
    interface TreeNode {
      value: number;
      children: TreeNode[];
    }
    const node: z.ZodType<TreeNode> = z.object({
      value: z.number(),
      get children() {
        return z.array(node);
      },
    });
    const { definition, seen } = zodRecorder(z.object({ root: node }));
    expect(JSON.stringify(definition.inputSchema)).toContain('"$ref":"#/$defs/');
    await runCall(definition, { root: { value: "1", children: [{ value: "2", children: [] }] } });
    expect(seen).toEqual([{ root: { value: 1, children: [{ value: 2, children: [] }] } }]);
  });

  it("reaches record values (additionalProperties) and allOf parts", async () => {
    const record = zodRecorder(z.object({ scores: z.record(z.string(), z.number()) }));
    await runCall(record.definition, { scores: { ada: "3", bob: 4 } });
    expect(record.seen).toEqual([{ scores: { ada: 3, bob: 4 } }]);

    const combined = jsonRecorder({
      type: "object",
      properties: {
        both: {
          allOf: [
            { type: "object", properties: { a: { type: "number" } } },
            { type: "object", properties: { b: { type: "boolean" } } },
          ],
        },
      },
    });
    await runCall(combined.definition, { both: { a: "2", b: "false" } });
    expect(combined.seen).toEqual([{ both: { a: 2, b: false } }]);
  });

  it("coerces inside nullable and optional fields", async () => {
    const { definition, seen } = zodRecorder(
      z.object({ a: z.number().nullable(), b: z.number().optional(), c: z.boolean().nullable() }),
    );
    await runCall(definition, { a: "1", b: "2", c: "false" });
    expect(seen).toEqual([{ a: 1, b: 2, c: false }]);
  });
});

describe("what coercion never does", () => {
  it("never turns a number into a string (Zod)", async () => {
    const { definition, seen } = zodRecorder(z.object({ s: z.string() }));
    const run = await runCall(definition, { s: 5 });
    expect(seen).toEqual([]);
    expect(run.toolResults[0]?.is_error).toBe(true);
    expect(issueLine(textOfBlock(run.toolResults[0]), "s")).toMatch(/string.*number 5/);
  });

  it("never turns a number or a boolean into a string (JSON Schema; ajv's coerceTypes would)", async () => {
    const { definition, seen } = jsonRecorder({
      type: "object",
      properties: { s: { type: "string" }, t: { type: "string" } },
    });
    const run = await runCall(definition, { s: 5, t: true });
    expect(seen).toEqual([]);
    const text = textOfBlock(run.toolResults[0]);
    expect(issueLine(text, "s")).toMatch(/string.*number 5/);
    expect(issueLine(text, "t")).toMatch(/string.*boolean true/);
  });

  it("never converts a string where the schema also accepts a string (z.union([z.string(), z.number()]))", async () => {
    const { definition, seen } = zodRecorder(
      z.object({ either: z.union([z.string(), z.number()]), n: z.number() }),
    );
    // `n` fails as sent, so coercion runs; `either` must still stay a string.
    await runCall(definition, { either: "3", n: "4" });
    expect(seen).toEqual([{ either: "3", n: 4 }]);
  });

  it("never converts a field that the matching branch of a discriminated union wants as a string", async () => {
    const item = z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("count"), count: z.number() }),
      z.object({ kind: z.literal("label"), count: z.string(), size: z.number() }),
    ]);
    const { definition, seen } = zodRecorder(z.object({ item }));
    const run = await runCall(definition, { item: { kind: "label", count: "3", size: "4" } });
    expect(textOfBlock(run.toolResults[0])).toBe("ok");
    expect(seen).toEqual([{ item: { kind: "label", count: "3", size: 4 } }]);

    await runCall(definition, { item: { kind: "count", count: "3" } });
    expect(seen.at(-1)).toEqual({ item: { kind: "count", count: 3 } });
  });

  it('never converts where a JSON Schema type list includes "string"', async () => {
    const { definition, seen } = jsonRecorder({
      type: "object",
      properties: {
        either: { type: ["string", "integer"] },
        any: { anyOf: [{ type: "integer" }, { type: "string" }] },
        n: { type: "integer" },
      },
    });
    await runCall(definition, { either: "3", any: "5", n: "4" });
    expect(seen).toEqual([{ either: "3", any: "5", n: 4 }]);
  });

  it("never turns an object, an array or null into a number", async () => {
    const { definition, seen } = zodRecorder(
      z.object({ a: z.number(), b: z.number(), c: z.number() }),
    );
    const run = await runCall(definition, { a: {}, b: [1], c: null });
    expect(seen).toEqual([]);
    const text = textOfBlock(run.toolResults[0]);
    expect(issueLine(text, "a")).toMatch(/number.*object \{\}/);
    expect(issueLine(text, "b")).toMatch(/number.*array \[1\]/);
    expect(issueLine(text, "c")).toMatch(/number.*null/);
  });

  it('rejects strings that are not numbers: "", "abc", "1e", and "3.5" for an integer', async () => {
    const { definition, seen } = zodRecorder(
      z.object({ a: z.number(), b: z.number(), c: z.number(), d: z.number().int() }),
    );
    const run = await runCall(definition, { a: "", b: "abc", c: "1e", d: "3.5" });
    expect(seen).toEqual([]);
    const text = textOfBlock(run.toolResults[0]);
    expect(issueLine(text, "a")).toMatch(/number.*string ""/);
    expect(issueLine(text, "b")).toMatch(/number.*string "abc"/);
    expect(issueLine(text, "c")).toMatch(/number.*string "1e"/);
    expect(issueLine(text, "d")).toMatch(/string "3\.5"/);
  });

  it('turns only decimal numerals into numbers, not "0x10", "0b11" or "0o7"', async () => {
    const { definition, seen } = zodRecorder(
      z.object({ hex: z.number(), binary: z.number(), octal: z.number() }),
    );
    const run = await runCall(definition, { hex: "0x10", binary: "0b11", octal: "0o7" });
    expect(seen).toEqual([]);
    const text = textOfBlock(run.toolResults[0]);
    expect(issueLine(text, "hex")).toMatch(/number.*string "0x10"/);
    expect(issueLine(text, "binary")).toMatch(/number.*string "0b11"/);
    expect(issueLine(text, "octal")).toMatch(/number.*string "0o7"/);
  });

  it('turns only "true" and "false" into booleans, not "yes", "1" or "TRUE"', async () => {
    const { definition, seen } = zodRecorder(
      z.object({ a: z.boolean(), b: z.boolean(), c: z.boolean() }),
    );
    const run = await runCall(definition, { a: "yes", b: "1", c: "TRUE" });
    expect(seen).toEqual([]);
    const text = textOfBlock(run.toolResults[0]);
    expect(issueLine(text, "a")).toMatch(/boolean.*string "yes"/);
    expect(issueLine(text, "b")).toMatch(/boolean.*string "1"/);
    expect(issueLine(text, "c")).toMatch(/boolean.*string "TRUE"/);
  });
});
