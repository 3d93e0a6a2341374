/**
 * Model settings on the wire (design/interactive.md, "Model settings and transport"): each row of
 * the contract's table on both protocols, and the refusals made before any request, which reach
 * no server. Requests to the providers' own hosts go through a `fetch` that sends them to the
 * mock server instead, so a test sees what api.anthropic.com / api.openai.com would get.
 */
import { anthropic, ConfigurationError, type Model, type ModelRequest, openai } from "skein";
import type { MockServer } from "skein/testing";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { closeMockServers, openMockServer } from "../support/servers.ts";
import { FAST, PROTOCOLS, serve, streamModel } from "./helpers.ts";

beforeEach(() => {
  // The providers' own hosts, whatever the environment points to.
  vi.stubEnv("ANTHROPIC_BASE_URL", "");
  vi.stubEnv("OPENAI_BASE_URL", "");
});

afterEach(async () => {
  vi.unstubAllEnvs();
  await closeMockServers();
});

const TOOLS: ModelRequest["tools"] = [
  { name: "lookup", description: "Look a word up", input_schema: { type: "object" } },
  { name: "weather", description: "The weather", input_schema: { type: "object" } },
];

type Settings = NonNullable<ModelRequest["settings"]>;

/** A `fetch` that sends what was meant for the providers' own hosts to `server`, counting calls. */
function toMock(server: MockServer) {
  const calls: string[] = [];
  const send: typeof fetch = (input, init) => {
    const url = String(input);
    calls.push(url);
    const target = url
      .replace("https://api.anthropic.com", server.url)
      .replace("https://api.openai.com", server.url);
    return fetch(target, init);
  };
  return { calls, fetch: send };
}

/** The provider of `protocol` aimed at its own host, its requests answered by `server`. */
function ownHost(name: "anthropic" | "openai", server: MockServer, extra: object = {}) {
  const route = toMock(server);
  const options = { apiKey: "test", ...FAST, fetch: route.fetch, ...extra };
  const model = name === "anthropic" ? anthropic(options) : openai(options);
  return { model, calls: route.calls };
}

async function sent(model: Model, server: MockServer, request: Partial<ModelRequest>) {
  const before = server.requests.length;
  await streamModel(model, request);
  expect(server.requests.length).toBe(before + 1);
  return server.requests.at(-1)!.body;
}

/** The refusal `stream()` throws, before any request. */
async function refusal(model: Model, request: Partial<ModelRequest>): Promise<ConfigurationError> {
  const error = await streamModel(model, request).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ConfigurationError);
  return error as ConfigurationError;
}

describe.each(PROTOCOLS)("$name: model settings on the wire", (protocol) => {
  const anthropicWire = protocol.name === "anthropic";
  const make = (server: MockServer, options = {}) =>
    protocol.make(server.url, { ...FAST, ...options });

  it("sends nothing of its own when the request has no settings", async () => {
    const server = await serve([{ text: "a" }]);
    const body = await sent(make(server), server, { tools: TOOLS });
    for (const field of ["temperature", "top_p", "stop_sequences", "stop", "tool_choice"])
      expect(body).not.toHaveProperty(field);
  });

  it("temperature and topP: temperature / top_p", async () => {
    const server = await serve([{ text: "a" }]);
    const body = await sent(make(server), server, { settings: { temperature: 0.2, topP: 0.9 } });
    expect(body).toMatchObject({ temperature: 0.2, top_p: 0.9 });
  });

  it(`stopSequences: ${anthropicWire ? "stop_sequences" : "stop"}`, async () => {
    const server = await serve([{ text: "a" }]);
    const stops = ["END", "\n\nHuman:", "###", "STOP"];
    const body = await sent(make(server), server, { settings: { stopSequences: stops } });
    expect(body[anthropicWire ? "stop_sequences" : "stop"]).toEqual(stops);
    expect(body).not.toHaveProperty(anthropicWire ? "stop" : "stop_sequences");
  });

  const choices: [Settings["toolChoice"], unknown][] = anthropicWire
    ? [
        ["auto", { type: "auto" }],
        ["any", { type: "any" }],
        ["none", { type: "none" }],
        [{ name: "weather" }, { type: "tool", name: "weather" }],
      ]
    : [
        ["auto", "auto"],
        ["any", "required"],
        ["none", "none"],
        [{ name: "weather" }, { type: "function", function: { name: "weather" } }],
      ];
  it.each(choices)("toolChoice %j: tool_choice %j", async (toolChoice, wire) => {
    const server = await serve([{ text: "a" }]);
    const body = await sent(make(server), server, { tools: TOOLS, settings: { toolChoice } });
    expect(body.tool_choice).toEqual(wire);
  });

  it('toolChoice "required" from a caller of stream() means "any"', async () => {
    const server = await serve([{ text: "a" }]);
    const settings = { toolChoice: "required" } as unknown as Settings;
    const body = await sent(make(server), server, { tools: TOOLS, settings });
    expect(body.tool_choice).toEqual(anthropicWire ? { type: "any" } : "required");
  });

  it('toolChoice "auto" or "none" with no tools sends no tool_choice (both APIs refuse one without tools)', async () => {
    const server = await serve([{ text: "a" }, { text: "b" }]);
    for (const toolChoice of ["auto", "none"] as const) {
      const body = await sent(make(server), server, { settings: { toolChoice } });
      expect(body).not.toHaveProperty("tool_choice");
    }
  });

  if (anthropicWire) {
    it("maxOutputTokens: max_tokens, over the provider's maxTokens and its default", async () => {
      const server = await serve([{ text: "a" }]);
      const bodies = [
        await sent(make(server), server, {}),
        await sent(make(server, { maxTokens: 500 }), server, {}),
        await sent(make(server, { maxTokens: 500 }), server, {
          settings: { maxOutputTokens: 123 },
        }),
      ];
      expect(bodies.map((body) => body.max_tokens)).toEqual([8192, 500, 123]);
    });
  } else {
    it("maxOutputTokens: max_completion_tokens on api.openai.com, max_tokens elsewhere, over maxTokens", async () => {
      const server = await serve([{ text: "a" }]);
      const settings = { maxOutputTokens: 123 };
      const own = await sent(
        ownHost("openai", server, { maxTokens: 500, api: "chat" }).model,
        server,
        { settings },
      );
      expect(own.max_completion_tokens).toBe(123);
      expect(own).not.toHaveProperty("max_tokens");
      const compatible = await sent(make(server, { maxTokens: 500 }), server, { settings });
      expect(compatible.max_tokens).toBe(123);
      expect(compatible).not.toHaveProperty("max_completion_tokens");
      const unset = await sent(make(server, { maxTokens: 500 }), server, {});
      expect(unset.max_tokens).toBe(500);
      // The Responses API (OpenAI's own host by default): max_output_tokens.
      const responses = await sent(ownHost("openai", server, { maxTokens: 500 }).model, server, {
        settings,
      });
      expect(responses.max_output_tokens).toBe(123);
      expect(responses).not.toHaveProperty("max_completion_tokens");
    });
  }

  it("all settings at once, as the mock server's request log shows them", async () => {
    const server = await serve([{ text: "a" }]);
    const settings: Settings = {
      temperature: 0,
      topP: 1,
      stopSequences: ["END"],
      toolChoice: { name: "lookup" },
      maxOutputTokens: 64,
    };
    const body = await sent(make(server), server, { tools: TOOLS, settings });
    expect(body).toMatchObject(
      anthropicWire
        ? {
            temperature: 0,
            top_p: 1,
            stop_sequences: ["END"],
            tool_choice: { type: "tool", name: "lookup" },
            max_tokens: 64,
          }
        : {
            temperature: 0,
            top_p: 1,
            stop: ["END"],
            tool_choice: { type: "function", function: { name: "lookup" } },
            max_tokens: 64,
          },
    );
  });

  describe("refused before any request", () => {
    it("a toolChoice { name } not among the call's tools", async () => {
      const server = await serve([{ text: "a" }]);
      const error = await refusal(make(server), {
        tools: TOOLS,
        settings: { toolChoice: { name: "search" } },
      });
      expect(error.message).toBe(
        `${protocol.name}(): modelSettings.toolChoice names the tool "search", which is not among the tools of this call (this call's tools are "lookup", "weather"); ${anthropicWire ? "the Anthropic Messages API" : "the OpenAI Chat Completions API"} can only be made to call a tool the request carries.`,
      );
      const none = await refusal(make(server), { settings: { toolChoice: { name: "lookup" } } });
      expect(none.message).toContain("(this call has no tools)");
      expect(server.requests).toHaveLength(0);
    });

    it('toolChoice "any" with no tools', async () => {
      const server = await serve([{ text: "a" }]);
      const error = await refusal(make(server), { settings: { toolChoice: "any" } });
      expect(error.message).toBe(
        `${protocol.name}(): modelSettings.toolChoice "any" makes the model call a tool, but this call has no tools; ${anthropicWire ? "the Anthropic Messages API" : "the OpenAI Chat Completions API"} takes a tool choice only with tools.`,
      );
      expect(server.requests).toHaveLength(0);
    });
  });
});

describe("anthropic: refusals and what passes through", () => {
  it("refuses a temperature above 1 for api.anthropic.com, naming the protocol, the setting and the limit: no request", async () => {
    const server = await serve([{ text: "a" }]);
    const { model, calls } = ownHost("anthropic", server);
    const error = await refusal(model, { settings: { temperature: 1.5 } });
    expect(error.message).toBe(
      "anthropic(): modelSettings.temperature is 1.5, above the limit of the Anthropic Messages API, whose temperature ranges from 0 to 1. Give a value from 0 to 1.",
    );
    expect(calls).toEqual([]);
    expect(server.requests).toHaveLength(0);
    // 1 itself is within the range.
    await sent(model, server, { settings: { temperature: 1 } });
    expect(calls).toEqual(["https://api.anthropic.com/v1/messages"]);
  });

  it("passes a temperature above 1 through to an Anthropic-compatible endpoint (which may accept it)", async () => {
    const lenient = await openMockServer({ script: [{ text: "a" }], validate: false });
    const body = await sent(anthropic({ baseURL: lenient.url, ...FAST }), lenient, {
      settings: { temperature: 1.5 },
    });
    expect(body.temperature).toBe(1.5);
    // A server that enforces Anthropic's range answers 400, in the API's own shape.
    const strict = await serve([{ text: "a" }]);
    const error = await streamModel(anthropic({ baseURL: strict.url, ...FAST }), {
      settings: { temperature: 1.5 },
    }).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({
      name: "BadRequestError",
      status: 400,
      message: "400 invalid_request_error: temperature: range: 0..1",
    });
    expect(strict.requests).toHaveLength(1);
  });

  it.each([
    ["any", '"any"'],
    [{ name: "lookup" }, '{ name: "lookup" }'],
  ] as const)("refuses toolChoice %j with thinking on: no request", async (toolChoice, named) => {
    const server = await serve([{ text: "a" }]);
    for (const thinking of [{ type: "enabled", budget_tokens: 2048 }, { type: "adaptive" }]) {
      const model = anthropic({ baseURL: server.url, ...FAST, thinking });
      const error = await refusal(model, { tools: TOOLS, settings: { toolChoice } });
      expect(error.message).toBe(
        `anthropic(): modelSettings.toolChoice ${named} forces a tool call, which the Anthropic Messages API does not allow with thinking on: with thinking, only "auto" and "none" are allowed. Use "auto", or turn thinking off.`,
      );
    }
    expect(server.requests).toHaveLength(0);
  });

  it('allows "auto" and "none" with thinking on, and any choice with thinking disabled', async () => {
    const server = await serve([{ text: "a" }]);
    const thinkingOn = anthropic({
      baseURL: server.url,
      ...FAST,
      thinking: { type: "enabled", budget_tokens: 2048 },
    });
    for (const toolChoice of ["auto", "none"] as const) {
      const body = await sent(thinkingOn, server, { tools: TOOLS, settings: { toolChoice } });
      expect(body.tool_choice).toEqual({ type: toolChoice });
    }
    const thinkingOff = anthropic({ baseURL: server.url, ...FAST, thinking: { type: "disabled" } });
    const body = await sent(thinkingOff, server, { tools: TOOLS, settings: { toolChoice: "any" } });
    expect(body.tool_choice).toEqual({ type: "any" });
  });
});

describe("openai: refusals", () => {
  it("refuses more than 4 stopSequences, naming the protocol, the setting and the limit: no request", async () => {
    const server = await serve([{ text: "a" }]);
    const { model, calls } = ownHost("openai", server, { api: "chat" });
    const error = await refusal(model, {
      settings: { stopSequences: ["a", "b", "c", "d", "e"] },
    });
    expect(error.message).toBe(
      "openai(): modelSettings.stopSequences has 5 entries, more than the OpenAI Chat Completions API takes: at most 4 stop sequences.",
    );
    // Any endpoint: the limit is the protocol's.
    await refusal(openai({ baseURL: `${server.url}/v1`, ...FAST }), {
      settings: { stopSequences: ["a", "b", "c", "d", "e"] },
    });
    expect(calls).toEqual([]);
    expect(server.requests).toHaveLength(0);
  });

  it("passes a temperature above 1 to OpenAI's own host (its range is 0 to 2)", async () => {
    const server = await serve([{ text: "a" }]);
    const { model } = ownHost("openai", server);
    const body = await sent(model, server, { settings: { temperature: 1.7 } });
    expect(body.temperature).toBe(1.7);
  });
});
