/**
 * `skein "prompt"` against a mock server on 127.0.0.1, through the real HTTP provider clients,
 * spawned as a separate process with its environment pointing at the server.
 */
import { type MockServer, mockServer } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { lines, runCli } from "./helpers.ts";

let server: MockServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('skein "prompt"', () => {
  it("streams the answer to stdout as it arrives and prints usage on stderr", async () => {
    server = await mockServer({
      script: [
        {
          text: "Hello from the mock model.",
          usage: { inputTokens: 1200, outputTokens: 34, cacheReadInputTokens: 800 },
          gapMs: 40,
        },
      ],
    });
    const result = await runCli(["say", "hello"], {
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("Hello from the mock model.\n");
    // One write per word, 40 ms apart: the text arrived in pieces, not at the end.
    expect(result.stdoutChunks.length).toBeGreaterThan(2);
    const status = lines(result.stderr);
    expect(status[0]).toBe(`skein · anthropic claude-sonnet-4-6 at ${server.url}`);
    expect(status.at(-2)).toMatch(
      // The cost: 1,200 input at $3/M, 34 output at $15/M, 800 cache reads at $0.30/M.
      /^usage: 1,200 input, 34 output tokens; 800 cache reads, 0 cache writes · \$0\.004[34] · 1 turn · [\d.]+ m?s$/,
    );
    // The run is logged in the workspace's store; its id is the last line.
    expect(status.at(-1)).toMatch(/^session [0-9a-f-]{36}$/);

    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    expect(request!.path).toBe("/v1/messages");
    expect(request!.headers["x-api-key"]).toBe("test-key");
    expect(request!.body).toMatchObject({
      model: "claude-sonnet-4-6",
      stream: true,
      messages: [{ role: "user", content: [{ type: "text", text: "say hello" }] }],
    });
  });

  it("--json prints the event stream as NDJSON, nothing else on stdout, ending with the result", async () => {
    server = await mockServer({ script: [{ text: "Two words." }] });
    const result = await runCli(["--json", "hi"], {
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" },
    });
    expect(result.code).toBe(0);
    expect(result.stdout.endsWith("\n")).toBe(true);
    const events = lines(result.stdout).map((line) => JSON.parse(line));
    expect(events.map((event) => event.type)).toEqual([
      "run_start",
      "turn_start",
      "text_delta",
      "text_delta",
      "message",
      "turn_end",
      "result",
    ]);
    expect(events.at(-1)).toMatchObject({
      type: "result",
      subtype: "success",
      result: "Two words.",
      numTurns: 1,
    });
    expect(result.stderr).toBe("");
  });

  it("--provider openai speaks chat completions at OPENAI_BASE_URL", async () => {
    server = await mockServer({
      script: [{ text: "Hi over chat completions.", usage: { inputTokens: 10, outputTokens: 5 } }],
    });
    const result = await runCli(["--provider", "openai", "--model", "mock-model", "hi"], {
      env: { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: "sk-test" },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("Hi over chat completions.\n");
    expect(lines(result.stderr).at(-2)).toMatch(/^usage: 10 input, 5 output tokens;/);
    const [request] = server.requests;
    expect(request).toMatchObject({
      protocol: "openai",
      path: "/v1/chat/completions",
      body: { model: "mock-model", stream: true },
    });
    expect(request!.headers.authorization).toBe("Bearer sk-test");
  });

  it("--provider google speaks Gemini at GOOGLE_GEMINI_BASE_URL; gemini-* and google:<id> pick it", async () => {
    server = await mockServer({
      script: () => ({ text: "Hi from Gemini.", usage: { inputTokens: 10, outputTokens: 5 } }),
    });
    // GOOGLE_GENERATIVE_AI_API_KEY is read when GEMINI_API_KEY is not set.
    const env = { GOOGLE_GEMINI_BASE_URL: server.url, GOOGLE_GENERATIVE_AI_API_KEY: "g-test" };
    const result = await runCli(["--provider", "google", "--model", "mock-model", "hi"], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe("Hi from Gemini.\n");
    expect(lines(result.stderr)[0]).toBe(`skein · google mock-model at ${server.url}`);
    expect(lines(result.stderr).at(-2)).toMatch(/^usage: 10 input, 5 output tokens;/);
    expect(server.requests[0]).toMatchObject({
      protocol: "gemini",
      path: "/v1beta/models/mock-model:streamGenerateContent?alt=sse",
    });
    expect(server.requests[0]!.headers["x-goog-api-key"]).toBe("g-test");
    for (const [model, sent] of [
      ["gemini-3-flash", "gemini-3-flash"],
      ["google:gemma-3", "gemma-3"],
    ] as const) {
      const named = await runCli(["--model", model, "hi"], {
        env: { GOOGLE_GEMINI_BASE_URL: server.url, GEMINI_API_KEY: "g-key" },
      });
      expect(named.code, named.stderr).toBe(0);
      expect(server.requests.at(-1)!.path).toBe(
        `/v1beta/models/${sent}:streamGenerateContent?alt=sse`,
      );
      expect(server.requests.at(-1)!.headers["x-goog-api-key"]).toBe("g-key");
    }
    // Google's own host needs a key: the command says which variables to set.
    const missing = await runCli(["--provider", "google", "hi"], { env: {} });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/set GEMINI_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY/);
  });

  it("--model picks the protocol as a model name does: gpt-4o and openai:<id> speak OpenAI", async () => {
    server = await mockServer({ script: () => ({ text: "Hi." }) });
    const env = { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: "sk-test" };
    for (const [model, sent] of [
      ["gpt-4o", "gpt-4o"],
      ["openai:qwen3", "qwen3"],
    ] as const) {
      const result = await runCli(["--model", model, "hi"], { env });
      expect(result.code, result.stderr).toBe(0);
      expect(lines(result.stderr)[0]).toBe(`skein · openai ${sent} at ${server.url}/v1`);
      expect(server.requests.at(-1)).toMatchObject({ protocol: "openai", body: { model: sent } });
    }
    const clash = await runCli(["--provider", "anthropic", "--model", "openai:qwen3", "hi"], {
      env,
    });
    expect(clash.code).toBe(1);
    expect(clash.stderr).toBe(
      "skein: --model openai:qwen3 names the openai protocol but --provider says anthropic; drop one of them.\n",
    );
  });

  it("--base-url overrides the environment, and a server of your own needs no key", async () => {
    server = await mockServer({ script: [{ text: "No key needed." }] });
    const result = await runCli(["--base-url", server.url, "hi"], {
      env: { ANTHROPIC_BASE_URL: "http://127.0.0.1:1" },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("No key needed.\n");
    expect(server.requests[0]!.headers["x-api-key"]).toBeUndefined();
  });

  it("reads the prompt from stdin when none is given", async () => {
    server = await mockServer({ script: [{ text: "ok" }] });
    await runCli([], {
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" },
      stdin: "a prompt from a pipe\n",
    });
    expect(server.requests[0]!.body.messages[0].content[0].text).toBe("a prompt from a pipe\n");
  });

  it("shows each tool call as a line, and stops at --max-turns with the reason and exit code 1", async () => {
    // `lookup` is not one of the agent's tools: the engine answers it with an error result.
    server = await mockServer({
      script: () => ({ text: "Let me look.", toolCalls: [{ name: "lookup", input: { q: "x" } }] }),
    });
    const result = await runCli(["--max-turns", "2", "look it up"], {
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("Let me look.\nLet me look.\n");
    const status = lines(result.stderr);
    expect(status.filter((line) => line.startsWith("→ "))).toEqual([
      '→ lookup {"q":"x"}',
      '→ lookup {"q":"x"}',
    ]);
    expect(status.filter((line) => line.startsWith("✗ "))).toHaveLength(2);
    expect(status.find((line) => line.startsWith("✗ "))).toMatch(
      /^✗ lookup \{"q":"x"\} \d+ ms → .*lookup/,
    );
    expect(status.at(-1)).toBe(
      "skein: stopped after 2 turns without a final answer; allow more with --max-turns (now 2).",
    );
    expect(server.requests).toHaveLength(2);
  });
});
