/**
 * Native structured output on the wire (design/interactive.md, "Typed output"): `openai()` sends
 * `response_format: json_schema` by default; `anthropic({ structuredOutputs: true })` sends the
 * API's structured outputs (`output_config.format`, generally available, no beta header). The
 * models say so in `structuredOutputs`, which the engine reads to choose between native output
 * and a `final_output` tool. The mock server answers a scripted text as is.
 */
import { anthropic, type ModelRequest, openai } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { anthropicOutputSchema } from "../../src/model/anthropic-schema.ts";
import { closeMockServers } from "../support/servers.ts";
import { FAST, serve, streamModel } from "./helpers.ts";

afterEach(closeMockServers);

const SCHEMA = {
  type: "object",
  properties: {
    title: { type: "string", minLength: 1 },
    year: { type: "integer", minimum: 1900, description: "The year it came out" },
    tags: { type: "array", items: { type: "string", format: "uri-reference" }, minItems: 1 },
    author: {
      type: "object",
      properties: { name: { type: "string" } },
      required: ["name"],
    },
  },
  required: ["title", "year"],
} as const;

const OUTPUT: NonNullable<ModelRequest["output"]> = { name: "final_output", schema: SCHEMA };
const ANSWER = '{"title":"Skein","year":2026,"tags":["yarn"]}';

describe("openai: response_format", () => {
  it("says structuredOutputs: true by default, and false when turned off", () => {
    expect(openai({ baseURL: "http://127.0.0.1:1/v1" }).structuredOutputs).toBe(true);
    expect(
      openai({ baseURL: "http://127.0.0.1:1/v1", structuredOutputs: false }).structuredOutputs,
    ).toBe(false);
  });

  it("sends response_format json_schema, not strict, with the schema as given, and the answer is the text", async () => {
    const server = await serve([{ text: ANSWER }]);
    const events = await streamModel(openai({ baseURL: `${server.url}/v1`, ...FAST }), {
      output: OUTPUT,
    });
    expect(server.requests[0]!.body.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "final_output", schema: SCHEMA, strict: false },
    });
    expect(events.at(-1)).toMatchObject({
      type: "message",
      message: { content: [{ type: "text", text: ANSWER }] },
    });
  });

  it("sends none without request.output, or with structuredOutputs: false", async () => {
    const server = await serve([{ text: "a" }, { text: "b" }]);
    await streamModel(openai({ baseURL: `${server.url}/v1`, ...FAST }));
    await streamModel(openai({ baseURL: `${server.url}/v1`, ...FAST, structuredOutputs: false }), {
      output: OUTPUT,
    });
    for (const request of server.requests)
      expect(request.body).not.toHaveProperty("response_format");
  });
});

describe("anthropic: structured outputs", () => {
  it("says structuredOutputs: false by default, and true when asked", () => {
    expect(anthropic({ baseURL: "http://127.0.0.1:1" }).structuredOutputs).toBe(false);
    expect(
      anthropic({ baseURL: "http://127.0.0.1:1", structuredOutputs: true }).structuredOutputs,
    ).toBe(true);
  });

  it("sends output_config.format json_schema (the GA form: no output_format, no beta header), and the answer is the text", async () => {
    const server = await serve([{ text: ANSWER }]);
    const events = await streamModel(
      anthropic({ baseURL: server.url, ...FAST, structuredOutputs: true }),
      { output: OUTPUT },
    );
    const { body, headers } = server.requests[0]!;
    expect(body.output_config).toEqual({
      format: { type: "json_schema", schema: anthropicOutputSchema(SCHEMA) },
    });
    expect(body).not.toHaveProperty("output_format");
    expect(headers).not.toHaveProperty("anthropic-beta");
    expect(events.at(-1)).toMatchObject({
      type: "message",
      message: { content: [{ type: "text", text: ANSWER }] },
    });
  });

  it("sends none without request.output, or without structuredOutputs", async () => {
    const server = await serve([{ text: "a" }, { text: "b" }]);
    await streamModel(anthropic({ baseURL: server.url, ...FAST, structuredOutputs: true }));
    await streamModel(anthropic({ baseURL: server.url, ...FAST }), { output: OUTPUT });
    for (const request of server.requests) expect(request.body).not.toHaveProperty("output_config");
  });

  it("adapts the schema as the API requires: every object closed, unsupported limits moved into descriptions", () => {
    expect(anthropicOutputSchema(SCHEMA)).toEqual({
      type: "object",
      properties: {
        title: { type: "string", description: "{minLength: 1}" },
        year: { type: "integer", description: "The year it came out\n\n{minimum: 1900}" },
        tags: {
          type: "array",
          items: { type: "string", description: '{format: "uri-reference"}' },
          minItems: 1,
        },
        author: {
          type: "object",
          properties: { name: { type: "string" } },
          required: ["name"],
          additionalProperties: false,
        },
      },
      required: ["title", "year"],
      additionalProperties: false,
    });
    // The original is left alone (the engine validates answers against it).
    expect(SCHEMA.properties.title).toEqual({ type: "string", minLength: 1 });
  });

  it("adapts nested schemas in $defs, anyOf/oneOf and records, keeping supported keywords", () => {
    const adapted = anthropicOutputSchema({
      $defs: { point: { type: "object", properties: { x: { type: "number", maximum: 9 } } } },
      type: "object",
      properties: {
        at: { $ref: "#/$defs/point" },
        either: { oneOf: [{ type: "string", format: "email" }, { type: "null" }] },
        counts: { type: "object", additionalProperties: { type: "integer" } },
        list: { type: "array", items: { type: "string" }, minItems: 3, maxItems: 5 },
      },
      additionalProperties: false,
    });
    expect(adapted).toEqual({
      $defs: {
        point: {
          type: "object",
          properties: { x: { type: "number", description: "{maximum: 9}" } },
          additionalProperties: false,
        },
      },
      type: "object",
      properties: {
        at: { $ref: "#/$defs/point" },
        either: { anyOf: [{ type: "string", format: "email" }, { type: "null" }] },
        counts: {
          type: "object",
          additionalProperties: false,
          description: '{additionalProperties: {"type":"integer"}}',
        },
        list: {
          type: "array",
          items: { type: "string" },
          description: "{minItems: 3, maxItems: 5}",
        },
      },
      additionalProperties: false,
    });
  });

  it("the mock server refuses a schema with an open object, as the API does", async () => {
    const server = await serve([{ text: "a" }]);
    const response = await fetch(`${server.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "m",
        max_tokens: 10,
        messages: [{ role: "user", content: "hi" }],
        output_config: { format: { type: "json_schema", schema: { type: "object" } } },
      }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      type: "error",
      error: {
        type: "invalid_request_error",
        message:
          "output_config.format.schema: For 'object' type, 'additionalProperties' must be explicitly set to false",
      },
    });
  });
});
