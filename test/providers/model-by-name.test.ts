/**
 * A model given as a string picks its protocol from what users type: `claude-*` Anthropic;
 * `gpt-*`, `o1*`, `o3*`, `o4*` OpenAI; `anthropic:` / `openai:` for any other id; a bare name of
 * no known family is Anthropic, and its errors say how to choose OpenAI. SKEIN_MODEL alike.
 * The mock server speaks Anthropic at `url` and OpenAI at `url + "/v1"`.
 */
import { ConfigurationError, createAgent, createBareAgent, query } from "skein";
import { type MockServer, mockServer } from "skein/testing";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { parseModelName } from "../../src/model/by-name.ts";

let server: MockServer;
beforeEach(async () => {
  server = await mockServer({ script: () => ({ text: "hello" }) });
  // Nothing from the machine's environment: each test sets what it means.
  for (const name of [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "SKEIN_MODEL",
  ])
    vi.stubEnv(name, "");
});
afterEach(async () => {
  vi.unstubAllEnvs();
  vi.unstubAllGlobals();
  await server.close();
});

function openaiEnvironment(): void {
  vi.stubEnv("OPENAI_API_KEY", "sk-openai");
  vi.stubEnv("OPENAI_BASE_URL", `${server.url}/v1`);
}

function anthropicEnvironment(): void {
  vi.stubEnv("ANTHROPIC_API_KEY", "anthropic-key");
  vi.stubEnv("ANTHROPIC_BASE_URL", server.url);
}

describe("parseModelName", () => {
  it.each([
    ["claude-sonnet-4-6", "anthropic", "claude-sonnet-4-6"],
    ["gpt-4o", "openai", "gpt-4o"],
    ["o1", "openai", "o1"],
    ["o3-mini", "openai", "o3-mini"],
    ["o4-mini", "openai", "o4-mini"],
    ["openai:qwen3", "openai", "qwen3"],
    ["openai:qwen3:8b", "openai", "qwen3:8b"],
    ["anthropic:deepseek-chat", "anthropic", "deepseek-chat"],
    ["anthropic:gpt-4o", "anthropic", "gpt-4o"],
    ["deepseek-chat", undefined, "deepseek-chat"],
    ["qwen3:8b", undefined, "qwen3:8b"],
  ])("%s: %s, model %s", (name, protocol, model) => {
    expect(parseModelName(name)).toEqual({ protocol, model });
  });
});

describe("createAgent({ model: <name> })", () => {
  it('"gpt-4o" with only OPENAI_API_KEY set speaks chat completions with that key', async () => {
    openaiEnvironment();
    const result = await createBareAgent({ model: "gpt-4o" }).run("hi");
    expect(result).toMatchObject({ subtype: "success", result: "hello" });
    expect(server.requests[0]).toMatchObject({
      protocol: "openai",
      path: "/v1/chat/completions",
      body: { model: "gpt-4o" },
    });
    expect(server.requests[0]!.headers.authorization).toBe("Bearer sk-openai");
  });

  it.each(["o1", "o3-mini", "o4-mini"])("%s is OpenAI too", async (name) => {
    openaiEnvironment();
    const result = await createBareAgent({ model: name }).run("hi");
    expect(result.subtype).toBe("success");
    expect(server.requests[0]).toMatchObject({ protocol: "openai", body: { model: name } });
  });

  it("claude-* is Anthropic", async () => {
    anthropicEnvironment();
    openaiEnvironment();
    const result = await createBareAgent({ model: "claude-haiku-4-5" }).run("hi");
    expect(result.subtype).toBe("success");
    expect(server.requests[0]).toMatchObject({
      protocol: "anthropic",
      path: "/v1/messages",
      body: { model: "claude-haiku-4-5" },
    });
    expect(server.requests[0]!.headers["x-api-key"]).toBe("anthropic-key");
  });

  it('"openai:qwen3" takes the apiKey and baseURL given beside it, and sends "qwen3"', async () => {
    const result = await createBareAgent({
      model: "openai:qwen3",
      apiKey: "local-key",
      baseURL: `${server.url}/v1`,
    }).run("hi");
    expect(result.subtype).toBe("success");
    expect(server.requests[0]).toMatchObject({ protocol: "openai", body: { model: "qwen3" } });
    expect(server.requests[0]!.headers.authorization).toBe("Bearer local-key");
  });

  it('"anthropic:deepseek-chat" and a bare "deepseek-chat" speak Anthropic with apiKey and baseURL', async () => {
    for (const model of ["anthropic:deepseek-chat", "deepseek-chat"]) {
      const result = await createBareAgent({
        model,
        apiKey: "ds-key",
        baseURL: server.url,
      }).run("hi");
      expect(result.subtype, model).toBe("success");
      expect(server.requests.at(-1)).toMatchObject({
        protocol: "anthropic",
        body: { model: "deepseek-chat" },
      });
      expect(server.requests.at(-1)!.headers["x-api-key"]).toBe("ds-key");
    }
  });

  it("a bare name with only OPENAI_API_KEY: assembly fails saying a bare name means Anthropic and how to choose OpenAI", async () => {
    openaiEnvironment();
    const fetchSpy = vi.fn();
    vi.stubGlobal("fetch", fetchSpy);
    const error = assemblyError(() => createBareAgent({ model: "qwen3" }));
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error.message).toContain("no API key");
    expect(error.message).toContain(
      'The model name "qwen3" has no protocol prefix, so it is sent with the Anthropic protocol; for an OpenAI-compatible server, write "openai:qwen3".',
    );
    expect(fetchSpy).not.toHaveBeenCalled();
  });

  it("a bare name the server does not know (404): the same hint, the error keeps its class", async () => {
    await server.close();
    server = await mockServer({
      script: () => ({ status: 404, error: { type: "not_found_error", message: "no such path" } }),
    });
    const result = await createBareAgent({
      model: "llama3",
      baseURL: server.url,
      apiKey: "k",
    }).run("hi");
    expect(result.error).toMatchObject({ name: "NotFoundError", status: 404 });
    expect(result.error!.message).toContain('write "openai:llama3"');
  });

  it('"openai:" with no id fails at assembly with a ConfigurationError saying how to write it', () => {
    const error = assemblyError(() => createBareAgent({ model: "openai:" }));
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error.message).toContain("openai:<model id>");
  });
});

describe("a key known to be missing fails at assembly, never as a run's answer", () => {
  it.each([
    ["claude-sonnet-4-6", "ANTHROPIC_API_KEY"],
    ["anthropic:some-model", "ANTHROPIC_API_KEY"],
    ["gpt-4o", "OPENAI_API_KEY"],
    ["openai:gpt-5", "OPENAI_API_KEY"],
  ])(
    "%s with no key for its provider's own host: a ConfigurationError naming %s",
    (name, variable) => {
      for (const prefix of ["ANTHROPIC", "OPENAI"]) {
        vi.stubEnv(`${prefix}_API_KEY`, undefined);
        vi.stubEnv(`${prefix}_BASE_URL`, undefined);
      }
      const fetchSpy = vi.fn();
      vi.stubGlobal("fetch", fetchSpy);
      for (const build of [
        () => createBareAgent({ model: name }),
        () => createAgent({ model: name }),
        () => query({ prompt: "hi", model: name }),
      ]) {
        const error = assemblyError(build);
        expect(error).toBeInstanceOf(ConfigurationError);
        expect(error.message).toContain(variable);
      }
      // A key given beside the name, or another host (a local server may need none), assembles.
      expect(() => createBareAgent({ model: name, apiKey: "k" })).not.toThrow();
      expect(() =>
        createBareAgent({ model: name, baseURL: "http://127.0.0.1:9/v1" }),
      ).not.toThrow();
      expect(fetchSpy).not.toHaveBeenCalled();
    },
  );
});

describe("SKEIN_MODEL", () => {
  it("follows the same rule: gpt-4o is OpenAI, openai:qwen3 too", async () => {
    openaiEnvironment();
    for (const [variable, sent] of [
      ["gpt-4o", "gpt-4o"],
      ["openai:qwen3", "qwen3"],
    ] as const) {
      vi.stubEnv("SKEIN_MODEL", variable);
      const result = await createBareAgent({}).run("hi");
      expect(result.subtype, variable).toBe("success");
      expect(server.requests.at(-1)).toMatchObject({ protocol: "openai", body: { model: sent } });
    }
  });

  it("a bare name from SKEIN_MODEL says where it came from", async () => {
    openaiEnvironment();
    vi.stubEnv("SKEIN_MODEL", "qwen3");
    const error = assemblyError(() => createBareAgent({}));
    expect(error.message).toContain('"qwen3" (from SKEIN_MODEL) has no protocol prefix');
  });
});

/** What a build throws (fails the test when it does not). */
function assemblyError(build: () => unknown): Error {
  try {
    build();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the assembly to fail");
}
