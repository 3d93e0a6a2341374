import { ConfigurationError, createAgent } from "skein";
import { type MockServer, mockServer } from "skein/testing";
import { afterEach, describe, expect, it, vi } from "vitest";

// An agent with no `model` (seed 003's research-agent has none) speaks the Anthropic protocol
// with SKEIN_MODEL, or the documented default, and the environment's key and base URL.

let server: MockServer | undefined;
afterEach(async () => {
  vi.unstubAllEnvs();
  vi.unstubAllGlobals();
  await server?.close();
  server = undefined;
});

describe("an agent that names no model", () => {
  it("uses claude-sonnet-4-6 through ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY", async () => {
    server = await mockServer({ script: [{ text: "hello" }] });
    vi.stubEnv("ANTHROPIC_BASE_URL", server.url);
    vi.stubEnv("ANTHROPIC_API_KEY", "env-key");
    vi.stubEnv("SKEIN_MODEL", "");
    const result = await createAgent({ id: "research-agent" }).run("hi");
    expect(result).toMatchObject({ subtype: "success", result: "hello" });
    expect(server.requests[0]!.body.model).toBe("claude-sonnet-4-6");
    expect(server.requests[0]!.headers["x-api-key"]).toBe("env-key");
  });

  it("uses SKEIN_MODEL when it is set", async () => {
    server = await mockServer({ script: [{ text: "hello" }] });
    vi.stubEnv("ANTHROPIC_BASE_URL", server.url);
    vi.stubEnv("ANTHROPIC_API_KEY", "env-key");
    vi.stubEnv("SKEIN_MODEL", "claude-opus-4-1");
    await createAgent({}).run("hi");
    expect(server.requests[0]!.body.model).toBe("claude-opus-4-1");
  });

  it("with no key for Anthropic's own host, fails at assembly saying what to set, and sends nothing", async () => {
    vi.stubEnv("ANTHROPIC_BASE_URL", "");
    vi.stubEnv("ANTHROPIC_API_KEY", "");
    const fetchSpy = vi.fn();
    vi.stubGlobal("fetch", fetchSpy);
    expect(() => createAgent({})).toThrow(ConfigurationError);
    expect(() => createAgent({})).toThrow("Set ANTHROPIC_API_KEY");
    expect(fetchSpy).not.toHaveBeenCalled();
  });
});
