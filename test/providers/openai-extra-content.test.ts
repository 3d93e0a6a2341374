/**
 * Chat Completions servers that put `extra_content` on a tool call (Gemini's OpenAI-compatible
 * endpoint carries its thought signature there): kept on the call, sent back unchanged on that
 * call to the same server, and to no other.
 */
import { createBareAgent, openai } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { closeMockServers } from "../support/servers.ts";
import { bodies, echoTool, FAST, serve } from "./helpers.ts";

afterEach(closeMockServers);

const EXTRA = { google: { thought_signature: "Eo0HCooHAb4+9vut/sig==" } };

/** A streamed reply with two calls, the first carrying `extra_content`, as Gemini's endpoint sends it. */
function callsWithExtraContent(): string {
  const chunk = (delta: unknown, finish: string | null = null) =>
    `data: ${JSON.stringify({
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      model: "gemini-3-pro-preview",
      choices: [{ index: 0, delta, finish_reason: finish }],
    })}\n\n`;
  return [
    chunk({
      role: "assistant",
      tool_calls: [
        {
          index: 0,
          id: "function-call-1",
          type: "function",
          function: { name: "echo", arguments: '{"text":"one"}' },
          extra_content: EXTRA,
        },
      ],
    }),
    chunk({
      tool_calls: [
        {
          index: 1,
          id: "function-call-2",
          type: "function",
          function: { name: "echo", arguments: '{"text":"two"}' },
        },
      ],
    }),
    chunk({}, "tool_calls"),
    `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 5, completion_tokens: 2 } })}\n\n`,
    "data: [DONE]\n\n",
  ].join("");
}

describe("extra_content on Chat Completions tool calls", () => {
  it("is kept on the call and sent back unchanged, on that call only", async () => {
    const server = await serve([
      { rawBody: callsWithExtraContent(), contentType: "text/event-stream" },
      { text: "done" },
    ]);
    const seen: string[] = [];
    const agent = createBareAgent({
      model: openai({ baseURL: `${server.url}/v1`, apiKey: "test", ...FAST }),
      tools: [echoTool(seen)],
    });
    const result = await agent.run("go");
    expect(result).toMatchObject({ subtype: "success", result: "done" });
    expect(seen).toEqual(["one", "two"]);
    const [first, second] = bodies(server)[1].messages[1].tool_calls;
    expect(first).toEqual({
      id: "function-call-1",
      type: "function",
      function: { name: "echo", arguments: '{"text":"one"}' },
      extra_content: EXTRA,
    });
    expect(second).not.toHaveProperty("extra_content");
    // The transcript keeps it, marked with where it came from.
    const call = (result.messages[1]!.content as any[])[0];
    expect(call.providerData).toEqual({
      wire: "openai-chat",
      origin: server.url,
      extraContent: EXTRA,
    });
  });

  it("goes to no other server", async () => {
    const server = await serve([
      { rawBody: callsWithExtraContent(), contentType: "text/event-stream" },
      { text: "done" },
    ]);
    const first = await createBareAgent({
      model: openai({ baseURL: `${server.url}/v1`, apiKey: "test", ...FAST }),
      tools: [echoTool()],
    }).run("go");
    const other = await serve(() => ({ text: "elsewhere" }));
    const moved = await createBareAgent({
      model: openai({ baseURL: `${other.url}/v1`, apiKey: "test", ...FAST }),
      tools: [echoTool()],
    }).run("next", { messages: first.messages });
    expect(moved.result).toBe("elsewhere");
    expect(JSON.stringify(bodies(other)[0])).not.toContain("extra_content");
  });
});
