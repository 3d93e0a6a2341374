/**
 * mockServer's `trickleMs`: a stream that never finishes but never falls silent either, so only
 * a total deadline ends it (RELIABILITY contract 5). Read here at the byte level.
 */
import { createParser } from "eventsource-parser";
import { type MockProtocol, type MockServer, type MockTurn, mockServer } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { closeMockServers, openMockServer } from "../support/servers.ts";
import { bodyFor, endpoint, headersFor } from "./mock-helpers.ts";

afterEach(closeMockServers);

/** Reads the stream's events until `count` of them arrived, then hangs up. */
async function firstEvents(url: string, protocol: MockProtocol, count: number) {
  const controller = new AbortController();
  const response = await fetch(endpoint(url, protocol), {
    method: "POST",
    headers: headersFor(protocol),
    body: JSON.stringify(bodyFor(protocol, { stream: true, includeUsage: true })),
    signal: controller.signal,
  });
  const events: { event?: string; data: any }[] = [];
  const parser = createParser({
    onEvent: (message) =>
      events.push({
        event: message.event,
        data: message.data === "[DONE]" ? message.data : JSON.parse(message.data),
      }),
  });
  const decoder = new TextDecoder();
  const reader = response.body!.getReader();
  while (events.length < count) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.feed(decoder.decode(value, { stream: true }));
  }
  controller.abort();
  await reader.cancel().catch(() => {});
  return events;
}

function serve(turn: MockTurn): Promise<MockServer> {
  return openMockServer({ script: [turn] });
}

describe("mockServer: trickleMs", () => {
  it("anthropic: after the last block's content, more input JSON every trickleMs, never the stop", async () => {
    const server = await serve({
      toolCalls: [{ id: "toolu_t", name: "echo", input: { text: "a" } }],
      trickleMs: 5,
    });
    // message_start, ping, content_block_start, 4 input_json_deltas, then the trickle.
    const events = await firstEvents(server.url, "anthropic", 7 + 20);
    const trickled = events.slice(7);
    expect(trickled).toHaveLength(20);
    for (const event of trickled) {
      expect(event).toEqual({
        event: "content_block_delta",
        data: {
          type: "content_block_delta",
          index: 0,
          delta: { type: "input_json_delta", partial_json: " " },
        },
      });
    }
  });

  it("openai: before the finish_reason, more text every trickleMs, never the finish", async () => {
    const server = await serve({ text: "one two", trickleMs: 5 });
    // The role chunk, two words, then the trickle.
    const events = await firstEvents(server.url, "openai", 3 + 20);
    const trickled = events.slice(3);
    expect(trickled).toHaveLength(20);
    for (const event of trickled) {
      expect(event.data.choices).toEqual([
        { index: 0, delta: { content: "." }, logprobs: null, finish_reason: null },
      ]);
    }
  });

  it("is checked strictly: a positive number, and a turn with something to add to", async () => {
    await expect(mockServer({ script: [{ text: "x", trickleMs: 0 }] })).rejects.toThrow(
      "mockServer(): script[0]: trickleMs must be a positive number of milliseconds, received 0.",
    );
    await expect(mockServer({ script: [{ trickleMs: 10 }] })).rejects.toThrow(
      "mockServer(): script[0]: trickleMs keeps adding to the turn's last block: give the turn text, thinking or toolCalls.",
    );
  });
});
