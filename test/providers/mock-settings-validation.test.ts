/**
 * The mock server checks the settings fields as the real APIs do (where it is cheap), so a
 * provider that puts a wrong value on the wire fails a test as it would fail in production: 400 in
 * the API's own error shape, before the script is asked, with `x-should-retry: false`. Requests it
 * accepts keep every field in the request log.
 */
import { afterEach, describe, expect, it } from "vitest";
import { closeMockServers, openMockServer } from "../support/servers.ts";
import { serve } from "./helpers.ts";

afterEach(closeMockServers);

const TOOLS = {
  anthropic: [{ name: "lookup", description: "Look up", input_schema: { type: "object" } }],
  openai: [
    {
      type: "function",
      function: { name: "lookup", description: "Look up", parameters: { type: "object" } },
    },
  ],
};

async function post(url: string, body: Record<string, unknown>) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], ...body }),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as any,
  };
}

describe("mockServer: Anthropic settings", () => {
  const refused: [string, Record<string, unknown>, string][] = [
    ["temperature above 1", { temperature: 1.2 }, "temperature: range: 0..1"],
    ["negative temperature", { temperature: -0.1 }, "temperature: range: 0..1"],
    ["top_p above 1", { top_p: 1.5 }, "top_p: range: 0..1"],
    [
      "stop_sequences not strings",
      { stop_sequences: ["a", 1] },
      "stop_sequences: Input should be a valid list of strings",
    ],
    [
      "tool_choice without tools",
      { tool_choice: { type: "auto" } },
      "tool_choice: tool_choice may only be specified while providing tools.",
    ],
    [
      "tool_choice naming a missing tool",
      { tools: TOOLS.anthropic, tool_choice: { type: "tool", name: "search" } },
      "tool_choice.name: Tool 'search' not found in the provided tools",
    ],
    [
      "a forced tool call with thinking on",
      {
        tools: TOOLS.anthropic,
        tool_choice: { type: "any" },
        thinking: { type: "enabled", budget_tokens: 1024 },
      },
      "Thinking may not be enabled when tool_choice forces tool use.",
    ],
    [
      "an output format that is not a JSON schema",
      { output_config: { format: { type: "json_object" } } },
      "output_config.format.type: Input should be 'json_schema'",
    ],
  ];

  it.each(refused)("refuses %s with 400 invalid_request_error", async (_what, fields, message) => {
    const server = await serve([{ text: "never played" }]);
    const answer = await post(`${server.url}/v1/messages`, { max_tokens: 2048, ...fields });
    expect(answer.status).toBe(400);
    expect(answer.headers.get("x-should-retry")).toBe("false");
    expect(answer.body).toMatchObject({
      type: "error",
      error: { type: "invalid_request_error", message },
    });
  });

  it("accepts settings in range, and logs them", async () => {
    const server = await serve([{ text: "fine" }]);
    const fields = {
      max_tokens: 10,
      temperature: 1,
      top_p: 0,
      stop_sequences: ["END"],
      tools: TOOLS.anthropic,
      tool_choice: { type: "tool", name: "lookup" },
      output_config: {
        format: { type: "json_schema", schema: { type: "object", additionalProperties: false } },
      },
    };
    const answer = await post(`${server.url}/v1/messages`, fields);
    expect(answer.status).toBe(200);
    expect(answer.body.content).toEqual([{ type: "text", text: "fine" }]);
    expect(server.requests[0]!.body).toMatchObject(fields);
  });
});

describe("mockServer: OpenAI settings", () => {
  const refused: [string, Record<string, unknown>, Record<string, unknown>][] = [
    [
      "more than four stop sequences",
      { stop: ["a", "b", "c", "d", "e"] },
      {
        message:
          "Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length 5 instead.",
        param: "stop",
        code: "array_above_max_length",
      },
    ],
    [
      "temperature above 2",
      { temperature: 2.5 },
      {
        message:
          "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 2.5 instead.",
        param: "temperature",
        code: "decimal_above_max_value",
      },
    ],
    ["top_p above 1", { top_p: 1.5 }, { param: "top_p", code: "decimal_above_max_value" }],
    [
      "tool_choice without tools",
      { tool_choice: "required" },
      {
        message:
          "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
        param: "tool_choice",
      },
    ],
    [
      "tool_choice naming a missing function",
      { tools: TOOLS.openai, tool_choice: { type: "function", function: { name: "search" } } },
      {
        message: "Invalid value for 'tool_choice': function 'search' was not found in 'tools'.",
        param: "tool_choice",
      },
    ],
    [
      "a json_schema response format without a name",
      { response_format: { type: "json_schema", json_schema: { schema: {} } } },
      { param: "response_format.json_schema.name", code: "missing_required_parameter" },
    ],
    [
      "a json_schema response format with a bad name",
      { response_format: { type: "json_schema", json_schema: { name: "final output" } } },
      { param: "response_format.json_schema.name", code: "invalid_value" },
    ],
  ];

  it.each(refused)("refuses %s with 400 invalid_request_error", async (_what, fields, error) => {
    const server = await serve([{ text: "never played" }]);
    const answer = await post(`${server.url}/v1/chat/completions`, fields);
    expect(answer.status).toBe(400);
    expect(answer.headers.get("x-should-retry")).toBe("false");
    expect(answer.body).toMatchObject({ error: { type: "invalid_request_error", ...error } });
  });

  it("accepts settings in range, and logs them", async () => {
    const server = await serve([{ text: '{"a":1}' }]);
    const fields = {
      temperature: 2,
      top_p: 1,
      stop: ["a", "b", "c", "d"],
      tools: TOOLS.openai,
      tool_choice: { type: "function", function: { name: "lookup" } },
      response_format: {
        type: "json_schema",
        json_schema: { name: "final_output", schema: { type: "object" }, strict: false },
      },
    };
    const answer = await post(`${server.url}/v1/chat/completions`, fields);
    expect(answer.status).toBe(200);
    expect(answer.body.choices[0].message.content).toBe('{"a":1}');
    expect(server.requests[0]!.body).toMatchObject(fields);
  });

  it("plays anything with validate: false", async () => {
    const server = await openMockServer({ script: [{ text: "ok" }], validate: false });
    const answer = await post(`${server.url}/v1/chat/completions`, {
      stop: ["1", "2", "3", "4", "5"],
    });
    expect(answer.status).toBe(200);
  });
});
