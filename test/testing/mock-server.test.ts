import { ConfigurationError } from "skein";
import {
  type MockScript,
  type MockScriptRequest,
  type MockServerOptions,
  mockServer,
} from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { closeMockServers, openMockServer } from "../support/servers.ts";
import { bodyFor, call, endpoint, headersFor, json, payloads, readSse } from "./mock-helpers.ts";

afterEach(closeMockServers);

function serve(script: MockScript, options: Omit<MockServerOptions, "script"> = {}) {
  return openMockServer({ script, ...options });
}

const toolTurn = {
  thinking: "Let me look at the file",
  text: "I will read it.",
  toolCalls: [{ id: "toolu_a", name: "read_file", input: { path: "src/a.ts", lines: [1, 20] } }],
  usage: {
    inputTokens: 120,
    outputTokens: 30,
    cacheReadInputTokens: 80,
    cacheCreationInputTokens: 5,
  },
};

describe("mockServer: Anthropic Messages API", () => {
  it("answers a non-streamed request with the full message object", async () => {
    const server = await serve([toolTurn]);
    const response = await call(server.url, "anthropic");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("request-id")).toMatch(/^req_mock_/);
    const message = await json(response);
    expect(message).toEqual({
      id: expect.stringMatching(/^msg_mock_/),
      type: "message",
      role: "assistant",
      model: "claude-test",
      content: [
        { type: "thinking", thinking: "Let me look at the file", signature: expect.any(String) },
        { type: "text", text: "I will read it." },
        {
          type: "tool_use",
          id: "toolu_a",
          name: "read_file",
          input: { path: "src/a.ts", lines: [1, 20] },
        },
      ],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: {
        input_tokens: 120,
        cache_creation_input_tokens: 5,
        cache_read_input_tokens: 80,
        output_tokens: 30,
      },
    });
  });

  it("streams named SSE events: blocks, several deltas, JSON fragments, signature, stop", async () => {
    const server = await serve([toolTurn]);
    const response = await call(server.url, "anthropic", { stream: true });
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const { events, error } = await readSse(response);
    expect(error).toBeUndefined();
    const data = payloads(events);
    // The event name and the payload's type agree on every event.
    expect(events.map((event) => event.event)).toEqual(data.map((payload) => payload.type));
    expect(data.map((payload) => payload.type)).toEqual([
      "message_start",
      "ping",
      "content_block_start",
      ...Array(7).fill("content_block_delta"), // six words of thinking and the signature
      "content_block_stop",
      "content_block_start",
      ...Array(4).fill("content_block_delta"), // four words of text
      "content_block_stop",
      "content_block_start",
      ...Array(4).fill("content_block_delta"), // an empty fragment and three of JSON
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(data[0].message).toMatchObject({
      id: expect.stringMatching(/^msg_mock_/),
      role: "assistant",
      model: "claude-test",
      content: [],
      stop_reason: null,
      usage: { input_tokens: 120, cache_read_input_tokens: 80, cache_creation_input_tokens: 5 },
    });
    const deltas = (index: number, type: string) =>
      data.filter(
        (d) => d.type === "content_block_delta" && d.index === index && d.delta.type === type,
      );
    expect(data[2].content_block).toEqual({ type: "thinking", thinking: "", signature: "" });
    expect(
      deltas(0, "thinking_delta")
        .map((d) => d.delta.thinking)
        .join(""),
    ).toBe(toolTurn.thinking);
    const signature = deltas(0, "signature_delta")[0].delta.signature;
    expect(signature).toMatch(/^mocksig_/);
    expect(deltas(1, "text_delta").map((d) => d.delta.text)).toEqual([
      "I ",
      "will ",
      "read ",
      "it.",
    ]);
    const toolStart = data.find((d) => d.type === "content_block_start" && d.index === 2);
    expect(toolStart.content_block).toEqual({
      type: "tool_use",
      id: "toolu_a",
      name: "read_file",
      input: {},
    });
    const fragments = deltas(2, "input_json_delta").map((d) => d.delta.partial_json);
    expect(fragments[0]).toBe("");
    expect(fragments.filter(Boolean).length).toBe(3);
    expect(JSON.parse(fragments.join(""))).toEqual(toolTurn.toolCalls[0]!.input);
    expect(data.at(-2)).toEqual({
      type: "message_delta",
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: { output_tokens: 30 },
    });
    // The same thinking gets the same signature, streamed or not, so a client can send it back.
    const whole = await json(call(server.url, "anthropic"));
    expect(whole.content[0].signature).toBe(signature);
  });

  it("defaults ids, stop reason and usage from the turn and the request", async () => {
    const server = await serve([
      {
        toolCalls: [
          { name: "a", input: {} },
          { name: "b", input: {} },
        ],
      },
    ]);
    const message = await json(call(server.url, "anthropic"));
    expect(message.content.map((block: any) => block.id)).toEqual([
      "toolu_mock_1_1",
      "toolu_mock_1_2",
    ]);
    expect(message.stop_reason).toBe("tool_use");
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    const plain = await serve([{ text: "hi" }]);
    expect((await json(call(plain.url, "anthropic"))).stop_reason).toBe("end_turn");
  });
});

describe("mockServer: OpenAI Chat Completions API", () => {
  it("answers a non-streamed request with a chat.completion", async () => {
    const server = await serve([toolTurn]);
    const response = await call(server.url, "openai");
    expect(response.status).toBe(200);
    expect(response.headers.get("x-request-id")).toMatch(/^req_mock_/);
    expect(await json(response)).toEqual({
      id: expect.stringMatching(/^chatcmpl-mock-/),
      object: "chat.completion",
      created: expect.any(Number),
      model: "gpt-test",
      system_fingerprint: "fp_mock",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: "I will read it.",
            refusal: null,
            reasoning_content: "Let me look at the file",
            tool_calls: [
              {
                id: "toolu_a",
                type: "function",
                function: { name: "read_file", arguments: '{"path":"src/a.ts","lines":[1,20]}' },
              },
            ],
          },
          logprobs: null,
          finish_reason: "tool_calls",
        },
      ],
      usage: {
        prompt_tokens: 200,
        completion_tokens: 30,
        total_tokens: 230,
        prompt_tokens_details: { cached_tokens: 80 },
        completion_tokens_details: { reasoning_tokens: 0 },
      },
    });
  });

  it("streams chat.completion.chunk data lines, tool arguments in fragments, usage, then [DONE]", async () => {
    const server = await serve([
      {
        text: "Reading two files.",
        toolCalls: [
          { name: "read", input: { path: "a.ts" } },
          { name: "read", input: { path: "b.ts" } },
        ],
        usage: { inputTokens: 10, outputTokens: 4, cacheReadInputTokens: 6 },
      },
    ]);
    const response = await call(server.url, "openai", { stream: true, includeUsage: true });
    const { events, error } = await readSse(response);
    expect(error).toBeUndefined();
    expect(events.every((event) => event.event === undefined)).toBe(true);
    const data = payloads(events);
    expect(data.at(-1)).toBe("[DONE]");
    const chunks = data.slice(0, -1);
    for (const chunk of chunks) {
      expect(chunk).toMatchObject({ object: "chat.completion.chunk", model: "gpt-test" });
    }
    expect(chunks[0].choices[0].delta).toEqual({ role: "assistant", content: "" });
    const deltas = chunks.filter((c) => c.choices.length).map((c) => c.choices[0].delta);
    expect(deltas.map((d) => d.content ?? "").join("")).toBe("Reading two files.");
    expect(deltas.filter((d) => d.content).length).toBe(3);
    const toolDeltas = deltas.flatMap((d) => d.tool_calls ?? []);
    expect(toolDeltas[0]).toEqual({
      index: 0,
      id: "call_mock_1_1",
      type: "function",
      function: { name: "read", arguments: "" },
    });
    for (const index of [0, 1]) {
      const fragments = toolDeltas
        .filter((t) => t.index === index)
        .map((t) => t.function.arguments);
      expect(fragments.filter(Boolean).length).toBe(3);
      expect(JSON.parse(fragments.join(""))).toEqual({ path: index ? "b.ts" : "a.ts" });
    }
    const finish = chunks.at(-2);
    expect(finish.choices[0]).toMatchObject({ delta: {}, finish_reason: "tool_calls" });
    expect(finish.usage).toBeNull();
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: {
        prompt_tokens: 16,
        completion_tokens: 4,
        total_tokens: 20,
        prompt_tokens_details: { cached_tokens: 6 },
      },
    });
  });

  it("sends no usage chunk, and no usage field, unless stream_options.include_usage is set", async () => {
    const server = await serve([{ text: "hi" }]);
    const data = payloads(
      (await readSse(await call(server.url, "openai", { stream: true }))).events,
    );
    expect(data.at(-1)).toBe("[DONE]");
    expect(data.slice(0, -1).some((chunk) => "usage" in chunk)).toBe(false);
    expect(data.at(-2).choices[0].finish_reason).toBe("stop");
  });
});

describe("mockServer: routes and shapes", () => {
  it("listens on 127.0.0.1 on a free port, a different one per server", async () => {
    const first = await serve([]);
    const second = await serve([]);
    expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(first.url).not.toBe(second.url);
  });

  it("lists models in each protocol's shape", async () => {
    const server = await serve([], { models: ["m-1", "m-2"] });
    const anthropic = await fetch(`${server.url}/v1/models`, { headers: headersFor("anthropic") });
    expect(await json(anthropic)).toMatchObject({
      data: [
        { type: "model", id: "m-1" },
        { type: "model", id: "m-2" },
      ],
      has_more: false,
    });
    const openai = await fetch(`${server.url}/v1/models`, { headers: headersFor("openai") });
    expect(await json(openai)).toMatchObject({
      object: "list",
      data: [
        { id: "m-1", object: "model" },
        { id: "m-2", object: "model" },
      ],
    });
    expect((await fetch(`${server.url}/v1/models/m-2`)).status).toBe(200);
    expect((await fetch(`${server.url}/v1/models/nope`)).status).toBe(404);
  });

  it("answers unknown paths with a 404 in each protocol's shape", async () => {
    const server = await serve([]);
    const anthropic = await fetch(`${server.url}/v1/complete`, {
      method: "POST",
      headers: headersFor("anthropic"),
      body: "{}",
    });
    expect(anthropic.status).toBe(404);
    expect(await json(anthropic)).toMatchObject({
      type: "error",
      error: { type: "not_found_error", message: "Not found" },
    });
    const openai = await fetch(`${server.url}/v1/completions`, {
      method: "POST",
      headers: headersFor("openai"),
      body: "{}",
    });
    expect(openai.status).toBe(404);
    expect(await json(openai)).toEqual({
      error: {
        message: "Invalid URL (POST /v1/completions)",
        type: "invalid_request_error",
        param: null,
        code: null,
      },
    });
  });

  it("answers a body that is not JSON, or has no messages, with a 400", async () => {
    const server = await serve([{ text: "x" }]);
    const bad = await fetch(endpoint(server.url, "anthropic"), {
      method: "POST",
      headers: headersFor("anthropic"),
      body: "{not json",
    });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error.type).toBe("invalid_request_error");
    expect(server.requests[0]!.body).toBe("{not json");
    const empty = await fetch(endpoint(server.url, "openai"), {
      method: "POST",
      headers: headersFor("openai"),
      body: JSON.stringify({ model: "m" }),
    });
    expect(empty.status).toBe(400);
    expect((await json(empty)).error.message).toMatch(/messages/);
  });

  it("records every request: protocol, method, path, headers, body, turn and attempt", async () => {
    const server = await serve([{ text: "one" }, { text: "two" }]);
    await call(server.url, "anthropic");
    await call(server.url, "openai", { assistantTurns: 1, stream: true }).then(readSse);
    await fetch(`${server.url}/v1/models?limit=5`, { headers: headersFor("anthropic") });
    expect(server.requests).toEqual([
      {
        protocol: "anthropic",
        method: "POST",
        path: "/v1/messages",
        headers: expect.objectContaining({
          "x-api-key": "test-key",
          "anthropic-version": "2023-06-01",
        }),
        body: bodyFor("anthropic"),
        turn: 0,
        attempt: 1,
      },
      {
        protocol: "openai",
        method: "POST",
        path: "/v1/chat/completions",
        headers: expect.objectContaining({ authorization: "Bearer test-key" }),
        body: bodyFor("openai", { assistantTurns: 1, stream: true }),
        turn: 1,
        attempt: 1,
      },
      {
        protocol: "anthropic",
        method: "GET",
        path: "/v1/models?limit=5",
        headers: expect.any(Object),
        body: undefined,
      },
    ]);
  });
});

describe("mockServer: scripts", () => {
  it("chooses the turn from the number of assistant messages, so a retry gets the same turn", async () => {
    const server = await serve([{ text: "first" }, { text: "second" }, { text: "third" }]);
    const textOf = async (assistantTurns: number) =>
      (await json(call(server.url, "anthropic", { assistantTurns }))).content[0].text;
    expect(await textOf(2)).toBe("third");
    expect(await textOf(0)).toBe("first");
    expect(await textOf(0)).toBe("first");
    expect(await textOf(1)).toBe("second");
    expect(server.requests.map((r) => [r.turn, r.attempt])).toEqual([
      [2, 1],
      [0, 1],
      [0, 2],
      [1, 1],
    ]);
  });

  it("answers a request past the end of the script with a 500 that says so and asks for no retry", async () => {
    const server = await serve([{ text: "only" }]);
    for (const protocol of ["anthropic", "openai"] as const) {
      const response = await call(server.url, protocol, { assistantTurns: 1, stream: true });
      expect(response.status).toBe(500);
      expect(response.headers.get("x-should-retry")).toBe("false");
      const { error } = await json(response);
      expect(error.type).toBe(protocol === "anthropic" ? "api_error" : "server_error");
      expect(error.message).toBe(
        "mockServer: this request carries 1 assistant messages, so it asks for turn 2, but the script has only 1 turns. Add a turn, or end the run earlier.",
      );
    }
  });

  it("calls a script function with the request, its protocol, turn index and attempt", async () => {
    const seen: MockScriptRequest[] = [];
    const server = await serve(async (request) => {
      seen.push(request);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return { text: `${request.protocol} turn ${request.index} attempt ${request.attempt}` };
    });
    const first = await json(call(server.url, "anthropic", { assistantTurns: 3 }));
    expect(first.content[0].text).toBe("anthropic turn 3 attempt 1");
    const second = await json(call(server.url, "openai", { assistantTurns: 3 }));
    expect(second.choices[0].message.content).toBe("openai turn 3 attempt 2");
    expect(seen[0]).toMatchObject({
      protocol: "anthropic",
      index: 3,
      attempt: 1,
      body: bodyFor("anthropic", { assistantTurns: 3 }),
      headers: expect.objectContaining({ "x-api-key": "test-key" }),
    });
  });

  it("turns a throwing script function, or a bad turn from it, into a 500 naming the problem", async () => {
    const server = await serve(({ index }) => {
      if (index === 0) throw new Error("no turn for you");
      return { text: "x", cutafter: 2 } as never;
    });
    const thrown = await call(server.url, "openai");
    expect(thrown.status).toBe(500);
    expect((await json(thrown)).error.message).toBe("no turn for you");
    const bad = await call(server.url, "anthropic", { assistantTurns: 1 });
    expect(bad.status).toBe(500);
    expect((await json(bad)).error.message).toMatch(/unknown option "cutafter"/);
  });

  it("checks an array script strictly when the server starts", async () => {
    await expect(
      mockServer({ script: [{ text: "a" }, { text: "b", cutafter: 1 } as never] }),
    ).rejects.toThrow(
      'mockServer(): script[1]: unknown option "cutafter". Check for a typo, or upgrade the SDK if this option was added in a newer version.',
    );
    await expect(mockServer({ script: [{ status: 200 }] })).rejects.toThrow(/not an error status/);
    await expect(mockServer({ script: [{ times: 0, status: 429 }] })).rejects.toThrow(
      ConfigurationError,
    );
    await expect(mockServer({ script: "turns" as never })).rejects.toThrow(
      /script must be an array/,
    );
    await expect(mockServer({ script: [], port: 80 } as never)).rejects.toThrow(
      /unknown option "port"/,
    );
  });

  it("reports the turn's model instead of the request's when it gives one (a remapping endpoint)", async () => {
    const server = await serve([{ text: "hi", model: "deepseek-v4-flash" }]);
    const message = await json(call(server.url, "anthropic", { model: "claude-opus-4" }));
    expect(message.model).toBe("deepseek-v4-flash");
  });

  it("keeps multi-byte text intact", async () => {
    const text = "Grüße aus 東京 🙂, fine.";
    const server = await serve([{ text }]);
    const data = payloads(
      (await readSse(await call(server.url, "anthropic", { stream: true }))).events,
    );
    const streamed = data
      .filter((d) => d.type === "content_block_delta")
      .map((d) => d.delta.text)
      .join("");
    expect(streamed).toBe(text);
  });
});
