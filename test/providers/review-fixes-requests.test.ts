/**
 * The provider review's fixes, part 2: what goes back on the wire (cleaned Anthropic blocks,
 * headers, OpenAI reasoning replay, token limit field, strict tool schemas, text prompts), one
 * signal per run, and attempts on a connection error. Each test failed before the fix.
 */
import { getEventListeners } from "node:events";
import { createServer } from "node:net";
import { createBareAgent, defineTool, openai } from "skein";
import { afterEach, describe, expect, it, vi } from "vitest";
import { closeMockServers, closeRawServers, rawServer } from "../support/servers.ts";
import { collect, echoTool, FAST, PROTOCOLS, serve } from "./helpers.ts";
import {
  anthropicReply,
  anthropicText,
  anthropicTool,
  chunk,
  DONE,
  event,
  firstTurn,
  writeSse,
} from "./raw-server.ts";

afterEach(async () => {
  vi.unstubAllGlobals();
  await Promise.all([closeMockServers(), closeRawServers()]);
});

const [ANTHROPIC, OPENAI] = PROTOCOLS as [(typeof PROTOCOLS)[0], (typeof PROTOCOLS)[0]];

/** The assistant message of the second request. */
function secondAssistant(requests: { body: any }[]): any {
  return requests[1]!.body.messages.find(
    (message: { role: string }) => message.role === "assistant",
  );
}

describe("anthropic: the reply's blocks as they go back", () => {
  it("an empty text block and a thinking block without signature: neither goes back as such", async () => {
    const server = await rawServer((request, response) => {
      if (!firstTurn(request)) return writeSse(response, anthropicReply(anthropicText(0, "done")));
      const thinking = [
        event("content_block_start", {
          index: 0,
          content_block: { type: "thinking", thinking: "" },
        }),
        event("content_block_delta", {
          index: 0,
          delta: { type: "thinking_delta", thinking: "hmm" },
        }),
        event("content_block_stop", { index: 0 }),
      ];
      const call = anthropicTool(2, "c1", "echo", '{"text":"a"}');
      writeSse(
        response,
        anthropicReply([...thinking, ...anthropicText(1, ""), ...call], "tool_use"),
      );
    });
    const seen: string[] = [];
    const agent = createBareAgent({
      model: ANTHROPIC.make(server.url, FAST),
      tools: [echoTool(seen)],
    });
    const { result } = await collect(agent);
    expect(result).toMatchObject({ subtype: "success", result: "done" });
    expect(seen).toEqual(["a"]);
    const blocks = secondAssistant(server.requests).content as any[];
    expect(blocks.map((block) => block.type)).toEqual(["thinking", "tool_use"]);
    expect(blocks[0]).toEqual({ type: "thinking", thinking: "hmm" });
    expect(JSON.stringify(server.requests[1]!.body)).not.toContain('"signature":""');
  });

  it("content_block_start carrying the whole tool input, with no deltas, gives the handler that input", async () => {
    const server = await rawServer((request, response) => {
      if (!firstTurn(request)) return writeSse(response, anthropicReply(anthropicText(0, "done")));
      const start = event("content_block_start", {
        index: 0,
        content_block: { type: "tool_use", id: "c1", name: "echo", input: { text: "whole" } },
      });
      writeSse(
        response,
        anthropicReply([start, event("content_block_stop", { index: 0 })], "tool_use"),
      );
    });
    const seen: string[] = [];
    const agent = createBareAgent({
      model: ANTHROPIC.make(server.url, FAST),
      tools: [echoTool(seen)],
    });
    const { result } = await collect(agent);
    expect(seen).toEqual(["whole"]);
    expect(result.subtype).toBe("success");
    expect(secondAssistant(server.requests).content[0]).toMatchObject({ input: { text: "whole" } });
  });
});

describe("header overrides are case-insensitive", () => {
  it('anthropic: "Anthropic-Version" replaces the default: one anthropic-version is sent', async () => {
    const server = await serve([{ text: "a" }]);
    const model = ANTHROPIC.make(server.url, { headers: { "Anthropic-Version": "2099-01-01" } });
    await collect(createBareAgent({ model }));
    expect(server.requests[0]!.headers["anthropic-version"]).toBe("2099-01-01");
  });

  it('openai: "Authorization" replaces the key\'s header', async () => {
    const server = await serve([{ text: "a" }]);
    const model = OPENAI.make(server.url, { headers: { Authorization: "Bearer other" } });
    await collect(createBareAgent({ model }));
    expect(server.requests[0]!.headers.authorization).toBe("Bearer other");
  });
});

describe("openai: request body", () => {
  const turns = [
    { thinking: "let me think", toolCalls: [{ name: "echo", input: { text: "a" } }] },
    { text: "done" },
  ];

  it("replayReasoning: true sends thinking back as reasoning_content; by default, none (local URL)", async () => {
    const server = await serve(turns);
    const url = `${server.url}/v1`;
    for (const replayReasoning of [true, undefined]) {
      const model = openai({
        baseURL: url,
        apiKey: "k",
        ...(replayReasoning ? { replayReasoning } : {}),
      });
      await collect(createBareAgent({ model, tools: [echoTool()] }));
    }
    const assistants = server.requests
      .filter((request) => request.turn === 1)
      .map((request) => request.body.messages.find((message: any) => message.role === "assistant"));
    expect(assistants).toHaveLength(2);
    expect(assistants[0].reasoning_content).toBe("let me think");
    expect(assistants[1]).not.toHaveProperty("reasoning_content");
  });

  it("maxTokens is max_tokens to a local server, max_completion_tokens to api.openai.com", async () => {
    const server = await serve([{ text: "a" }]);
    await collect(createBareAgent({ model: OPENAI.make(server.url, { maxTokens: 123 }) }));
    expect(server.requests[0]!.body).toMatchObject({ max_tokens: 123 });
    expect(server.requests[0]!.body).not.toHaveProperty("max_completion_tokens");

    const sent: { url: string; body: any }[] = [];
    vi.stubGlobal("fetch", async (url: string | URL, init: RequestInit) => {
      sent.push({ url: String(url), body: JSON.parse(String(init.body)) });
      const text = chunk({
        choices: [{ index: 0, delta: { content: "hi" }, finish_reason: "stop" }],
      });
      return new Response(text + DONE, { headers: { "content-type": "text/event-stream" } });
    });
    const model = openai({
      baseURL: "https://api.openai.com/v1",
      apiKey: "k",
      maxTokens: 123,
      api: "chat",
    });
    const { result } = await collect(createBareAgent({ model }));
    expect(result.result).toBe("hi");
    expect(sent.map((request) => request.url)).toEqual([
      "https://api.openai.com/v1/chat/completions",
    ]);
    expect(sent[0]!.body).toMatchObject({ max_completion_tokens: 123 });
    expect(sent[0]!.body).not.toHaveProperty("max_tokens");
  });

  it("strictTools: an optional field sent as null reaches the handler absent; nested objects are closed", async () => {
    const server = await serve([
      { toolCalls: [{ name: "weather", input: { city: "x", unit: null, stops: null } }] },
      { text: "done" },
    ]);
    const seen: unknown[] = [];
    const weather = defineTool({
      id: "weather",
      description: "The weather",
      parameters: {
        type: "object",
        properties: {
          city: { type: "string" },
          unit: { type: "string" },
          stops: {
            type: "array",
            items: {
              type: "object",
              properties: { name: { type: "string" }, note: { type: "string" } },
              required: ["name"],
            },
          },
        },
        required: ["city"],
      },
      execute: (input) => {
        seen.push(input);
        return "sunny";
      },
    });
    const model = openai({ baseURL: `${server.url}/v1`, apiKey: "k", strictTools: true });
    const { result } = await collect(createBareAgent({ model, tools: [weather] }));
    expect(result.subtype).toBe("success");
    expect(seen).toHaveLength(1);
    expect(seen[0]).toStrictEqual({ city: "x" });
    const wire = server.requests[0]!.body.tools[0].function;
    expect(wire.strict).toBe(true);
    expect(wire.parameters).toMatchObject({
      additionalProperties: false,
      required: ["city", "unit", "stops"],
    });
    const stops = wire.parameters.properties.stops.anyOf[0];
    expect(stops.items).toMatchObject({ additionalProperties: false, required: ["name", "note"] });
    expect(stops.items.properties.note).toEqual({ anyOf: [{ type: "string" }, { type: "null" }] });
  });

  it("a user prompt of text blocks only is sent as a string", async () => {
    const server = await serve([{ text: "a" }]);
    const agent = createBareAgent({ model: OPENAI.make(server.url, FAST) });
    await agent.run([
      { type: "text", text: "hello" },
      { type: "text", text: "world" },
    ]);
    const user = server.requests[0]!.body.messages.find((message: any) => message.role === "user");
    expect(user.content).toBe("hello\nworld");
  });
});

describe("one signal per run", () => {
  async function watchWarnings(run: () => Promise<unknown>): Promise<string[]> {
    const warnings: string[] = [];
    const listener = (warning: Error) => warnings.push(warning.name);
    process.on("warning", listener);
    try {
      await run();
      // process warnings are emitted on a later tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("warning", listener);
    }
    return warnings.filter((name) => name === "MaxListenersExceededWarning");
  }

  async function concurrentAgent() {
    // A slow first byte keeps all 20 runs waiting for the model at once.
    const server = await serve([{ text: "ok", delayMs: 100 }]);
    return createBareAgent({ model: ANTHROPIC.make(server.url, FAST) });
  }

  it("20 concurrent runs without a signal: no MaxListenersExceededWarning", async () => {
    const agent = await concurrentAgent();
    const warnings = await watchWarnings(async () => {
      const results = await Promise.all(Array.from({ length: 20 }, () => agent.run("hi")));
      expect(results.map((result) => result.result)).toEqual(Array(20).fill("ok"));
    });
    expect(warnings).toEqual([]);
  });

  it("20 concurrent runs sharing one signal: no warning, and no listener left on it", async () => {
    const agent = await concurrentAgent();
    const controller = new AbortController();
    const warnings = await watchWarnings(async () => {
      const results = await Promise.all(
        Array.from({ length: 20 }, () => agent.run("hi", { signal: controller.signal })),
      );
      expect(results.map((result) => result.result)).toEqual(Array(20).fill("ok"));
    });
    expect(warnings).toEqual([]);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });
});

describe.each(PROTOCOLS)("$name: attempts on a connection error", (protocol) => {
  it("a closed port with maxRetries 1 reports attempts 2", async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const model = protocol.make(`http://127.0.0.1:${port}`, { ...FAST, maxRetries: 1 });
    const { result } = await collect(createBareAgent({ model }));
    expect(result.error).toMatchObject({ name: "APIConnectionError", attempts: 2 });
  });
});
