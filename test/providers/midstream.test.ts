/**
 * Failures inside a 200 stream (RELIABILITY P6-P8, P12, P13; DESIGN: the mid-stream contract):
 * a turn is retried only while nothing of it was passed on; after that the run fails, the
 * partial text is kept as an `incomplete: true` assistant message, and its tool calls never run.
 */
import { createBareAgent } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { closeMockServers } from "../support/servers.ts";
import {
  bodies,
  collect,
  echoTool,
  FAST,
  ofType,
  PROTOCOLS,
  serve,
  streamModel,
} from "./helpers.ts";

afterEach(closeMockServers);

describe.each(PROTOCOLS)("$name: mid-stream failures", (protocol) => {
  const { make } = protocol;
  const anthropicProtocol = protocol.name === "anthropic";
  // The error event the mock sends: Anthropic's overloaded_error, OpenAI's in-stream error (no status).
  const streamError = anthropicProtocol
    ? { name: "OverloadedError", message: "overloaded_error: Overloaded" }
    : {
        name: "InternalServerError",
        message:
          "The model's stream reported an error: The server is overloaded. Please try again later.",
      };

  async function agentRun(turns: Parameters<typeof serve>[0], maxRetries = 2) {
    const server = await serve(turns);
    const seen: string[] = [];
    const agent = createBareAgent({
      model: make(server.url, { ...FAST, maxRetries }),
      tools: [echoTool(seen)],
    });
    return { server, seen, ...(await collect(agent)) };
  }

  it("P6: an error event before any content is retried, and nothing of that attempt is passed on", async () => {
    const { server, events, result } = await agentRun([
      { text: "second try", errorEvent: protocol.afterWords(0), times: 1 },
    ]);
    expect(server.requests).toHaveLength(2);
    expect(result).toMatchObject({ subtype: "success", result: "second try" });
    expect(events.map((event) => event.type)).toEqual([
      "run_start",
      "turn_start",
      "retry",
      "text_delta",
      "text_delta",
      "message",
      "turn_end",
      "result",
    ]);
    expect(ofType(events, "retry")[0]).toMatchObject({ attempt: 1, error: streamError });
    expect(ofType(events, "retry")[0]!.error.status).toBeUndefined();
  });

  it("P6: a persistent error event at position 0 fails the run after 1 + maxRetries attempts", async () => {
    const { server, result } = await agentRun([{ text: "never", errorEvent: 0 }], 1);
    expect(server.requests).toHaveLength(2);
    expect(result).toMatchObject({ subtype: "error_during_execution", isError: true });
    expect(result.error).toMatchObject(streamError);
    expect(result.messages).toEqual([{ role: "user", content: "hi" }]);
  });

  it("P7: text, then an error event: the run fails once, keeping the partial text as incomplete", async () => {
    const { server, events, result } = await agentRun([
      { text: "one two three four", errorEvent: protocol.afterWords(2) },
    ]);
    expect(server.requests).toHaveLength(1);
    expect(ofType(events, "retry")).toEqual([]);
    expect(ofType(events, "text_delta").map((event) => event.text)).toEqual(["one ", "two "]);
    expect(result).toMatchObject({ subtype: "error_during_execution", isError: true });
    expect(result.error).toMatchObject(streamError);
    expect(result.messages).toEqual([
      { role: "user", content: "hi" },
      { role: "assistant", content: [{ type: "text", text: "one two " }], incomplete: true },
    ]);
    expect(ofType(events, "message")).toEqual([]);
  });

  it("P7: the tool calls of a reply that failed after its text are never run", async () => {
    const { server, seen, events, result } = await agentRun([
      {
        text: "Let me look.",
        toolCalls: [{ name: "echo", input: { text: "a" } }],
        errorEvent: -1,
      },
    ]);
    expect(server.requests).toHaveLength(1);
    expect(seen).toEqual([]);
    // A call announced early may show tool_start; it then ends as cancelled, never run.
    expect(ofType(events, "tool_end").map((event) => [event.callId, event.isError])).toEqual(
      ofType(events, "tool_start").map((event) => [event.callId, true]),
    );
    expect(result.steps).toEqual([]);
    expect(result.subtype).toBe("error_during_execution");
    expect(result.messages.at(-1)).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "Let me look." }],
      incomplete: true,
    });
  });

  it("P7: an incomplete message is sent to the provider without its marker", async () => {
    const server = await serve([{ text: "half of it", errorEvent: protocol.afterWords(1) }]);
    const agent = createBareAgent({ model: make(server.url, FAST) });
    const { result } = await collect(agent);
    expect(result.messages[1]).toMatchObject({ incomplete: true });
    // The next request made from that transcript, as a continued session would send it.
    const next = await serve([{ text: "unused" }, { text: "recovered" }]);
    const messages = [...result.messages, { role: "user" as const, content: "go on" }];
    const events = await streamModel(make(next.url, FAST), { messages });
    expect(events.at(-1)).toMatchObject({ type: "message" });
    const sent = bodies(next)[0].messages;
    expect(JSON.stringify(sent)).not.toContain("incomplete");
    expect(sent[1].role).toBe("assistant");
  });

  it("P8: a connection cut after a tool call opened, before anything was passed on, is retried", async () => {
    const { server, seen, events, result } = await agentRun([
      {
        toolCalls: [{ name: "echo", input: { text: "once" } }],
        cutAfter: protocol.toolOpenedAt,
        times: 1,
      },
      { text: "done" },
    ]);
    expect(server.requests.map((request) => [request.turn, request.attempt])).toEqual([
      [0, 1],
      [0, 2],
      [1, 1],
    ]);
    expect(ofType(events, "retry").map((event) => event.error.name)).toEqual([
      "APIConnectionError",
    ]);
    // Only the complete retry's call ran.
    expect(seen).toEqual(["once"]);
    expect(result).toMatchObject({ subtype: "success", result: "done" });
  });

  it("P8: a cut after text and an opened tool call fails the run; that call never runs", async () => {
    const { server, seen, result } = await agentRun([
      {
        text: "Let me look.",
        toolCalls: [{ name: "echo", input: { text: "a" } }],
        cutAfter: protocol.toolOpenedAfterText(3),
      },
    ]);
    expect(server.requests).toHaveLength(1);
    expect(seen).toEqual([]);
    expect(result.error).toMatchObject({ name: "APIConnectionError" });
    expect(result.error!.message).toMatch(
      /^The connection to the model API at http:\/\/127\.0\.0\.1:\d+ broke while the reply was streaming \(/,
    );
    expect(result.messages.at(-1)).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "Let me look." }],
      incomplete: true,
    });
  });

  // Anthropic: before message_stop. OpenAI: before the chunk with the finish_reason (the usage
  // chunk and [DONE] follow it); a stream that closes after both is complete (recorded-streams).
  const beforeStop = anthropicProtocol ? -1 : -3;

  it("P12: a stream that ends without its stop event is a failed turn, never a finished one", async () => {
    const { server, result } = await agentRun([{ text: "almost all of it", endAfter: beforeStop }]);
    expect(server.requests).toHaveLength(1);
    expect(result).toMatchObject({ subtype: "error_during_execution", isError: true });
    expect(result.error).toMatchObject({
      name: "APIConnectionError",
      message: anthropicProtocol
        ? "The model's stream ended before message_stop: the turn is incomplete."
        : "The model's stream ended without [DONE] before every choice had a finish_reason: the turn is incomplete.",
    });
    expect(result.messages.at(-1)).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "almost all of it" }],
      incomplete: true,
    });
  });

  it("P12: the tool calls of a stream without its stop event never run", async () => {
    const { server, seen, result } = await agentRun(
      [
        { toolCalls: [{ name: "echo", input: { text: "a" } }], endAfter: beforeStop },
        { text: "no" },
      ],
      1,
    );
    expect(seen).toEqual([]);
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error!.name).toBe("APIConnectionError");
    // Anthropic announced the complete call (message_delta came), so the turn was passed on and
    // not retried; OpenAI announces calls only at the stream's end, so nothing was passed on:
    // retried once.
    expect(server.requests).toHaveLength(anthropicProtocol ? 1 : 2);
  });

  it("P12: a stream that ends early, before anything was passed on, is retried", async () => {
    const { server, result } = await agentRun([{ text: "whole", endAfter: 1, times: 1 }]);
    expect(server.requests).toHaveLength(2);
    expect(result).toMatchObject({ subtype: "success", result: "whole" });
  });

  it("P13: a max_tokens stop that cuts a tool call: the cut call is answered with an error, the complete one runs", async () => {
    const { server, seen, result } = await agentRun([
      {
        toolCalls: [
          { name: "echo", input: { text: "complete" } },
          { name: "echo", input: { text: "this one is cut in half" } },
        ],
        stopReason: "max_tokens",
      },
      { text: "I will retry with less." },
    ]);
    expect(seen).toEqual(["complete"]);
    expect(result).toMatchObject({ subtype: "success", numTurns: 2 });
    expect(result.steps[0]!.stopReason).toBe("max_tokens");
    const reason = anthropicProtocol
      ? "the reply hit max_tokens while writing it"
      : "the reply hit the length limit while writing it";
    const text = `Your call to "echo" was not run: its input was incomplete or not valid JSON (${reason}). Call it again with complete JSON input, smaller if it was cut off.`;
    const sent = bodies(server)[1].messages;
    if (anthropicProtocol) {
      expect(sent[2].content).toEqual([
        {
          type: "tool_result",
          tool_use_id: "toolu_mock_1_1",
          content: "echo: complete",
          is_error: false,
        },
        {
          type: "tool_result",
          tool_use_id: "toolu_mock_1_2",
          content: text,
          is_error: true,
          cache_control: { type: "ephemeral" },
        },
      ]);
    } else {
      expect(sent.slice(2)).toEqual([
        { role: "tool", tool_call_id: "call_mock_1_1", content: "echo: complete" },
        { role: "tool", tool_call_id: "call_mock_1_2", content: `Error: ${text}` },
      ]);
    }
  });

  it("P13: model.stream() reports the cut call on the final message and never as a tool_call", async () => {
    const server = await serve([
      {
        toolCalls: [{ id: "c1", name: "echo", input: { text: "x".repeat(40) } }],
        stopReason: "max_tokens",
      },
    ]);
    const events = await streamModel(make(server.url, FAST));
    expect(events.filter((event) => event.type === "tool_call")).toEqual([]);
    const final = events.at(-1);
    expect(final).toMatchObject({
      type: "message",
      stopReason: "max_tokens",
      incompleteToolCalls: [{ id: "c1", name: "echo" }],
    });
  });
});
