/**
 * The Anthropic wire takes turns that alternate and are never empty (the API refuses others,
 * and mockServer with it): consecutive messages of one role, such as a user message added after
 * a batch's results, go as one turn; an assistant reply with nothing in it is left out.
 */
import { anthropic, type Message } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { closeMockServers, closeRawServers, rawServer } from "../support/servers.ts";
import { bodies, serve, streamModel } from "./helpers.ts";
import { anthropicReply, anthropicText, event, firstTurn, writeSse } from "./raw-server.ts";

afterEach(closeMockServers);
afterEach(closeRawServers);

async function send(messages: Message[]) {
  const server = await serve(() => ({ text: "fine" }));
  const model = anthropic({ baseURL: server.url, apiKey: "test", maxRetries: 0 });
  const events = await streamModel(model, { messages });
  return { events, sent: bodies(server)[0].messages };
}

describe("anthropic: the turns on the wire", () => {
  it("joins consecutive messages of one role into one turn, in order", async () => {
    const { events, sent } = await send([
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_1", name: "echo", input: {} }],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "ok" }] },
      { role: "user", content: "and also this" },
    ]);
    expect(events.at(-1)).toMatchObject({ type: "message", stopReason: "end_turn" });
    expect(sent).toHaveLength(3);
    expect(sent[2]).toEqual({
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_1", content: "ok" },
        { type: "text", text: "and also this", cache_control: { type: "ephemeral" } },
      ],
    });
  });

  it("leaves out an assistant reply with nothing in it, joining the user turns around it", async () => {
    const { events, sent } = await send([
      { role: "user", content: "first" },
      { role: "assistant", content: [] },
      { role: "user", content: "second" },
    ]);
    expect(events.at(-1)).toMatchObject({ type: "message" });
    expect(sent).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "first" },
          { type: "text", text: "second", cache_control: { type: "ephemeral" } },
        ],
      },
    ]);
  });

  it("keeps no cache breakpoint a server put on a block: those are the client's to set", async () => {
    const marked = { type: "ephemeral" };
    const server = await rawServer((request, response) => {
      if (!firstTurn(request)) return writeSse(response, anthropicReply(anthropicText(0, "ok")));
      writeSse(
        response,
        anthropicReply([
          event("content_block_start", {
            index: 0,
            content_block: { type: "redacted_thinking", data: "opaque", cache_control: marked },
          }),
          event("content_block_stop", { index: 0 }),
          ...anthropicText(1, "hi"),
        ]),
      );
    });
    const model = anthropic({ baseURL: server.url, apiKey: "test", maxRetries: 0 });
    const events = await streamModel(model);
    const reply = events.at(-1);
    if (reply?.type !== "message") throw new Error("no reply");
    const content = [
      { type: "redacted_thinking", data: "opaque" },
      { type: "text", text: "hi" },
    ];
    expect(reply.message.content).toEqual(content);
    await streamModel(model, {
      messages: [{ role: "user", content: "a" }, reply.message, { role: "user", content: "b" }],
    });
    expect(server.requests[1]!.body.messages[1]).toEqual({ role: "assistant", content });
  });
});
