/**
 * google(): Gemini's native API through the real HTTP client against the mock server's Gemini
 * wire: streaming, tool loops whose thought signatures go back byte for byte on their parts,
 * typed errors for blocked answers and HTTP failures, usage.
 */
import {
  BadRequestError,
  ContentFilterError,
  createBareAgent,
  google,
  InternalServerError,
  ProtocolError,
  RateLimitError,
} from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { closeMockServers } from "../support/servers.ts";
import {
  bodies,
  collect,
  echoTool,
  FAST,
  ofType,
  RETRY_SOON,
  serve,
  streamModel,
} from "./helpers.ts";

afterEach(closeMockServers);

const make = (url: string, options = {}) =>
  google({ baseURL: url, apiKey: "test", model: "gemini-3-flash", ...FAST, ...options });

describe("google(): Gemini's native API", () => {
  it("streams text to the streamGenerateContent endpoint with the key in x-goog-api-key", async () => {
    const server = await serve([
      { text: "Hello there, world", usage: { inputTokens: 9, outputTokens: 4 } },
    ]);
    const agent = createBareAgent({ model: make(server.url), systemPrompt: "Be brief." });
    const { events, result } = await collect(agent, "hi");
    expect(ofType(events, "text_delta").map((event) => event.text)).toEqual([
      "Hello ",
      "there, ",
      "world",
    ]);
    expect(result).toMatchObject({ subtype: "success", result: "Hello there, world" });
    expect(result.usage).toMatchObject({ inputTokens: 9, outputTokens: 4 });
    const [request] = server.requests;
    expect(request!.protocol).toBe("gemini");
    expect(request!.path).toBe("/v1beta/models/gemini-3-flash:streamGenerateContent?alt=sse");
    expect(request!.headers["x-goog-api-key"]).toBe("test");
    expect(request!.body).toEqual({
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
      systemInstruction: { parts: [{ text: "Be brief." }] },
    });
  });

  it("runs a five-turn tool loop, every thought signature sent back on its part, byte for byte", async () => {
    const script = [1, 2, 3, 4].map((turn) => ({
      thinking: `Thinking about step ${turn}`,
      toolCalls: [
        { name: "echo", input: { text: `a${turn}` } },
        { name: "echo", input: { text: `b${turn}` } },
      ],
    }));
    const server = await serve([...script, { thinking: "Done now", text: "all done" }]);
    const seen: string[] = [];
    const agent = createBareAgent({
      model: make(server.url),
      tools: [echoTool(seen, { safe: true })],
    });
    const { events, result } = await collect(agent, "go");
    expect(result).toMatchObject({ subtype: "success", result: "all done", numTurns: 5 });
    expect(seen.sort()).toEqual(["a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4"]);
    expect(ofType(events, "thinking_delta").length).toBeGreaterThan(0);
    // Every request after the first carries each earlier turn's signature on its first call.
    const sent = bodies(server);
    expect(sent).toHaveLength(5);
    sent.forEach((body, index) => {
      const model = body.contents.filter((content: any) => content.role === "model");
      expect(model).toHaveLength(index);
      model.forEach((content: any, turn: number) => {
        const calls = content.parts.filter((part: any) => part.functionCall);
        expect(calls.map((part: any) => part.functionCall.args.text)).toEqual([
          `a${turn + 1}`,
          `b${turn + 1}`,
        ]);
        expect(calls[0].thoughtSignature).toMatch(/^mocksig_/);
        expect(calls[1].thoughtSignature).toBeUndefined();
        // Gemini gave no ids: none go back.
        expect(calls[0].functionCall.id).toBeUndefined();
      });
    });
    // The signatures of the streams, as received, are the ones sent back.
    const last = sent.at(-1).contents;
    const signatures = last
      .filter((content: any) => content.role === "model")
      .map(
        (content: any) => content.parts.find((part: any) => part.thoughtSignature).thoughtSignature,
      );
    const stored = result.messages
      .filter((message) => message.role === "assistant")
      .slice(0, 4)
      .map(
        (message) =>
          (message.content as any[]).find((block) => block.providerData?.thoughtSignature)
            .providerData.thoughtSignature,
      );
    expect(signatures).toEqual(stored);
    // Results go back as functionResponse parts, in call order, by name.
    const answers = last[2].parts;
    expect(answers).toEqual([
      { functionResponse: { name: "echo", response: { output: "echo: a1" } } },
      { functionResponse: { name: "echo", response: { output: "echo: b1" } } },
    ]);
    // The final answer's signature came on an empty text part: kept, and in the transcript.
    const final = result.messages.at(-1)!.content as any[];
    expect(final.at(-1)).toMatchObject({
      type: "text",
      text: "",
      providerData: { wire: "gemini" },
    });
  });

  it("refuses (as Gemini does) a second turn whose call lost its signature", async () => {
    const server = await serve([
      { thinking: "hmm", toolCalls: [{ name: "echo", input: { text: "x" } }] },
      { text: "ok" },
    ]);
    const model = make(server.url);
    const first = await streamModel(model, { tools: [echoSpec] });
    const reply = first.at(-1) as any;
    const call = reply.message.content.find((block: any) => block.type === "tool_use");
    const { providerData: _gone, ...stripped } = call;
    const messages = [
      { role: "user" as const, content: "hi" },
      { role: "assistant" as const, content: [stripped] },
      {
        role: "user" as const,
        content: [{ type: "tool_result" as const, tool_use_id: call.id, content: "done" }],
      },
    ];
    await expect(streamModel(model, { tools: [echoSpec], messages })).rejects.toThrow(
      BadRequestError,
    );
    // skein sends Google's placeholder for a call with no signature it knows of (Gemini 3
    // takes it); the mock refuses it on a call it signed: the signature was lost.
    await expect(streamModel(model, { tools: [echoSpec], messages })).rejects.toThrow(
      /skip_thought_signature_validator placeholder instead/,
    );
    // With it, the same request goes through.
    messages[1] = { role: "assistant", content: [call] };
    const second = await streamModel(model, { tools: [echoSpec], messages });
    expect(second.at(-1)).toMatchObject({ type: "message", stopReason: "end_turn" });
  });

  it("ends with a ContentFilterError naming a SAFETY finish, never an empty answer", async () => {
    const server = await serve([{ text: "I was", stopReason: "SAFETY" }]);
    const agent = createBareAgent({ model: make(server.url) });
    const result = await agent.run("hi");
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error).toMatchObject({ name: "ContentFilterError" });
    expect(result.error!.message).toMatch(/SAFETY/);
    await expect(streamModel(make(server.url))).rejects.toBeInstanceOf(ContentFilterError);
  });

  it("retries a 429 and a 503 before content, with Gemini's error bodies", async () => {
    const server = await serve([{ status: 429, times: 1, headers: RETRY_SOON, text: "fine" }]);
    const events = await streamModel(make(server.url));
    expect(events[0]).toMatchObject({
      type: "retry",
      error: { name: "RateLimitError", status: 429 },
    });
    expect(events.at(-1)).toMatchObject({ type: "message" });
    const failing = await serve([{ status: 503, headers: RETRY_SOON }]);
    const error = await streamModel(make(failing.url, { maxRetries: 1 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect((error as Error).message).toMatch(/503 UNAVAILABLE: The model is overloaded/);
    const limited = await serve([{ status: 429 }]);
    const limit = await streamModel(make(limited.url, { maxRetries: 0 })).catch((e: unknown) => e);
    expect(limit).toBeInstanceOf(RateLimitError);
    expect((limit as RateLimitError).type).toBe("RESOURCE_EXHAUSTED");
  });

  it("reads a stream closed before any finishReason as a broken connection", async () => {
    // Text was passed on: the cut fails the turn, it is not retried.
    const server = await serve([{ text: "one two three", endAfter: -1 }]);
    await expect(streamModel(make(server.url))).rejects.toThrow(/before a finishReason/);
    expect(server.requests).toHaveLength(1);
    // Nothing was passed on: retried, and the second attempt answers.
    const cut = await serve([{ text: "whole", endAfter: 0, times: 1 }]);
    const events = await streamModel(make(cut.url));
    expect(events.map((event) => event.type)).toEqual(["retry", "text_delta", "message"]);
  });

  it("retries MALFORMED_FUNCTION_CALL with no call, then ends with a ProtocolError naming it", async () => {
    const server = await serve([{ stopReason: "MALFORMED_FUNCTION_CALL" }]);
    const error = await streamModel(make(server.url, { maxRetries: 1 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as Error).message).toMatch(/MALFORMED_FUNCTION_CALL/);
    expect(server.requests).toHaveLength(2);
  });
});

const echoSpec = {
  name: "echo",
  description: "Echo",
  input_schema: { type: "object", properties: { text: { type: "string" } } },
};

describe("google(): cost", () => {
  it("prices a Gemini run from MODEL_PRICES, thoughts billed as output; an unpriced model has no cost", async () => {
    const thinking = "Weighing which city to check first";
    const usage = { inputTokens: 1_000, outputTokens: 300, cacheReadInputTokens: 4_000 };
    const server = await serve([
      { thinking, toolCalls: [{ name: "echo", input: { text: "a" } }], usage },
      { text: "done", usage },
    ]);
    const agent = createBareAgent({
      model: make(server.url, { model: "gemini-2.5-flash" }),
      tools: [echoTool()],
    });
    const { result } = await collect(agent, "go");
    expect(result.subtype).toBe("success");
    // The first reply's output is candidates and thoughts together; the thoughts are reported.
    const [first, second] = result.steps.map((step) => step.usage!);
    expect(first).toMatchObject({
      inputTokens: 1_000,
      outputTokens: 300,
      cacheReadInputTokens: 4_000,
    });
    expect(first!.reasoningTokens).toBe(Math.ceil(thinking.length / 4));
    expect(second!.reasoningTokens).toBeUndefined();
    // gemini-2.5-flash: $0.30/M input, $2.50/M output, $0.03/M cache reads.
    const turn = (1_000 * 0.3 + 300 * 2.5 + 4_000 * 0.03) / 1_000_000;
    expect(first!.costUsd).toBeCloseTo(turn, 12);
    expect(result.usage.costUsd).toBeCloseTo(2 * turn, 12);
    expect(result.totalUsage.costUsd).toBeCloseTo(2 * turn, 12);

    // A Gemini model the table does not know: undefined, never 0.
    const other = await serve([{ text: "ok", usage }]);
    const unpriced = await collect(
      createBareAgent({ model: make(other.url, { model: "gemini-9-experimental" }) }),
    );
    expect(unpriced.result.subtype).toBe("success");
    expect(unpriced.result.usage.outputTokens).toBe(300);
    expect(unpriced.result.usage.costUsd).toBeUndefined();
    expect(unpriced.result.totalUsage.costUsd).toBeUndefined();
    expect(unpriced.result.steps[0]!.usage?.costUsd).toBeUndefined();
  });
});
