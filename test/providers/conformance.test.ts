/**
 * The provider conformance suite (STYLE point 8): every provider, through the real HTTP clients
 * against the mock server, on the happy paths: streaming text, tool loops, usage and its cost,
 * stop reasons, thinking and the reasoning setting. One table, one row per provider: protocol
 * differences are the row's expected values, never skipped tests. A new provider adds a row: the
 * four are Anthropic Messages, OpenAI Chat Completions, OpenAI Responses and Gemini.
 */
import { createHash } from "node:crypto";
import {
  ConfigurationError,
  createBareAgent,
  google,
  type Model,
  openai,
  type ReasoningSettings,
} from "skein";
import type { MockServer } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { closeMockServers } from "../support/servers.ts";
import {
  bodies,
  collect,
  echoTool,
  FAST,
  ofType,
  PROTOCOLS,
  type SharedOptions,
  serve,
  streamModel,
} from "./helpers.ts";

afterEach(closeMockServers);

interface ConformanceRow {
  name: string;
  make(url: string, options?: SharedOptions): Model;
  /** The second request of a one-call tool loop, read by the row: what it carries of the call and its result. */
  expectToolResultSent(server: MockServer): void;
  /** The protocol reports cache writes (else they read 0). */
  cacheWrites: boolean;
  /** The protocol has a stop-sequence stop reason (else it reads as end_turn). */
  stopSequence: boolean;
  /** The thinking of a reply before a call: how the transcript keeps it and the next request sends it. */
  expectThinkingKept(thinking: string, block: unknown, server: MockServer): void;
  /** A reasoning setting and what the row's request carries for it. */
  reasoning: { given: ReasoningSettings; expectSent(body: any): void };
  /** A reasoning setting the protocol cannot take (refused before any request). */
  reasoningRefused: ReasoningSettings;
}

const ANTHROPIC = PROTOCOLS.find((protocol) => protocol.name === "anthropic")!;
const CHAT = PROTOCOLS.find((protocol) => protocol.name === "openai")!;

const ROWS: ConformanceRow[] = [
  {
    name: "anthropic",
    make: ANTHROPIC.make,
    expectToolResultSent(server) {
      expect(bodies(server)[1].messages).toEqual([
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
    },
    cacheWrites: true,
    stopSequence: true,
    expectThinkingKept(thinking, block, server) {
      const signature = `mocksig_${createHash("sha256").update(thinking).digest("base64url").slice(0, 32)}`;
      expect(block).toEqual({ type: "thinking", thinking, signature });
      // Sent back unchanged, signature and all, as the Anthropic API requires in a tool loop.
      expect(bodies(server)[1].messages[1].content[0]).toEqual({
        type: "thinking",
        thinking,
        signature,
      });
    },
    reasoning: {
      given: { effort: "low" },
      expectSent(body) {
        // The documented budget of "low", added to max_tokens (FAST leaves the default 8192).
        expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
        expect(body.max_tokens).toBe(8192 + 2048);
      },
    },
    reasoningRefused: { effort: "high", summary: "auto" },
  },
  {
    name: "openai chat",
    make: CHAT.make,
    expectToolResultSent(server) {
      expect(bodies(server)[1].messages).toEqual([
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
    },
    cacheWrites: false,
    stopSequence: false,
    expectThinkingKept(thinking, block) {
      expect(block).toEqual({ type: "thinking", thinking });
    },
    reasoning: {
      given: { effort: "high" },
      expectSent(body) {
        expect(body.reasoning_effort).toBe("high");
      },
    },
    reasoningRefused: { effort: "low", budgetTokens: 2000 },
  },
  {
    name: "openai responses",
    make: (url, options) =>
      openai({ baseURL: `${url}/v1`, apiKey: "test", api: "responses", ...options }),
    expectToolResultSent(server) {
      const body = bodies(server)[1];
      expect(server.requests[1]!.path).toBe("/v1/responses");
      expect(body).toMatchObject({ store: false, include: ["reasoning.encrypted_content"] });
      expect(body.input).toEqual([
        { role: "user", content: [{ type: "input_text", text: "hi" }] },
        {
          type: "function_call",
          id: "fc_mock_1_1",
          call_id: "call_mock_1_1",
          name: "echo",
          arguments: '{"text":"a"}',
        },
        { type: "function_call_output", call_id: "call_mock_1_1", output: "echo: a" },
      ]);
    },
    cacheWrites: false,
    stopSequence: false,
    expectThinkingKept(thinking, block, server) {
      // A reasoning item: its summary as text, the item itself kept to be sent back whole.
      const item = {
        id: "rs_mock_1",
        type: "reasoning",
        encrypted_content: expect.stringMatching(/^gAAAAmock/),
        summary: [{ type: "summary_text", text: thinking }],
      };
      expect(block).toEqual({
        type: "reasoning",
        text: thinking,
        providerData: { wire: "openai-responses", origin: new URL(server.url).origin, item },
      });
      const sent = bodies(server)[1].input[1];
      expect(sent).toEqual((block as { providerData: { item: unknown } }).providerData.item);
    },
    reasoning: {
      given: { effort: "high", summary: "detailed" },
      expectSent(body) {
        expect(body.reasoning).toEqual({ effort: "high", summary: "detailed" });
      },
    },
    reasoningRefused: { effort: "low", budgetTokens: 2000 },
  },
  {
    name: "google gemini",
    make: (url, options) => google({ baseURL: url, apiKey: "test", ...options }),
    expectToolResultSent(server) {
      expect(server.requests[1]!.path).toBe(
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
      );
      // Gemini calls come without ids: the skein id stays home, the result goes back by name.
      expect(bodies(server)[1].contents).toEqual([
        { role: "user", parts: [{ text: "hi" }] },
        { role: "model", parts: [{ functionCall: { name: "echo", args: { text: "a" } } }] },
        {
          role: "user",
          parts: [{ functionResponse: { name: "echo", response: { output: "echo: a" } } }],
        },
      ]);
    },
    cacheWrites: false,
    stopSequence: false,
    expectThinkingKept(thinking, block, server) {
      // A thought part is thinking, marked as Gemini's own; the signature came on the call.
      expect(block).toEqual({
        type: "thinking",
        thinking,
        providerData: { wire: "gemini", origin: new URL(server.url).origin },
      });
      const signature = `mocksig_${createHash("sha256").update(thinking).digest("base64url").slice(0, 32)}`;
      const parts = bodies(server)[1].contents[1].parts;
      expect(parts.at(-1)).toEqual({
        functionCall: { name: "echo", args: { text: "a" } },
        thoughtSignature: signature,
      });
    },
    reasoning: {
      given: { effort: "low", summary: "auto" },
      expectSent(body) {
        expect(body.generationConfig.thinkingConfig).toEqual({
          thinkingLevel: "low",
          includeThoughts: true,
        });
      },
    },
    reasoningRefused: { effort: "xhigh" },
  },
];

describe.each(ROWS)("$name: conformance", (row) => {
  const { make } = row;

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
    row.expectToolResultSent(server);
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
    // A model with no price, so the usage is the tokens alone (the cost has its own test).
    const agent = createBareAgent({
      model: make(server.url, { ...FAST, model: "unpriced-mock" }),
      tools: [echoTool()],
    });
    const { result } = await collect(agent);
    // OpenAI has no cache writes: prompt_tokens (input + cached) minus cached_tokens is the input.
    const writes = (tokens: number) => (row.cacheWrites ? tokens : 0);
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
      row.stopSequence ? "stop_sequence" : "end_turn",
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
    row.expectThinkingKept(thinking, block, server);
  });

  it("prices usage: costUsd per step and summed, from MODEL_PRICES or the agent's pricing", async () => {
    const usage = {
      inputTokens: 10_000,
      outputTokens: 1_000,
      cacheReadInputTokens: 2_000,
      cacheCreationInputTokens: 0,
    };
    const server = await serve([
      { toolCalls: [{ name: "echo", input: { text: "a" } }], usage },
      { text: "ok", usage },
    ]);
    const agent = createBareAgent({
      model: make(server.url, { ...FAST, model: "house-model" }),
      tools: [echoTool()],
      pricing: { "house-model": { inputPerMTok: 2, outputPerMTok: 10, cacheReadPerMTok: 0.5 } },
    });
    const { result } = await collect(agent);
    // 10k input at $2/M, 1k output at $10/M, 2k cache reads at $0.50/M: $0.031 a turn.
    const [first, second] = result.steps.map((step) => step.usage?.costUsd);
    expect(first).toBeCloseTo(0.031, 12);
    expect(second).toBeCloseTo(0.031, 12);
    expect(result.usage.costUsd).toBeCloseTo(0.062, 12);
    expect(result.totalUsage.costUsd).toBeCloseTo(0.062, 12);

    // A model with no price: undefined, never 0.
    const unpriced = await serve([{ text: "ok", usage }]);
    const run = await collect(
      createBareAgent({ model: make(unpriced.url, { ...FAST, model: "no-such-price" }) }),
    );
    expect(run.result.usage.costUsd).toBeUndefined();
    expect(run.result.totalUsage.costUsd).toBeUndefined();
    expect(run.result.steps[0]!.usage?.costUsd).toBeUndefined();
  });

  it("maps modelSettings.reasoning onto the request, and refuses what the protocol cannot take before any request", async () => {
    const server = await serve([{ text: "ok" }, { text: "unused" }]);
    const agent = createBareAgent({
      model: make(server.url, FAST),
      modelSettings: { reasoning: row.reasoning.given },
    });
    await collect(agent);
    row.reasoning.expectSent(bodies(server)[0]);

    const refused = createBareAgent({
      model: make(server.url, FAST),
      modelSettings: { reasoning: row.reasoningRefused },
    });
    const { result } = await collect(refused);
    expect(result).toMatchObject({ subtype: "error_during_execution", isError: true });
    expect(result.error?.name).toBe(ConfigurationError.name);
    expect(result.error?.message).toMatch(
      /modelSettings\.reasoning\.(summary|budgetTokens|effort)/,
    );
    expect(server.requests).toHaveLength(1);
  });

  it("drops another provider's data: a foreign reasoning block and providerData are never sent", async () => {
    // The mock answers by the transcript's length: the given history holds the first turn.
    const server = await serve([{ text: "unused" }, { text: "ok" }]);
    const providerData = {
      wire: "elsewhere",
      origin: "https://other.example",
      thoughtSignature: "opaque",
      item: { id: "rs_x", type: "reasoning", encrypted_content: "opaque" },
    };
    const agent = createBareAgent({ model: make(server.url, FAST), tools: [echoTool()] });
    const { result } = await collect(agent, "go on", {
      messages: [
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: [
            { type: "reasoning", text: "thought", providerData },
            { type: "text", text: "calling", providerData },
            { type: "tool_use", id: "call_x", name: "echo", input: { text: "a" }, providerData },
          ],
        },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "call_x", content: "echo: a" }],
        },
      ],
    });
    expect(result.error).toBeUndefined();
    expect(result.subtype).toBe("success");
    const sent = JSON.stringify(bodies(server)[0]);
    expect(sent).not.toContain("opaque");
    expect(sent).not.toContain("elsewhere");
    expect(sent).toContain("calling");
  });

  it("does not retry a 429 that says the account is out of credit (insufficient_quota)", async () => {
    const server = await serve([
      {
        status: 429,
        error: { type: "insufficient_quota", message: "You exceeded your current quota." },
        headers: { "retry-after-ms": "5" },
      },
    ]);
    const { result } = await collect(createBareAgent({ model: make(server.url, FAST) }));
    expect(result.error).toMatchObject({ name: "RateLimitError", status: 429 });
    expect(result.error?.message).toContain("exceeded your current quota");
    expect(server.requests).toHaveLength(1);
  });
});
