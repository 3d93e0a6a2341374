import type { StandardSchemaV1 } from "@standard-schema/spec";
import { tool } from "skein";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { z as z3 } from "zod/v3";
import { z as z4 } from "zod/v4";
import { runCall, textOfBlock } from "./harness.ts";

const numberAndOptionalName = {
  type: "object",
  properties: { count: { type: "number" }, name: { type: "string" } },
  required: ["count"],
};

describe("tool() with a Zod 4 schema", () => {
  it("builds { name, description, inputSchema, executionMode } with JSON Schema and no $schema", () => {
    const definition = tool(
      "count_things",
      "Counts things",
      z.object({ count: z.number(), name: z.string().optional() }),
      () => "ok",
    );
    expect({ ...definition }).toEqual({
      name: "count_things",
      description: "Counts things",
      inputSchema: numberAndOptionalName,
      executionMode: "parallel",
    });
    expect(Object.hasOwn(definition.inputSchema, "$schema")).toBe(false);
  });

  it('accepts a schema from "zod/v4" the same way', () => {
    const definition = tool(
      "count_things",
      "Counts things",
      z4.object({ count: z4.number(), name: z4.string().optional() }),
      () => "ok",
    );
    expect(definition.inputSchema).toEqual(numberAndOptionalName);
  });

  it("gives the handler the parsed input (Zod defaults and transforms applied)", async () => {
    const seen: unknown[] = [];
    const echo = tool(
      "echo",
      "Echoes",
      z.object({
        word: z.string().transform((word) => word.toUpperCase()),
        times: z.number().default(2),
      }),
      (input) => {
        seen.push(input);
        return input.word.repeat(input.times);
      },
    );
    const run = await runCall(echo, { word: "ab" });
    expect(seen).toEqual([{ word: "AB", times: 2 }]);
    expect(run.toolResults).toEqual([
      { type: "tool_result", tool_use_id: "call_1", content: "ABAB", is_error: false },
    ]);
  });

  it("runs the seed 000/001 calculator example as written", async () => {
    const calculator = tool(
      "calculator",
      "Evaluate a simple arithmetic expression",
      z4.object({ expr: z4.string() }),
      async (input) => {
        return { content: String(Function(`return ${input.expr}`)()) };
      },
    );
    const run = await runCall(calculator, { expr: "6 * 7" });
    expect(textOfBlock(run.toolResults[0])).toBe("42");
    expect(run.toolResults[0]?.is_error).toBe(false);
  });
});

describe("tool() with an async Zod schema", () => {
  it("awaits async refinements before the handler runs, and reports their failure", async () => {
    const taken = new Set(["ada"]);
    let calls = 0;
    const signup = tool(
      "signup",
      "Sign up",
      z.object({
        user: z.string().refine(async (user) => !taken.has(user), "this user name is taken"),
      }),
      ({ user }) => {
        calls++;
        return `welcome ${user}`;
      },
    );
    const ok = await runCall(signup, { user: "bob" });
    expect(textOfBlock(ok.toolResults[0])).toBe("welcome bob");
    const refused = await runCall(signup, { user: "ada" });
    expect(refused.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(refused.toolResults[0])).toMatch(
      /^- user: this user name is taken; received string "ada"$/m,
    );
    expect(calls).toBe(1);
  });
});

describe("tool() with a Zod 3 schema (zod/v3, through zod-to-json-schema)", () => {
  const schema = z3.object({ count: z3.number(), name: z3.string().optional() });

  it("converts the schema to JSON Schema without $schema", () => {
    const definition = tool("count_things", "Counts things", schema, () => "ok");
    expect(definition.inputSchema).toEqual({
      ...numberAndOptionalName,
      additionalProperties: false,
    });
    expect(Object.hasOwn(definition.inputSchema, "$schema")).toBe(false);
  });

  it("validates with Zod 3, coerces and hands the parsed input to the handler", async () => {
    const seen: unknown[] = [];
    const counter = tool("count_things", "Counts things", schema, (input) => {
      seen.push(input);
      return `count=${input.count}`;
    });
    const run = await runCall(counter, { count: "7", name: "x" });
    expect(seen).toEqual([{ count: 7, name: "x" }]);
    expect(run.toolResults).toEqual([
      { type: "tool_result", tool_use_id: "call_1", content: "count=7", is_error: false },
    ]);
  });

  it("rejects invalid input with Zod 3's issues and never runs the handler", async () => {
    let calls = 0;
    const counter = tool("count_things", "Counts things", schema, () => {
      calls++;
      return "ran";
    });
    const run = await runCall(counter, { count: "many", name: 5 });
    expect(calls).toBe(0);
    expect(run.toolResults[0]?.is_error).toBe(true);
    const text = textOfBlock(run.toolResults[0]);
    expect(text).toMatch(/^- count: .*number.*"many"/m);
    expect(text).toMatch(/^- name: .*string.*5/m);
  });
});

/** A Standard Schema written by hand: validates `{ city: string }` and describes itself as JSON Schema. */
function citySchema() {
  const jsonSchemaCalls: unknown[] = [];
  const schema: StandardSchemaV1<unknown, { city: string }> & {
    "~standard": { jsonSchema: { input(options: unknown): Record<string, unknown> } };
  } = {
    "~standard": {
      version: 1,
      vendor: "handmade",
      validate(value) {
        if (typeof value === "object" && value !== null && "city" in value) {
          const city = (value as { city: unknown }).city;
          if (typeof city === "string") return { value: { city: city.trim() } };
          return { issues: [{ message: "expected a string", path: ["city"] }] };
        }
        return { issues: [{ message: "required field is missing", path: [{ key: "city" }] }] };
      },
      jsonSchema: {
        input(options) {
          jsonSchemaCalls.push(options);
          return {
            $schema: "https://json-schema.org/draft/2020-12/schema",
            type: "object",
            properties: { city: { type: "string" } },
            required: ["city"],
          };
        },
      },
    },
  };
  return { schema, jsonSchemaCalls };
}

describe("tool() with a hand-written Standard Schema", () => {
  it("takes inputSchema from ~standard.jsonSchema.input, once, with $schema removed", () => {
    const { schema, jsonSchemaCalls } = citySchema();
    const weather = tool("get_weather", "Get the weather for a city", schema, () => "sunny");
    expect(weather.inputSchema).toEqual({
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
    });
    expect(jsonSchemaCalls).toHaveLength(1);
  });

  it("validates through ~standard.validate and passes its output value to the handler", async () => {
    const { schema, jsonSchemaCalls } = citySchema();
    const weather = tool("get_weather", "Get the weather for a city", schema, async ({ city }) => {
      return `It's sunny in ${city}.`;
    });
    const run = await runCall(weather, { city: "  Tokyo " });
    expect(run.toolResults).toEqual([
      {
        type: "tool_result",
        tool_use_id: "call_1",
        content: "It's sunny in Tokyo.",
        is_error: false,
      },
    ]);
    await runCall(weather, { city: "Kyoto" });
    // Compiled once, when the tool was defined; never per call.
    expect(jsonSchemaCalls).toHaveLength(1);
  });

  it("reports its issues by path (both path segment forms) without running the handler", async () => {
    const { schema } = citySchema();
    let calls = 0;
    const weather = tool("get_weather", "Get the weather", schema, () => {
      calls++;
      return "x";
    });
    const wrongType = await runCall(weather, { city: 3 });
    expect(textOfBlock(wrongType.toolResults[0])).toMatch(/^- city: expected a string.*3/m);
    const missing = await runCall(weather, {});
    expect(textOfBlock(missing.toolResults[0])).toMatch(/^- city: required field is missing/m);
    expect(missing.toolResults[0]?.is_error).toBe(true);
    expect(calls).toBe(0);
  });

  it("a validate that throws becomes an invalid-input error result, not a crash", async () => {
    const { schema } = citySchema();
    const exploding = {
      "~standard": {
        ...schema["~standard"],
        validate: () => {
          throw new Error("validator blew up");
        },
      },
    } as typeof schema;
    let calls = 0;
    const weather = tool("get_weather", "Get the weather", exploding, () => {
      calls++;
      return "x";
    });
    const run = await runCall(weather, { city: "Oslo" });
    expect(calls).toBe(0);
    expect(run.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(run.toolResults[0])).toMatch(
      /^Invalid input for tool "get_weather": .*validator blew up/,
    );
    expect(run.result.subtype).toBe("success");
  });

  it("a jsonSchema.input that throws is an assembly error naming the tool", () => {
    const { schema } = citySchema();
    const broken = {
      "~standard": {
        ...schema["~standard"],
        jsonSchema: {
          input: () => {
            throw new Error("cannot describe transforms");
          },
        },
      },
    } as typeof schema;
    expect(() => tool("get_weather", "d", broken, () => "x")).toThrow(
      /^tool\("get_weather"\): its schema could not be turned into JSON Schema \(cannot describe transforms\)/,
    );
  });

  it("refuses at assembly a Standard Schema with no JSON Schema form", () => {
    const opaque: StandardSchemaV1<unknown, unknown> = {
      "~standard": { version: 1, vendor: "opaque", validate: (value) => ({ value }) },
    };
    expect(() => tool("opaque_tool", "d", opaque, () => "x")).toThrow(
      /opaque.*no JSON Schema form/,
    );
  });
});

describe("metadata", () => {
  const schema = z.object({ id: z.string() });

  it("is absent from the definition when not given", () => {
    const definition = tool("lookup", "Looks up", schema, () => "x");
    expect(Object.hasOwn(definition, "metadata")).toBe(false);
    expect("metadata" in definition).toBe(false);
  });

  it("is passed through as given, and the model sees exactly { name, description, input_schema }", async () => {
    const metadata = { contractVersion: 3, owner: "billing" };
    const lookup = tool("lookup", "Looks up a record", schema, () => "found", {
      metadata,
      label: "Lookup",
      security: { network: "none" },
    });
    expect(lookup.metadata).toBe(metadata);
    expect(lookup.metadata).toEqual({ contractVersion: 3, owner: "billing" });

    const run = await runCall(lookup, { id: "r1" });
    expect(run.model.requests[0]?.tools).toEqual([
      {
        name: "lookup",
        description: "Looks up a record",
        input_schema: {
          type: "object",
          properties: { id: { type: "string" } },
          required: ["id"],
        },
      },
    ]);
    expect(Object.keys(run.model.requests[0]?.tools[0] ?? {}).sort()).toEqual([
      "description",
      "input_schema",
      "name",
    ]);
    expect(JSON.stringify(run.model.requests)).not.toContain("billing");
    expect(JSON.stringify(run.model.requests)).not.toContain("Lookup");
    expect(run.events.find((event) => event.type === "tool_start")).toEqual({
      type: "tool_start",
      callId: "call_1",
      name: "lookup",
      input: { id: "r1" },
      label: "Lookup",
    });
  });
});
