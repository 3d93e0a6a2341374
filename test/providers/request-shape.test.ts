/**
 * What each client puts on the wire (DESIGN: provider options, environment variables, base-URL
 * conventions), and how provider options are checked at assembly.
 */
import { anthropic, ConfigurationError, createBareAgent, openai, tool } from "skein";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { closeMockServers } from "../support/servers.ts";
import { bodies, collect, echoTool, FAST, PROTOCOLS, serve } from "./helpers.ts";

afterEach(async () => {
  vi.unstubAllEnvs();
  await closeMockServers();
});

const unknownOption = (prefix: string, key: string) =>
  `${prefix}: unknown option "${key}". Check for a typo, or upgrade the SDK if this option was added in a newer version.`;

const lookup = tool(
  "lookup",
  "Look a word up",
  z.object({ word: z.string(), limit: z.number().optional() }),
  async () => "found",
);

describe.each(PROTOCOLS)("$name: request shape", (protocol) => {
  const { make } = protocol;

  it("sends the agent's modelName as the request's model, else the provider's model", async () => {
    const server = await serve([{ text: "a" }, { text: "b" }]);
    await collect(createBareAgent({ model: make(server.url, { model: "provider-model" }) }));
    await collect(
      createBareAgent({
        model: make(server.url, { model: "provider-model" }),
        modelName: "agent-model",
      }),
    );
    expect(bodies(server).map((body) => body.model)).toEqual(["provider-model", "agent-model"]);
  });

  it("streams every request, at the protocol's path", async () => {
    const server = await serve([{ text: "a" }]);
    await collect(createBareAgent({ model: make(server.url, FAST) }));
    expect(server.requests.map((request) => [request.method, request.path])).toEqual([
      ["POST", protocol.name === "anthropic" ? "/v1/messages" : "/v1/chat/completions"],
    ]);
    expect(bodies(server)[0].stream).toBe(true);
    expect(server.requests[0]!.headers["content-type"]).toBe("application/json");
  });

  it("adds the headers option to the request", async () => {
    const server = await serve([{ text: "a" }]);
    await collect(createBareAgent({ model: make(server.url, { headers: { "x-team": "blue" } }) }));
    expect(server.requests[0]!.headers["x-team"]).toBe("blue");
  });

  it("rejects an unknown option, and the other protocol's options, with its own prefix", () => {
    const prefix = `${protocol.name}()`;
    expect(() => make("http://127.0.0.1:1", { bogusOption: 1 } as never)).toThrow(
      new ConfigurationError(unknownOption(prefix, "bogusOption")),
    );
    const foreign = protocol.name === "anthropic" ? "strictTools" : "promptCaching";
    expect(() => make("http://127.0.0.1:1", { [foreign]: true } as never)).toThrow(
      unknownOption(prefix, foreign),
    );
  });

  it("throws at assembly when apiKey or baseURL is given beside a Model object", async () => {
    const server = await serve([]);
    for (const extra of [{ apiKey: "k" }, { baseURL: server.url }]) {
      expect(() => createBareAgent({ model: make(server.url), ...extra })).toThrow(
        new ConfigurationError(
          "AgentOptions: apiKey and baseURL go with a model name; with a Model object, give them to the provider (for example anthropic({ apiKey, baseURL })).",
        ),
      );
    }
    expect(server.requests).toHaveLength(0);
  });
});

describe("anthropic: request shape", () => {
  it("sends x-api-key, anthropic-version 2023-06-01 and max_tokens 8192 by default", async () => {
    const server = await serve([{ text: "a" }]);
    await collect(createBareAgent({ model: anthropic({ baseURL: server.url, apiKey: "sk-a" }) }));
    const { headers, body } = server.requests[0]!;
    expect(headers["x-api-key"]).toBe("sk-a");
    expect(headers["anthropic-version"]).toBe("2023-06-01");
    expect(headers.authorization).toBeUndefined();
    expect(body.max_tokens).toBe(8192);
    expect(body.model).toBe("claude-sonnet-4-6");
  });

  it("lets headers override anthropic-version, and maxTokens and thinking reach the body", async () => {
    const server = await serve([{ text: "a" }]);
    const thinking = { type: "enabled", budget_tokens: 1024 };
    const model = anthropic({
      baseURL: server.url,
      apiKey: "k",
      headers: { "anthropic-version": "2099-01-01" },
      maxTokens: 2048,
      thinking,
    });
    await collect(createBareAgent({ model }));
    expect(server.requests[0]!.headers["anthropic-version"]).toBe("2099-01-01");
    expect(bodies(server)[0]).toMatchObject({ max_tokens: 2048, thinking });
  });

  it("puts cache breakpoints on the system prompt, the last tool and the last block (promptCaching default)", async () => {
    const server = await serve([
      { toolCalls: [{ name: "echo", input: { text: "a" } }] },
      { text: "ok" },
    ]);
    const agent = createBareAgent({
      model: anthropic({ baseURL: server.url, apiKey: "k" }),
      systemPrompt: "Be brief.",
      tools: [lookup, echoTool()],
    });
    await collect(agent);
    const [first, second] = bodies(server);
    const ephemeral = { type: "ephemeral" };
    expect(first.system).toEqual([{ type: "text", text: "Be brief.", cache_control: ephemeral }]);
    expect(first.tools.map((spec: any) => [spec.name, spec.cache_control])).toEqual([
      ["lookup", undefined],
      ["echo", ephemeral],
    ]);
    expect(first.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "hi", cache_control: ephemeral }] },
    ]);
    // The breakpoints move with the transcript: the newest block, and the end of the turn before
    // (two messages back), so a wide tool turn stays within the cache's look-back.
    expect(second.messages[0]).toEqual({
      role: "user",
      content: [{ type: "text", text: "hi", cache_control: ephemeral }],
    });
    expect(second.messages[1].content[0].cache_control).toBeUndefined();
    expect(second.messages[2].content[0].cache_control).toEqual(ephemeral);
    const breakpoints = JSON.stringify(second).split('"cache_control"').length - 1;
    expect(breakpoints).toBe(4);
  });

  it("sends no cache_control anywhere with promptCaching: false", async () => {
    const server = await serve([
      { toolCalls: [{ name: "echo", input: { text: "a" } }] },
      { text: "ok" },
    ]);
    const agent = createBareAgent({
      model: anthropic({ baseURL: server.url, apiKey: "k", promptCaching: false }),
      systemPrompt: "Be brief.",
      tools: [echoTool()],
    });
    await collect(agent);
    for (const request of server.requests) {
      expect(JSON.stringify(request.body)).not.toContain("cache_control");
    }
    expect(bodies(server)[0].system).toEqual([{ type: "text", text: "Be brief." }]);
  });

  it("reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL when the options are absent", async () => {
    const server = await serve([{ text: "a" }, { text: "b" }]);
    vi.stubEnv("ANTHROPIC_API_KEY", "env-key");
    vi.stubEnv("ANTHROPIC_BASE_URL", server.url);
    await collect(createBareAgent({ model: anthropic() }));
    expect(server.requests[0]!.headers["x-api-key"]).toBe("env-key");
    // Options win over the environment.
    await collect(createBareAgent({ model: anthropic({ apiKey: "option-key" }) }));
    expect(server.requests[1]!.headers["x-api-key"]).toBe("option-key");
  });

  it("a model name with apiKey and baseURL speaks Anthropic at that base URL (no /v1 in it)", async () => {
    const server = await serve([{ text: "named" }]);
    const agent = createBareAgent({ model: "some-model", apiKey: "name-key", baseURL: server.url });
    const { result } = await collect(agent);
    expect(result.result).toBe("named");
    expect(server.requests[0]).toMatchObject({
      path: "/v1/messages",
      headers: { "x-api-key": "name-key", "anthropic-version": "2023-06-01" },
      body: { model: "some-model", stream: true },
    });
  });

  it("needs no key for another host; needs one for api.anthropic.com", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", undefined);
    vi.stubEnv("ANTHROPIC_BASE_URL", undefined);
    const server = await serve([{ text: "a" }]);
    await collect(createBareAgent({ model: anthropic({ baseURL: server.url }) }));
    expect(server.requests[0]!.headers["x-api-key"]).toBeUndefined();
    expect(() => anthropic()).toThrow(
      new ConfigurationError(
        "anthropic(): no API key for api.anthropic.com. Set ANTHROPIC_API_KEY, or pass apiKey (and baseURL for another server).",
      ),
    );
  });

  it("treats an empty ANTHROPIC_BASE_URL as unset, as it does an empty key", () => {
    // `export ANTHROPIC_BASE_URL=` in a shell must not break every anthropic() call.
    vi.stubEnv("ANTHROPIC_BASE_URL", "");
    expect(() => anthropic({ apiKey: "k" })).not.toThrow();
    vi.stubEnv("OPENAI_BASE_URL", "");
    expect(() => openai({ apiKey: "k" })).not.toThrow();
  });
});

describe("openai: request shape", () => {
  it("sends a Bearer key, stream_options.include_usage, the system prompt and tools as functions", async () => {
    const server = await serve([{ text: "a" }]);
    const agent = createBareAgent({
      model: openai({ baseURL: `${server.url}/v1`, apiKey: "sk-o" }),
      systemPrompt: "Be brief.",
      tools: [lookup],
    });
    await collect(agent);
    const { headers, body } = server.requests[0]!;
    expect(headers.authorization).toBe("Bearer sk-o");
    expect(headers["x-api-key"]).toBeUndefined();
    expect(body).toEqual({
      model: "gpt-5-mini",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "hi" },
      ],
      stream: true,
      stream_options: { include_usage: true },
      tools: [
        {
          type: "function",
          function: {
            name: "lookup",
            description: "Look a word up",
            parameters: {
              type: "object",
              properties: { word: { type: "string" }, limit: { type: "number" } },
              required: ["word"],
            },
          },
        },
      ],
    });
  });

  it("strictTools makes every property required, optional ones nullable, no additional properties", async () => {
    const server = await serve([{ text: "a" }]);
    const agent = createBareAgent({
      model: openai({ baseURL: `${server.url}/v1`, apiKey: "k", strictTools: true, maxTokens: 64 }),
      tools: [lookup],
    });
    await collect(agent);
    const body = bodies(server)[0];
    expect(body.max_tokens).toBe(64);
    expect(body.tools[0].function).toEqual({
      name: "lookup",
      description: "Look a word up",
      strict: true,
      parameters: {
        type: "object",
        properties: {
          word: { type: "string" },
          limit: { anyOf: [{ type: "number" }, { type: "null" }] },
        },
        required: ["word", "limit"],
        additionalProperties: false,
      },
    });
  });

  it("reads OPENAI_API_KEY and OPENAI_BASE_URL (with /v1) when the options are absent", async () => {
    const server = await serve([{ text: "a" }]);
    vi.stubEnv("OPENAI_API_KEY", "env-key");
    vi.stubEnv("OPENAI_BASE_URL", `${server.url}/v1`);
    await collect(createBareAgent({ model: openai() }));
    expect(server.requests[0]).toMatchObject({
      path: "/v1/chat/completions",
      headers: { authorization: "Bearer env-key" },
    });
  });
});
