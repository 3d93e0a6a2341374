/**
 * Reading the SSE bytes (RELIABILITY P11): malformed data is a `ProtocolError`, never retried;
 * events and multi-byte characters split across chunks decode exactly; CRLF line endings work.
 */
import { createBareAgent, ProtocolError } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { closeMockServers } from "../support/servers.ts";
import { collect, echoTool, FAST, ofType, PROTOCOLS, serve, streamModel } from "./helpers.ts";

afterEach(closeMockServers);

const UNICODE = "naïve café — 日本語 🎉 Ωmega ok";

describe.each(PROTOCOLS)("$name: decoding the stream", (protocol) => {
  const { make } = protocol;
  const notJson = "The model's stream sent data that is not a JSON object: ";

  it("P11: invalid JSON in a data line is a ProtocolError, not retried", async () => {
    const server = await serve([{ text: "one two three", malformed: protocol.afterWords(1) }]);
    const agent = createBareAgent({ model: make(server.url, FAST) });
    const { events, result } = await collect(agent);
    expect(server.requests).toHaveLength(1);
    expect(ofType(events, "retry")).toEqual([]);
    expect(result).toMatchObject({ subtype: "error_during_execution", isError: true });
    expect(result.error!.name).toBe("ProtocolError");
    expect(result.error!.message.startsWith(notJson)).toBe(true);
    expect(result.messages.at(-1)).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "one " }],
      incomplete: true,
    });
  });

  it("P11: malformed data before any content is not retried either", async () => {
    const server = await serve([
      { text: "never", malformed: { after: 0, data: "not json at all" } },
    ]);
    const error = await streamModel(make(server.url, { ...FAST, maxRetries: 3 })).catch(
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as Error).message).toBe(`${notJson}not json at all`);
    expect(server.requests).toHaveLength(1);
  });

  it("P11: a stream written one byte at a time decodes multi-byte text exactly", async () => {
    const server = await serve([{ text: UNICODE, chunkBytes: 1 }]);
    const agent = createBareAgent({ model: make(server.url, FAST) });
    const { events, result } = await collect(agent);
    const deltas = ofType(events, "text_delta").map((event) => event.text);
    expect(deltas).toEqual(["naïve ", "café ", "— ", "日本語 ", "🎉 ", "Ωmega ", "ok"]);
    expect(result.result).toBe(UNICODE);
  });

  it("P11: tool input split byte by byte is assembled exactly", async () => {
    const server = await serve([
      { toolCalls: [{ name: "echo", input: { text: UNICODE } }], chunkBytes: 1 },
      { text: "done" },
    ]);
    const seen: string[] = [];
    const agent = createBareAgent({ model: make(server.url, FAST), tools: [echoTool(seen)] });
    const { result } = await collect(agent);
    expect(seen).toEqual([UNICODE]);
    expect(result.result).toBe("done");
  });

  it("P11: CRLF line endings, in pieces of 3 bytes, work", async () => {
    const server = await serve([
      {
        thinking: "think first",
        text: UNICODE,
        crlf: true,
        chunkBytes: 3,
        usage: { inputTokens: 9, outputTokens: 4 },
      },
    ]);
    const events = await streamModel(make(server.url, FAST));
    const text = events.flatMap((event) => (event.type === "text_delta" ? [event.text] : []));
    expect(text.join("")).toBe(UNICODE);
    const thinking = events.flatMap((event) =>
      event.type === "thinking_delta" ? [event.thinking] : [],
    );
    expect(thinking.join("")).toBe("think first");
    expect(events.at(-1)).toMatchObject({
      type: "message",
      stopReason: "end_turn",
      usage: { inputTokens: 9, outputTokens: 4 },
    });
  });
});

describe("openai: DeepSeek's usage fields", () => {
  it("reads prompt_cache_hit_tokens as cache reads, and subtracts them from prompt_tokens", async () => {
    const chunk = (fields: object) => `data: ${JSON.stringify(fields)}\n\n`;
    const body = [
      chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "hi" } }] }),
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }),
      chunk({
        choices: [],
        usage: {
          prompt_tokens: 120,
          completion_tokens: 8,
          prompt_cache_hit_tokens: 100,
          prompt_cache_miss_tokens: 20,
        },
      }),
      "data: [DONE]\n\n",
    ].join("");
    const server = await serve([{ rawBody: body, contentType: "text/event-stream" }]);
    const events = await streamModel(PROTOCOLS[1]!.make(server.url, FAST));
    expect(events.at(-1)).toEqual({
      type: "message",
      message: { role: "assistant", content: [{ type: "text", text: "hi" }] },
      stopReason: "end_turn",
      usage: {
        inputTokens: 20,
        outputTokens: 8,
        cacheReadInputTokens: 100,
        cacheCreationInputTokens: 0,
      },
    });
  });
});
