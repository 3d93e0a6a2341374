/**
 * skein's providers hand the engine the events of one network read at once (issue 10, speed).
 * The engine must see the same events, in the same order and with the same retry decisions, as
 * when every byte arrives in a read of its own: each case sends the same bytes both ways.
 */
import type { ServerResponse } from "node:http";
import { type AgentEvent, createBareAgent } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { collect, echoTool, FAST, PROTOCOLS } from "./helpers.ts";
import {
  anthropicReply,
  anthropicText,
  anthropicTool,
  chunk,
  closeRawServers,
  DONE,
  event,
  firstTurn,
  openaiCalls,
  openaiText,
  rawServer,
} from "./raw-server.ts";

afterEach(closeRawServers);

type Delivery = "whole" | "byte by byte";

/** Writes `text` as an SSE answer: in one write, or one byte per write with a pause between. */
async function answer(response: ServerResponse, text: string, delivery: Delivery): Promise<void> {
  response.writeHead(200, { "content-type": "text/event-stream" });
  if (delivery === "whole") {
    response.end(text);
    return;
  }
  for (const byte of Buffer.from(text)) {
    response.write(Buffer.from([byte]));
    await new Promise((resolve) => setImmediate(resolve));
  }
  response.end();
}

/** Each protocol's reply of some text and one `echo` call, and its final text reply. */
const replies = {
  anthropic: {
    call: anthropicReply(
      [
        ...anthropicText(0, "Let me "),
        event("content_block_delta", { index: 0, delta: { type: "text_delta", text: "echo." } }),
        ...anthropicTool(1, "toolu_1", "echo", '{"text":"hi"}'),
      ],
      "tool_use",
    ),
    final: anthropicReply(anthropicText(0, "all done")),
  },
  openai: {
    call:
      chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "Let me " } }] }) +
      chunk({ choices: [{ index: 0, delta: { content: "echo." } }] }) +
      openaiCalls(
        [
          {
            index: 0,
            id: "call_1",
            type: "function",
            function: { name: "echo", arguments: '{"text":"hi"}' },
          },
        ],
        "tool_calls",
      ) +
      DONE,
    final: openaiText("all done"),
  },
};

/** What a run's events say, without ids and timings: what the engine was handed, in order. */
function outline(events: AgentEvent[]): unknown[] {
  return events.flatMap((item): unknown[] => {
    switch (item.type) {
      case "text_delta":
        return [["text", item.text]];
      case "tool_start":
      case "tool_end":
        return [[item.type, item.name]];
      case "message":
        return [["message", item.message.content]];
      case "retry":
        return [["retry", item.attempt]];
      case "result":
        return [["result", item.subtype, item.result ?? item.error?.name]];
      default:
        return [[item.type]];
    }
  });
}

describe.each(PROTOCOLS)("$name: one network read at a time", ({ make, name }) => {
  async function run(delivery: Delivery, reply: (first: boolean) => string) {
    const server = await rawServer((request, response) => {
      void answer(response, reply(firstTurn(request)), delivery);
    });
    const seen: string[] = [];
    const agent = createBareAgent({
      model: make(server.url, { ...FAST, maxRetries: 2 }),
      tools: [echoTool(seen)],
    });
    const { events, result } = await collect(agent);
    return { events: outline(events), result, seen, requests: server.requests.length };
  }

  it("a tool turn read whole gives the engine the same events, in the same order, as read byte by byte", async () => {
    const reply = (first: boolean) => (first ? replies[name].call : replies[name].final);
    const whole = await run("whole", reply);
    const split = await run("byte by byte", reply);
    expect(whole.events).toEqual(split.events);
    expect(whole.result).toMatchObject({ subtype: "success", result: "all done" });
    expect(whole.seen).toEqual(["hi"]);
    expect(whole.events).toContainEqual(["text", "Let me "]);
    const at = (kind: string, detail?: string) =>
      whole.events.findIndex(
        (entry) =>
          (entry as string[])[0] === kind &&
          (detail === undefined || (entry as string[])[1] === detail),
      );
    expect(at("text", "echo.")).toBeGreaterThan(at("text", "Let me "));
    expect(at("tool_start")).toBeGreaterThan(at("text", "echo."));
    expect(whole.requests).toBe(2);
  });

  it("an error event in the same read as text: the text was passed on, so the turn is not retried", async () => {
    const failing =
      name === "anthropic"
        ? [
            event("message_start", { message: { usage: { input_tokens: 1, output_tokens: 0 } } }),
            ...anthropicText(0, "partial"),
            event("error", { error: { type: "overloaded_error", message: "busy" } }),
          ].join("")
        : chunk({ choices: [{ index: 0, delta: { content: "partial" } }] }) +
          chunk({ error: { message: "busy", type: "server_error" } });
    const whole = await run("whole", () => failing);
    const split = await run("byte by byte", () => failing);
    expect(whole.events).toEqual(split.events);
    expect(whole.requests).toBe(1);
    expect(whole.events).toContainEqual(["text", "partial"]);
    expect(whole.result.subtype).toBe("error_during_execution");
    expect(whole.seen).toEqual([]);
  });

  it("an error event alone in a read before any text is retried, as before", async () => {
    let calls = 0;
    const reply = () => {
      calls++;
      if (calls === 1)
        return name === "anthropic"
          ? event("error", { error: { type: "overloaded_error", message: "busy" } })
          : chunk({ error: { message: "busy", type: "server_error" } });
      return replies[name].final;
    };
    const whole = await run("whole", reply);
    expect(whole.requests).toBe(2);
    expect(whole.result).toMatchObject({ subtype: "success", result: "all done" });
    expect(whole.events.filter((entry) => (entry as string[])[0] === "retry")).toHaveLength(1);
  });
});
