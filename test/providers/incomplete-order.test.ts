import { anthropic, createBareAgent, type Model, openai, tool } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { closeRawServers, rawServer } from "../support/servers.ts";
import { chunk, writeSse } from "./raw-server.ts";

// A reply whose first tool call has input that is not JSON and whose second is fine: the
// providers must not announce the second one early (it would overtake the first), and the
// engine answers the first as incomplete and runs the second, in call order.

afterEach(closeRawServers);

async function serve(
  handler: (path: string, body: { messages: { role: string }[] }) => string,
): Promise<string> {
  const server = await rawServer((request, response) =>
    writeSse(response, handler(request.url, request.body)),
  );
  return server.url;
}

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

function anthropicReply(first: boolean): string {
  if (!first) {
    return [
      sse("message_start", { type: "message_start", message: { usage: { input_tokens: 1 } } }),
      sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
      sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: "done" } }),
      sse("content_block_stop", { index: 0 }),
      sse("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: 1 } }),
      sse("message_stop", { type: "message_stop" }),
    ].join("");
  }
  return [
    sse("message_start", { type: "message_start", message: { usage: { input_tokens: 1 } } }),
    sse("content_block_start", {
      index: 0,
      content_block: { type: "tool_use", id: "c1", name: "look", input: {} },
    }),
    sse("content_block_delta", {
      index: 0,
      delta: { type: "input_json_delta", partial_json: '{"what": ' },
    }),
    sse("content_block_stop", { index: 0 }),
    sse("content_block_start", {
      index: 1,
      content_block: { type: "tool_use", id: "c2", name: "look", input: {} },
    }),
    sse("content_block_delta", {
      index: 1,
      delta: { type: "input_json_delta", partial_json: '{"what": "b"}' },
    }),
    sse("content_block_stop", { index: 1 }),
    sse("message_delta", { delta: { stop_reason: "tool_use" }, usage: { output_tokens: 1 } }),
    sse("message_stop", { type: "message_stop" }),
  ].join("");
}

function openaiReply(first: boolean): string {
  if (!first)
    return `${chunk({ choices: [{ index: 0, delta: { content: "done" }, finish_reason: "stop" }] })}data: [DONE]\n\n`;
  const call = (index: number, id: string, args: string) => ({
    index,
    id,
    function: { name: "look", arguments: args },
  });
  return [
    chunk({ choices: [{ index: 0, delta: { tool_calls: [call(0, "c1", '{"what": ')] } }] }),
    chunk({
      choices: [
        {
          index: 0,
          delta: { tool_calls: [call(1, "c2", '{"what": "b"}')] },
          finish_reason: "tool_calls",
        },
      ],
    }),
    "data: [DONE]\n\n",
  ].join("");
}

describe.each([
  {
    name: "anthropic",
    reply: anthropicReply,
    make: (url: string): Model => anthropic({ baseURL: url, apiKey: "k" }),
  },
  {
    name: "openai",
    reply: openaiReply,
    make: (url: string): Model => openai({ baseURL: `${url}/v1`, apiKey: "k" }),
  },
])("$name: a call with invalid JSON before a valid one", ({ reply, make }) => {
  it("answers the first as incomplete, runs the second, and keeps tool_start in call order", async () => {
    // The first turn is the one with no assistant message yet (OpenAI's list may start with a system message).
    const url = await serve((_path, body) =>
      reply(!body.messages.some((message) => message.role === "assistant")),
    );
    const ran: string[] = [];
    const look = tool(
      "look",
      "Look",
      z.object({ what: z.string() }),
      ({ what }) => {
        ran.push(what);
        return `saw ${what}`;
      },
      { isConcurrencySafe: () => true },
    );
    const starts: string[] = [];
    let result: { subtype: string; messages: unknown[] } | undefined;
    for await (const event of createBareAgent({ model: make(url), tools: [look] }).stream("go")) {
      if (event.type === "tool_start") starts.push(event.callId);
      if (event.type === "result") result = event;
    }
    expect(starts).toEqual(["c1", "c2"]);
    expect(ran).toEqual(["b"]);
    expect(result?.subtype).toBe("success");
    const results = (
      result!.messages[2] as {
        content: { tool_use_id: string; is_error: boolean; content: string }[];
      }
    ).content;
    expect(results.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ["c1", true],
      ["c2", false],
    ]);
    expect(results[0]!.content).toMatch(/not valid JSON/);
  });
});
