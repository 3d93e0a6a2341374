/**
 * mockServer refuses what the real APIs refuse, with a 400 in the API's own error shape and
 * words (as their error bodies quote them), before the script is asked: a wire mistake fails a
 * test as it would fail in production. `validate: false` turns this off.
 */
import { type MockProtocol, type MockServer, mockServer } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { closeMockServers, openMockServer } from "../support/servers.ts";
import { endpoint, headersFor, json } from "./mock-helpers.ts";

afterEach(closeMockServers);

function serve(validate?: boolean): Promise<MockServer> {
  return openMockServer({
    script: () => ({ text: "fine" }),
    ...(validate === undefined ? {} : { validate }),
  });
}

async function post(server: MockServer, protocol: MockProtocol, body: Record<string, unknown>) {
  const response = await fetch(endpoint(server.url, protocol), {
    method: "POST",
    headers: headersFor(protocol),
    body: JSON.stringify({ model: "m", max_tokens: 100, ...body }),
  });
  return { status: response.status, headers: response.headers, body: await json(response) };
}

const user = (content: unknown) => ({ role: "user", content });
const assistant = (content: unknown) => ({ role: "assistant", content });
const text = (value: string, extra: Record<string, unknown> = {}) => ({
  type: "text",
  text: value,
  ...extra,
});
const toolUse = (id: string) => ({ type: "tool_use", id, name: "echo", input: {} });
const toolResult = (id: string) => ({ type: "tool_result", tool_use_id: id, content: "ok" });
const cached = { cache_control: { type: "ephemeral" } };

describe("mockServer validation: the Anthropic Messages API", () => {
  it.each([
    [
      "more than four cache breakpoints",
      {
        system: [text("sys", cached)],
        tools: [{ name: "echo", description: "", input_schema: { type: "object" }, ...cached }],
        messages: [
          user([text("a", cached)]),
          assistant([text("b", cached)]),
          user([text("c", cached)]),
        ],
      },
      "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    ],
    [
      "an empty text block",
      { messages: [user([text("")])] },
      "messages: text content blocks must be non-empty",
    ],
    [
      "a cache breakpoint on an empty text block",
      { messages: [user([text("hi"), text("", cached)])] },
      "messages.0.content.1.text: cache_control cannot be set for empty text blocks",
    ],
    [
      "an empty message",
      { messages: [user(""), assistant("b"), user("c")] },
      "messages.0: all messages must have non-empty content except for the optional final assistant message",
    ],
    [
      "a tool_use not answered in the next message",
      {
        messages: [
          user("go"),
          assistant([toolUse("toolu_1"), toolUse("toolu_2")]),
          user([toolResult("toolu_1"), text("and then")]),
        ],
      },
      "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_2. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    ],
    [
      "a tool_result for an unknown id",
      {
        messages: [
          user("go"),
          assistant([toolUse("toolu_1")]),
          user([toolResult("toolu_1"), toolResult("toolu_9")]),
        ],
      },
      "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    ],
    [
      "a first message that is not the user's",
      { messages: [assistant("hello"), user("hi")] },
      'messages: first message must use the "user" role',
    ],
    [
      "roles out of order",
      { messages: [user("a"), user("b")] },
      'messages: roles must alternate between "user" and "assistant", but found multiple "user" roles in a row',
    ],
    [
      "thinking replayed without its signature",
      {
        messages: [
          user("go"),
          assistant([{ type: "thinking", thinking: "hmm" }, text("done")]),
          user("more"),
        ],
      },
      "messages.1.content.0.thinking.signature: Field required",
    ],
  ])("refuses %s with the API's 400", async (_case, body, message) => {
    const server = await serve();
    const answer = await post(server, "anthropic", body);
    expect(answer.status).toBe(400);
    expect(answer.headers.get("x-should-retry")).toBe("false");
    expect(answer.body).toEqual({
      type: "error",
      error: { type: "invalid_request_error", message },
      request_id: answer.headers.get("request-id"),
    });
  });

  it("accepts a well-formed tool loop with four breakpoints and signed thinking", async () => {
    const server = await serve();
    const answer = await post(server, "anthropic", {
      system: [text("sys", cached)],
      messages: [
        user([text("go", cached)]),
        assistant([{ type: "thinking", thinking: "hmm", signature: "sig" }, toolUse("toolu_1")]),
        user([toolResult("toolu_1"), text("more", cached)]),
        assistant([{ type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} }]),
        user([text("last", cached)]),
      ],
    });
    expect(answer.status).toBe(200);
  });
});

describe("mockServer validation: OpenAI Chat Completions", () => {
  const calls = (...ids: string[]) => ({
    role: "assistant",
    content: null,
    tool_calls: ids.map((id) => ({
      id,
      type: "function",
      function: { name: "echo", arguments: "{}" },
    })),
  });
  const toolMessage = (id: string) => ({ role: "tool", tool_call_id: id, content: "ok" });

  it.each([
    [
      "a tool message with nothing to answer",
      [user("go"), toolMessage("call_1")],
      "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
      "messages.[1].role",
    ],
    [
      "a tool message for an unknown tool_call_id",
      [user("go"), calls("call_1"), toolMessage("call_1"), toolMessage("call_9")],
      "Invalid parameter: 'tool_call_id' of 'call_9' not found in 'tool_calls' of previous message.",
      "messages.[3].tool_call_id",
    ],
    [
      "tool_calls not followed by their tool messages",
      [user("go"), calls("call_1", "call_2"), toolMessage("call_1"), user("next")],
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_2",
      "messages.[1].role",
    ],
  ])("refuses %s with the API's 400", async (_case, messages, message, param) => {
    const server = await serve();
    const answer = await post(server, "openai", { messages });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      error: { message, type: "invalid_request_error", param, code: null },
    });
  });

  it("accepts consecutive user messages and a complete tool loop", async () => {
    const server = await serve();
    const answer = await post(server, "openai", {
      messages: [
        { role: "system", content: "sys" },
        user("go"),
        user("also"),
        calls("call_1", "call_2"),
        toolMessage("call_1"),
        toolMessage("call_2"),
        user("next"),
      ],
    });
    expect(answer.status).toBe(200);
  });
});

describe("mockServer validation: switched off", () => {
  it("plays the script whatever the request holds with validate: false", async () => {
    const server = await serve(false);
    const anthropic = await post(server, "anthropic", { messages: [assistant("x"), user("")] });
    expect(anthropic.status).toBe(200);
    const openai = await post(server, "openai", { messages: [{ role: "tool", content: "x" }] });
    expect(openai.status).toBe(200);
    expect(server.requests).toHaveLength(2);
  });

  it("checks validate strictly", async () => {
    await expect(mockServer({ script: [], validate: "yes" as unknown as boolean })).rejects.toThrow(
      'mockServer(): validate must be a boolean, received "yes".',
    );
  });
});
