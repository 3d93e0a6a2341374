/**
 * The provider conformance suite (STYLE point 8): both protocols, through the real HTTP clients
 * against the mock server, on the happy paths: streaming text, tool loops, usage, stop reasons
 * and thinking. Protocol differences are expected values, never skipped tests.
 */
import { createHash } from "node:crypto";
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

describe.each(PROTOCOLS)("$name: conformance", (protocol) => {
  const { make } = protocol;

  it("streams text_delta events in order, before the result, that make the final text", async () => {
    const server = await serve([{ text: "Hello there, streaming world" }]);
    const agent = createBareAgent({ model: make(server.url, FAST) });
    const { events, result } = await collect(agent);
    expect(events.map((event) => event.type)).toEqual([
      "run_start",
      "turn_start",
      "text_delta",
      "text_delta",
      "text_delta",
      "text_delta",
      "message",
      "turn_end",
      "result",
    ]);
    const deltas = ofType(events, "text_delta").map((event) => event.text);
    expect(deltas).toEqual(["Hello ", "there, ", "streaming ", "world"]);
    expect(deltas.join("")).toBe(result.result);
    expect(result).toMatchObject({
      subtype: "success",
      isError: false,
      result: "Hello there, streaming world",
      numTurns: 1,
    });
    expect(result.messages.at(-1)).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "Hello there, streaming world" }],
    });
  });

  it("model.stream() yields the deltas, then one final message", async () => {
    const server = await serve([
      { text: "a b", usage: { inputTokens: 7, outputTokens: 2, cacheReadInputTokens: 0 } },
    ]);
    const events = await streamModel(make(server.url, FAST));
    expect(events).toEqual([
      { type: "text_delta", text: "a " },
      { type: "text_delta", text: "b" },
      {
        type: "message",
        message: { role: "assistant", content: [{ type: "text", text: "a b" }] },
        stopReason: "end_turn",
        usage: {
          inputTokens: 7,
          outputTokens: 2,
          cacheReadInputTokens: 0,
          cacheCreationInputTokens: 0,
        },
      },
    ]);
  });

  it("runs a tool loop over three turns, inputs assembled from the streamed JSON fragments", async () => {
    const tricky = 'héllo "quoted" {not: json} 日本 🎉';
    const server = await serve([
      { toolCalls: [{ name: "echo", input: { text: tricky } }] },
      {
        text: "Two more.",
        toolCalls: [
          { name: "echo", input: { text: "second" } },
          { name: "echo", input: { text: "third" } },
        ],
      },
      { text: "All done." },
    ]);
    const seen: string[] = [];
    const agent = createBareAgent({ model: make(server.url, FAST), tools: [echoTool(seen)] });
    const { result } = await collect(agent);

    expect(seen).toEqual([tricky, "second", "third"]);
    expect(result).toMatchObject({ subtype: "success", result: "All done.", numTurns: 3 });
    expect(server.requests).toHaveLength(3);
    expect(result.steps.map((step) => step.toolCalls.map((call) => call.result.content))).toEqual([
      [`echo: ${tricky}`],
      ["echo: second", "echo: third"],
      [],
    ]);
  });

  it("sends each tool_result back in the protocol's wire shape", async () => {
    const server = await serve([
      { toolCalls: [{ name: "echo", input: { text: "a" } }] },
      { text: "ok" },
    ]);
    const agent = createBareAgent({ model: make(server.url, FAST), tools: [echoTool()] });
    await collect(agent);
    const messages = bodies(server)[1].messages;
    if (protocol.name === "anthropic") {
      expect(messages).toEqual([
        {
          role: "user",
          content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }],
        },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "toolu_mock_1_1", name: "echo", input: { text: "a" } }],
        },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "toolu_mock_1_1",
              content: "echo: a",
              is_error: false,
              cache_control: { type: "ephemeral" },
            },
          ],
        },
      ]);
    } else {
      expect(messages).toEqual([
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_mock_1_1",
              type: "function",
              function: { name: "echo", arguments: '{"text":"a"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "call_mock_1_1", content: "echo: a" },
      ]);
    }
  });

  it("reports usage per turn on steps[i].usage and summed on result.usage", async () => {
    const server = await serve([
      {
        toolCalls: [{ name: "echo", input: { text: "a" } }],
        usage: {
          inputTokens: 100,
          outputTokens: 20,
          cacheReadInputTokens: 30,
          cacheCreationInputTokens: 40,
        },
      },
      {
        text: "ok",
        usage: {
          inputTokens: 7,
          outputTokens: 3,
          cacheReadInputTokens: 130,
          cacheCreationInputTokens: 5,
        },
      },
    ]);
    const agent = createBareAgent({ model: make(server.url, FAST), tools: [echoTool()] });
    const { result } = await collect(agent);
    // OpenAI has no cache writes: prompt_tokens (input + cached) minus cached_tokens is the input.
    const writes = (tokens: number) => (protocol.name === "anthropic" ? tokens : 0);
    expect(result.steps.map((step) => step.usage)).toEqual([
      {
        inputTokens: 100,
        outputTokens: 20,
        cacheReadInputTokens: 30,
        cacheCreationInputTokens: writes(40),
      },
      {
        inputTokens: 7,
        outputTokens: 3,
        cacheReadInputTokens: 130,
        cacheCreationInputTokens: writes(5),
      },
    ]);
    expect(result.usage).toEqual({
      inputTokens: 107,
      outputTokens: 23,
      cacheReadInputTokens: 160,
      cacheCreationInputTokens: writes(45),
    });
  });

  it("maps stop reasons onto steps[i].stopReason", async () => {
    const server = await serve([
      { toolCalls: [{ name: "echo", input: { text: "a" } }] },
      { text: "stopped by a sequence", stopReason: "stop_sequence" },
    ]);
    const agent = createBareAgent({ model: make(server.url, FAST), tools: [echoTool()] });
    const { result } = await collect(agent);
    // OpenAI has no stop_sequence: the mock sends "stop", which reads back as end_turn.
    expect(result.steps.map((step) => step.stopReason)).toEqual([
      "tool_use",
      protocol.name === "anthropic" ? "stop_sequence" : "end_turn",
    ]);

    const cut = await serve([{ text: "a reply cut short", stopReason: "max_tokens" }]);
    const cutRun = await collect(createBareAgent({ model: make(cut.url, FAST) }));
    expect(cutRun.result.steps.map((step) => step.stopReason)).toEqual(["max_tokens"]);
    expect(cutRun.result).toMatchObject({ subtype: "success", result: "a reply cut short" });
  });

  it("streams thinking as thinking_delta events and keeps it in the transcript", async () => {
    const thinking = "Let me check the weather";
    const server = await serve([
      { thinking, toolCalls: [{ name: "echo", input: { text: "a" } }] },
      { text: "ok" },
    ]);
    const agent = createBareAgent({ model: make(server.url, FAST), tools: [echoTool()] });
    const { events, result } = await collect(agent);
    expect(ofType(events, "thinking_delta").map((event) => event.thinking)).toEqual([
      "Let ",
      "me ",
      "check ",
      "the ",
      "weather",
    ]);
    const block = (result.messages[1]!.content as { type: string }[])[0];
    if (protocol.name === "anthropic") {
      const signature = `mocksig_${createHash("sha256").update(thinking).digest("base64url").slice(0, 32)}`;
      expect(block).toEqual({ type: "thinking", thinking, signature });
      // Sent back unchanged, signature and all, as the Anthropic API requires in a tool loop.
      expect(bodies(server)[1].messages[1].content[0]).toEqual({
        type: "thinking",
        thinking,
        signature,
      });
    } else {
      expect(block).toEqual({ type: "thinking", thinking });
    }
  });
});
