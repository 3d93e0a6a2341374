/**
 * Streams real providers sent, as other projects recorded them (fixtures/README.md names each
 * file's project, path and commit): what the provider makes of them (text, usage) and what it
 * sends back on the next turn (the replayed request body). Served from a raw local server.
 */
import { anthropic, createBareAgent, type Message, type Model, openai, tool } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { closeRawServers, type RawServer } from "../support/servers.ts";
import { collect, streamModel } from "./helpers.ts";
import { anthropicReply, anthropicText, openaiText } from "./raw-server.ts";
import { anthropicSse, eventsOf, fixture, messagesIn, openaiSse, serveTurns } from "./recorded.ts";

afterEach(closeRawServers);

const claude = (server: RawServer): Model =>
  anthropic({ baseURL: server.url, apiKey: "test", maxRetries: 0 });
const gpt = (server: RawServer, options: { replayReasoning?: boolean } = {}): Model =>
  openai({ baseURL: `${server.url}/v1`, apiKey: "test", maxRetries: 0, ...options });

/** The final message a provider made of the first turn, and the body it sends on the next one. */
async function turnAndReplay(model: Model, server: RawServer) {
  const events = await streamModel(model);
  const final = events.at(-1)!;
  if (final.type !== "message") throw new Error("no final message");
  const messages: Message[] = [
    { role: "user", content: "hi" },
    final.message,
    { role: "user", content: "next" },
  ];
  await streamModel(model, { messages });
  return { events, final, replayed: server.requests.at(-1)!.body.messages[1] };
}

/** The content_block_start's block of `index`, exactly as recorded. */
function startedBlock(lines: string[], index: number): any {
  return eventsOf(lines, index).find((event) => event.type === "content_block_start").content_block;
}

/** The input a recorded block streamed as input_json_delta fragments. */
function streamedInput(lines: string[], index: number): unknown {
  const fragments = eventsOf(lines, index).filter(
    (event) => event.delta?.type === "input_json_delta",
  );
  return JSON.parse(fragments.map((event) => event.delta.partial_json).join(""));
}

const NEXT_ANTHROPIC = anthropicReply(anthropicText(0, "ok"));

describe("anthropic: recorded streams", () => {
  it("prompt caching: message_delta's counters are the message's totals and replace message_start's", async () => {
    // message_start: input 2, cache creation 3068, cache read 0; message_delta: 6, 3337, 6289, output 198.
    // Recorded: vercel/ai packages/anthropic/src/__fixtures__/anthropic-code-execution-20260120-prompt-cache.1.chunks.txt
    const lines = fixture("anthropic-code-execution-20260120-prompt-cache.1");
    const server = await serveTurns([anthropicSse(lines)]);
    const { result } = await collect(createBareAgent({ model: claude(server) }));
    expect(result.usage).toEqual({
      // Priced: the provider's default model is in MODEL_PRICES.
      costUsd: expect.any(Number),
      inputTokens: 6,
      outputTokens: 198,
      cacheReadInputTokens: 6289,
      cacheCreationInputTokens: 3337,
    });
    expect(result.steps[0]!.usage).toEqual(result.usage);
    expect(result.result).toBe("The sum of the squares of the numbers 1 through 12 is **650**.");
  });

  it("a counter sent only in message_delta (input_tokens) replaces message_start's; pings are skipped", async () => {
    const server = await serveTurns([
      // Recorded: vercel/ai packages/anthropic/src/__fixtures__/anthropic-message-delta-input-tokens.chunks.txt
      anthropicSse(fixture("anthropic-message-delta-input-tokens")),
    ]);
    const { result } = await collect(createBareAgent({ model: claude(server) }));
    expect(result.result).toBe("pong");
    expect(result.usage).toMatchObject({ inputTokens: 61, outputTokens: 2 });
  });

  it("code execution: server_tool_use input streamed as input_json_delta is replayed whole, results intact", async () => {
    // Recorded: vercel/ai packages/anthropic/src/__fixtures__/anthropic-code-execution-20260120-prompt-cache.1.chunks.txt
    const lines = fixture("anthropic-code-execution-20260120-prompt-cache.1");
    const server = await serveTurns([anthropicSse(lines), NEXT_ANTHROPIC]);
    const { final, replayed } = await turnAndReplay(claude(server), server);
    const expected = [
      { ...startedBlock(lines, 0), input: streamedInput(lines, 0) },
      startedBlock(lines, 1),
      { ...startedBlock(lines, 2), input: streamedInput(lines, 2) },
      startedBlock(lines, 3),
      { type: "text", text: "The sum of the squares of the numbers 1 through 12 is **650**." },
    ];
    expect(expected[0].input).toEqual({
      command: 'for n in $(seq 1 12); do echo "$n: $((n*n))"; done',
    });
    expect(final.message.content).toEqual(expected);
    expect(replayed).toEqual({ role: "assistant", content: expected });
  });

  it("web search: the query, the results block and the citations are replayed as sent", async () => {
    // Recorded: vercel/ai packages/anthropic/src/__fixtures__/anthropic-web-search-tool.1.chunks.txt
    const lines = fixture("anthropic-web-search-tool.1");
    const server = await serveTurns([anthropicSse(lines), NEXT_ANTHROPIC]);
    const { final, replayed } = await turnAndReplay(claude(server), server);
    const content = final.message.content as any[];
    expect(content).toHaveLength(21);
    expect(content[0]).toEqual({
      ...startedBlock(lines, 0),
      input: { query: "tech news today September 26 2025" },
    });
    expect(content[1]).toEqual(startedBlock(lines, 1));
    const citations = (index: number) =>
      eventsOf(lines, index)
        .filter((event) => event.delta?.type === "citations_delta")
        .map((event) => event.delta.citation);
    expect(content[3].citations).toEqual(citations(3));
    expect(content[3].citations).toHaveLength(3);
    expect(content[2].citations).toBeUndefined();
    expect(replayed).toEqual({ role: "assistant", content });
    expect(final.usage).toMatchObject({ inputTokens: 15665, outputTokens: 795 });
  });

  it("web fetch inside code execution: a server_tool_use whose input came whole in content_block_start", async () => {
    // Recorded: vercel/ai packages/anthropic/src/__fixtures__/anthropic-web-fetch-tool-20260209.1.chunks.txt
    const lines = fixture("anthropic-web-fetch-tool-20260209.1");
    const server = await serveTurns([anthropicSse(lines), NEXT_ANTHROPIC]);
    const { final, replayed } = await turnAndReplay(claude(server), server);
    const content = final.message.content as any[];
    expect(content.slice(0, 4)).toEqual([
      { ...startedBlock(lines, 0), input: streamedInput(lines, 0) },
      startedBlock(lines, 1),
      startedBlock(lines, 2),
      startedBlock(lines, 3),
    ]);
    expect(content[1].input).toEqual({ url: "https://example.com" });
    expect(content[0].caller).toEqual({ type: "direct" });
    expect(replayed).toEqual({ role: "assistant", content });
  });

  it("tool search then a client tool: the agent runs the tool and replays the whole turn", async () => {
    // Recorded: vercel/ai packages/anthropic/src/__fixtures__/anthropic-tool-search-regex.1.chunks.txt
    const [first, second] = messagesIn(fixture("anthropic-tool-search-regex.1"));
    const server = await serveTurns([anthropicSse(first!), anthropicSse(second!)]);
    const seen: unknown[] = [];
    const temperature = tool(
      "get_temp_data",
      "Weather data",
      z.object({ location: z.string() }),
      async (input) => {
        seen.push(input);
        return "64°F, partly cloudy";
      },
    );
    const { result } = await collect(
      createBareAgent({ model: claude(server), tools: [temperature] }),
    );
    expect(seen).toEqual([{ location: "San Francisco, CA" }]);
    expect(result.result).toMatch(/^Here's the current weather data for San Francisco:/);
    const [, assistant, results] = server.requests[1]!.body.messages;
    expect(assistant).toEqual({
      role: "assistant",
      content: [
        {
          ...startedBlock(first!, 0),
          input: { pattern: "weather|SF|San Francisco|forecast|temperature|climate", limit: 10 },
        },
        startedBlock(first!, 1),
        {
          type: "text",
          text: "Great! I found a weather tool. Let me get the current weather data for San Francisco.",
        },
        { ...startedBlock(first!, 3), input: { location: "San Francisco, CA" } },
      ],
    });
    expect(results.content[0]).toMatchObject({
      type: "tool_result",
      tool_use_id: "toolu_01UmPwkecewaEpMupy2ywk8b",
      content: "64°F, partly cloudy",
    });
    expect(result.usage).toEqual({
      // Priced: the provider's default model is in MODEL_PRICES.
      costUsd: expect.any(Number),
      inputTokens: 1681 + 1071,
      outputTokens: 163 + 67,
      cacheReadInputTokens: 0,
      cacheCreationInputTokens: 0,
    });
  });

  it("programmatic tool calling, cut into 7-byte writes: emoji in a server tool's input survive", async () => {
    // Recorded: vercel/ai packages/anthropic/src/__fixtures__/anthropic-programmatic-tool-calling.1.chunks.txt (its first message)
    const lines = fixture("anthropic-programmatic-tool-calling.1.first-message");
    const server = await serveTurns([anthropicSse(lines)], 7);
    const events = await streamModel(claude(server));
    const final = events.at(-1)!;
    if (final.type !== "message") throw new Error("no final message");
    const code = streamedInput(lines, 1) as { code: string };
    expect(code.code).toContain("🏆 GAME OVER:");
    const text = eventsOf(lines, 0)
      .filter((event) => event.delta?.type === "text_delta")
      .map((event) => event.delta.text)
      .join("");
    expect(final.message.content).toEqual([
      { type: "text", text },
      { ...startedBlock(lines, 1), input: code },
      startedBlock(lines, 2),
    ]);
    // The client tool the code called: its input came whole in content_block_start.
    expect(events.filter((event) => event.type === "tool_call")).toEqual([
      {
        type: "tool_call",
        id: "toolu_019jKkXz4jAdwHweHBw92CVY",
        name: "rollDie",
        input: { player: "player1" },
      },
    ]);
    expect(final.stopReason).toBe("tool_use");
  });

  it("thinking with its signature, CRLF framing, comments, cut into 7-byte writes: replayed unchanged", async () => {
    // Recorded: vercel/ai packages/anthropic/src/__fixtures__/anthropic-clear-thinking.1.chunks.txt
    const lines = fixture("anthropic-clear-thinking.1");
    const server = await serveTurns(
      [anthropicSse(lines, { crlf: true, comment: "keep-alive" }), NEXT_ANTHROPIC],
      7,
    );
    const { events, final, replayed } = await turnAndReplay(claude(server), server);
    const signature = eventsOf(lines, 0).find((event) => event.delta?.type === "signature_delta")
      .delta.signature;
    const thinking =
      "The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185";
    expect(final.message.content).toEqual([
      { type: "thinking", thinking, signature },
      { type: "text", text: "925 ÷ 5 = 185" },
    ]);
    expect(events.filter((event) => event.type === "thinking_delta")).toHaveLength(10);
    expect(final.usage).toEqual({
      inputTokens: 69,
      outputTokens: 53,
      cacheReadInputTokens: 0,
      cacheCreationInputTokens: 0,
    });
    expect(replayed.content[0]).toEqual({ type: "thinking", thinking, signature });
  });

  it("redacted thinking is kept and replayed as it came", async () => {
    // The stream of vercel/ai packages/anthropic/src/anthropic-language-model.test.ts,
    // "should stream redacted reasoning" (a test stream in the API's documented shape).
    const lines = [
      '{"type":"message_start","message":{"id":"msg_01KfpJoAEabmH2iHRRFjQMAG","type":"message","role":"assistant","content":[],"model":"claude-3-haiku-20240307","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":17,"output_tokens":1}}}',
      '{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"redacted-thinking-data"}}',
      '{"type":"content_block_stop","index":0}',
      '{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}',
      '{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello, World!"}}',
      '{"type":"content_block_stop","index":1}',
      '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":227}}',
      '{"type":"message_stop"}',
    ];
    const server = await serveTurns([anthropicSse(lines), NEXT_ANTHROPIC]);
    const { final, replayed } = await turnAndReplay(claude(server), server);
    const content = [
      { type: "redacted_thinking", data: "redacted-thinking-data" },
      { type: "text", text: "Hello, World!" },
    ];
    expect(final.message.content).toEqual(content);
    expect(final.usage).toMatchObject({ inputTokens: 17, outputTokens: 227 });
    expect(replayed).toEqual({ role: "assistant", content });
  });
});

describe("openai-compatible: recorded streams", () => {
  // Recorded: vercel/ai packages/openai/src/chat/__fixtures__/azure-model-router.1.chunks.txt
  const azure = fixture("azure-model-router.1");

  it("Azure: content-filter chunks, a usage chunk with empty choices, then [DONE]", async () => {
    const server = await serveTurns([openaiSse(azure)]);
    const { result } = await collect(createBareAgent({ model: gpt(server) }));
    expect(result.result).toBe("Capital of Denmark.");
    expect(result.usage).toEqual({
      // Priced: the provider's default model is in MODEL_PRICES.
      costUsd: expect.any(Number),
      inputTokens: 15,
      outputTokens: 78,
      cacheReadInputTokens: 0,
      cacheCreationInputTokens: 0,
    });
  });

  it("Azure's content-filter chunk after the finish_reason does not undo the finish", async () => {
    // The trailing chunk of vercel/ai packages/openai/src/chat/openai-chat-language-model.test.ts,
    // "should stream text after Azure content filter chunks".
    const trailing =
      '{"choices":[{"content_filter_offsets":{},"content_filter_results":{},"finish_reason":null,"index":0}],"created":0,"id":"","model":"","object":""}';
    const lines = [...azure.slice(0, -1), trailing, azure.at(-1)!];
    const server = await serveTurns([openaiSse(lines, { done: false })]);
    const { result } = await collect(createBareAgent({ model: gpt(server) }));
    expect(result).toMatchObject({ subtype: "success", result: "Capital of Denmark." });
  });

  it("a stream that closes after the finish_reason and the usage chunk, without [DONE], is complete", async () => {
    const server = await serveTurns([openaiSse(azure, { done: false })]);
    const { result } = await collect(createBareAgent({ model: gpt(server) }));
    expect(result).toMatchObject({ subtype: "success", result: "Capital of Denmark." });
    expect(result.usage.outputTokens).toBe(78);
  });

  it.each([
    [
      "before the finish_reason",
      azure.slice(0, -2),
      "The model's stream ended without [DONE] before every choice had a finish_reason: the turn is incomplete.",
    ],
    [
      "after the finish_reason but before the usage chunk",
      azure.slice(0, -1),
      "The model's stream ended without [DONE] and without its usage chunk: the turn is incomplete.",
    ],
  ])("a stream that closes %s is a broken connection", async (_when, lines, message) => {
    const server = await serveTurns([openaiSse(lines, { done: false })]);
    const { result } = await collect(createBareAgent({ model: gpt(server) }));
    expect(result).toMatchObject({ subtype: "error_during_execution" });
    expect(result.error).toEqual({ name: "APIConnectionError", message, attempts: 1 });
  });

  it("DeepSeek tool call, CRLF framing, OpenRouter comments, cut into 7-byte writes", async () => {
    // Recorded: vercel/ai packages/deepseek/src/chat/__fixtures__/deepseek-tool-call.chunks.txt
    const lines = fixture("deepseek-tool-call");
    const server = await serveTurns(
      [
        openaiSse(lines, { crlf: true, comment: "OPENROUTER PROCESSING" }),
        openaiText("It is sunny."),
      ],
      7,
    );
    const seen: unknown[] = [];
    const weather = tool(
      "weather",
      "Weather",
      z.object({ location: z.string() }),
      async (input) => {
        seen.push(input);
        return "sunny";
      },
    );
    const { result } = await collect(
      createBareAgent({ model: gpt(server, { replayReasoning: true }), tools: [weather] }),
    );
    expect(seen).toEqual([{ location: "San Francisco" }]);
    expect(result.result).toBe("It is sunny.");
    // Usage came in the finish chunk; cached tokens are prompt_cache_hit_tokens.
    expect(result.steps[0]!.usage).toEqual({
      // Priced: the provider's default model is in MODEL_PRICES.
      costUsd: expect.any(Number),
      inputTokens: 19,
      outputTokens: 83,
      cacheReadInputTokens: 320,
      cacheCreationInputTokens: 0,
    });
    const reasoning = lines
      .map((line) => JSON.parse(line).choices[0]?.delta?.reasoning_content)
      .filter((part) => typeof part === "string")
      .join("");
    const replayed: any[] = server.requests[1]!.body.messages;
    const at = replayed.findIndex((message) => message.role === "assistant");
    const [assistant, answer] = replayed.slice(at);
    expect(assistant).toEqual({
      role: "assistant",
      content: null,
      reasoning_content: reasoning,
      tool_calls: [
        {
          id: "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
          type: "function",
          function: { name: "weather", arguments: '{"location":"San Francisco"}' },
        },
      ],
    });
    expect(answer).toEqual({
      role: "tool",
      tool_call_id: "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
      content: "sunny",
    });
  });
});
