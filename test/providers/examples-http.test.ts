/**
 * The seed examples 000/001/002 end to end through the real HTTP clients, against the mock
 * server (test/examples.test.ts runs the same seeds with a scripted model). The environment is
 * set before each example module is imported, since the seeds read it at import time. No network:
 * the one agent with a fixed remote baseURL (DeepSeek's) gets a `fetch` that forwards to the mock.
 */
import type { ToolResultBlock } from "skein";
import type { MockScriptRequest } from "skein/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { closeMockServers } from "../support/servers.ts";
import { bodies, serve } from "./helpers.ts";

afterEach(async () => {
  vi.unstubAllEnvs();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
  await closeMockServers();
});

/** The text of every tool result in an Anthropic request body. */
function toolResultsIn(body: any): string[] {
  return body.messages.flatMap((message: any) =>
    Array.isArray(message.content)
      ? message.content
          .filter((block: ToolResultBlock) => block.type === "tool_result")
          .map((block: ToolResultBlock) => block.content)
      : [],
  );
}

/** Turn 1 calls `name` with each input; turn 2 answers with the tool results, joined. */
function callThenRepeat(name: string, inputs: unknown[]) {
  return ({ index, body }: MockScriptRequest) =>
    index === 0
      ? { toolCalls: inputs.map((input) => ({ name, input })) }
      : { text: toolResultsIn(body).join(" | ") };
}

describe("seed 002: query() with anthropic({ apiKey }) over HTTP", () => {
  it("streams the model's answer, built from the tool's result, to stdout", async () => {
    const server = await serve(callThenRepeat("get_weather", [{ city: "Tokyo" }]));
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test");
    vi.stubEnv("ANTHROPIC_BASE_URL", server.url);
    const written: string[] = [];
    vi.spyOn(process.stdout, "write").mockImplementation(((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    }) as typeof process.stdout.write);
    const { weather } = await import("../../examples/002-custom-tools-weather.ts");
    vi.mocked(process.stdout.write).mockRestore();

    expect(written.join("")).toBe("It's sunny in Tokyo.");
    expect(weather.name).toBe("get_weather");
    expect(server.requests).toHaveLength(2);
    for (const request of server.requests) {
      expect(request.path).toBe("/v1/messages");
      expect(request.headers["x-api-key"]).toBe("sk-ant-test");
      expect(request.headers["anthropic-version"]).toBe("2023-06-01");
      expect(request.body.model).toBe("claude-sonnet-4-6");
    }
    // "read_file" in allowedTools names no tool of this agent and is ignored.
    expect(bodies(server)[0].tools.map((spec: any) => spec.name)).toEqual(["get_weather"]);
    expect(bodies(server)[0].messages).toEqual([
      {
        role: "user",
        content: [
          {
            type: "text",
            text: "What's the weather in Tokyo?",
            cache_control: { type: "ephemeral" },
          },
        ],
      },
    ]);
    expect(toolResultsIn(bodies(server)[1])).toEqual(["It's sunny in Tokyo."]);
  });
});

describe("seeds 000/001: createAgent with DeepSeek's Anthropic endpoint", () => {
  it("sends the seed's model and key to https://api.deepseek.com/anthropic/v1/messages", async () => {
    const server = await serve(callThenRepeat("calculator", [{ expr: "2+2" }]));
    const realFetch = globalThis.fetch;
    const seen: { url: string; headers: Record<string, string>; body: any }[] = [];
    const deepseek = "https://api.deepseek.com/anthropic";
    vi.stubGlobal("fetch", (input: string | URL | Request, init: RequestInit) => {
      const url = String(input);
      if (!url.startsWith(deepseek)) throw new Error(`unexpected request to ${url}`);
      seen.push({
        url,
        headers: init.headers as Record<string, string>,
        body: JSON.parse(String(init.body)),
      });
      return realFetch(server.url + url.slice(deepseek.length), init);
    });
    vi.stubEnv("DEEPSEEK_API_KEY", "sk-deepseek-test");
    const { agent } = await import("../../examples/000-tools-calculator.ts");

    const result = await agent.run("What is 2+2?");
    expect(result).toMatchObject({ subtype: "success", result: "4", numTurns: 2 });
    expect(seen.map((request) => request.url)).toEqual([
      `${deepseek}/v1/messages`,
      `${deepseek}/v1/messages`,
    ]);
    for (const request of seen) {
      expect(request.headers["x-api-key"]).toBe("sk-deepseek-test");
      expect(request.headers["anthropic-version"]).toBe("2023-06-01");
      expect(request.body.model).toBe("deepseek-v4-flash");
    }
    expect(toolResultsIn(bodies(server)[1])).toEqual(["4"]);
  });
});

describe("seeds 000/001: agents named by model, reaching ANTHROPIC_BASE_URL", () => {
  it("runs the concurrent searches of one reply and answers in call order", async () => {
    const server = await serve(
      callThenRepeat("search", [{ query: "alpha" }, { query: "beta" }, { query: "gamma" }]),
    );
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test");
    vi.stubEnv("ANTHROPIC_BASE_URL", server.url);
    const { agent } = await import("../../examples/000-tools-concurrency.ts");
    const result = await agent.run("find things");
    expect(result.result).toBe(
      'No documents match "alpha". | No documents match "beta". | No documents match "gamma".',
    );
    expect(bodies(server).map((body) => body.model)).toEqual([
      "claude-sonnet-4-6",
      "claude-sonnet-4-6",
    ]);
  });

  it("runs the batch-policy agent's update, seen whole by the policy first", async () => {
    const server = await serve(callThenRepeat("incrementRevision", [{}]));
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-test");
    vi.stubEnv("ANTHROPIC_BASE_URL", server.url);
    const { agent, document } = await import("../../examples/000-tools-batch-policy.ts");
    const before = document.revision;
    const result = await agent.run("bump it");
    expect(result).toMatchObject({ subtype: "success", result: `revision ${before + 1}` });
    expect(document.revision).toBe(before + 1);
  });

  it("ends the run from the finish tool, with no further request", async () => {
    const server = await serve(callThenRepeat("finish", [{ answer: "Paris" }]));
    const { createBareAgent, anthropic } = await import("skein");
    const { finish } = await import("../../examples/000-tools-end-run.ts");
    const agent = createBareAgent({
      model: anthropic({ baseURL: server.url, apiKey: "k" }),
      tools: [finish],
    });
    const result = await agent.run("capital of France?");
    expect(result).toMatchObject({ subtype: "success", result: "Paris", numTurns: 1 });
    expect(server.requests).toHaveLength(1);
  });
});
