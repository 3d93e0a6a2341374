/**
 * The command's failures: each is one readable line on stderr (no stack) with exit code 1, or
 * 130 for Ctrl-C.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type MockServer, mockServer } from "skein/testing";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { closedPort } from "../support/servers.ts";
import { lines, runCli, startCli } from "./helpers.ts";

let server: MockServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Preloaded with NODE_OPTIONS: any fetch the CLI attempts is reported on stderr and fails. */
let fetchTrap: string;
beforeAll(() => {
  const directory = mkdtempSync(join(tmpdir(), "skein-cli-"));
  const file = join(directory, "fetch-trap.mjs");
  writeFileSync(
    file,
    `globalThis.fetch = async (url) => { process.stderr.write("TRAP: fetch " + url + "\\n"); throw new TypeError("fetch failed"); };\n`,
  );
  fetchTrap = `--import=${pathToFileURL(file).href}`;
});

function expectOneCleanLine(stderr: string, line: string | RegExp): void {
  const last = lines(stderr).at(-1)!;
  if (typeof line === "string") expect(last).toBe(line);
  else expect(last).toMatch(line);
  expect(stderr).not.toMatch(/\n\s+at /); // no stack trace
}

describe("a missing key", () => {
  it("fails before any request with the provider's variable and --base-url named", async () => {
    const result = await runCli(["hello"], { env: { NODE_OPTIONS: fetchTrap } });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      "skein: set ANTHROPIC_API_KEY or pass --base-url for a server that needs none\n",
    );
  });

  it("names OPENAI_API_KEY for --provider openai, also with --json", async () => {
    const result = await runCli(["--provider", "openai", "--json", "hello"], {
      env: { NODE_OPTIONS: fetchTrap },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      "skein: set OPENAI_API_KEY or pass --base-url for a server that needs none\n",
    );
  });

  it("(the trap works: with a base URL the CLI does call fetch)", async () => {
    const port = await closedPort();
    const result = await runCli(["hello"], {
      env: { NODE_OPTIONS: fetchTrap, ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}` },
    });
    expect(result.stderr).toContain(`TRAP: fetch http://127.0.0.1:${port}/v1/messages`);
  });
});

describe("errors of the run", () => {
  it("an unreachable base URL: the connection error and where to fix it", async () => {
    const port = await closedPort();
    const result = await runCli(["hello"], {
      env: { ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`, ANTHROPIC_API_KEY: "test-key" },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expectOneCleanLine(
      result.stderr,
      `skein: Could not reach the model API at http://127.0.0.1:${port} (ECONNREFUSED). Check --base-url or ANTHROPIC_BASE_URL.`,
    );
    // Connection errors are retried (twice by default), and each retry is shown.
    expect(lines(result.stderr).filter((line) => line.startsWith("retrying in "))).toHaveLength(2);
  });

  it("a wrong model name: the provider's 404 message, not retried", async () => {
    server = await mockServer({
      script: ({ body }) =>
        body.model === "mock-model"
          ? { text: "hi" }
          : { status: 404, error: { type: "not_found_error", message: `model: ${body.model}` } },
    });
    const result = await runCli(["--model", "claude-nope", "hello"], {
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" },
    });
    expect(result.code).toBe(1);
    expectOneCleanLine(
      result.stderr,
      'skein: the model API answered 404 not_found_error: model: claude-nope. Check the model name (--model, now "claude-nope") and the base URL.',
    );
    expect(server.requests).toHaveLength(1);
  });

  it("a wrong model name over OpenAI, with --json: NDJSON on stdout ending with the failed result", async () => {
    server = await mockServer({
      script: ({ body }) => ({
        status: 404,
        error: {
          type: "invalid_request_error",
          code: "model_not_found",
          message: `The model \`${body.model}\` does not exist or you do not have access to it.`,
        },
      }),
    });
    const result = await runCli(["--provider", "openai", "--model", "gpt-nope", "--json", "hi"], {
      env: { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: "sk-test" },
    });
    expect(result.code).toBe(1);
    const events = lines(result.stdout).map((line) => JSON.parse(line));
    expect(events.at(-1)).toMatchObject({
      type: "result",
      subtype: "error_during_execution",
      error: { name: "NotFoundError", status: 404 },
    });
    expectOneCleanLine(
      result.stderr,
      /^skein: the model API answered 404 invalid_request_error: The model `gpt-nope` does not exist or you do not have access to it\. Check the model name \(--model, now "gpt-nope"\)/,
    );
  });

  it("a bad option: commander's message and exit code 1", async () => {
    const result = await runCli(["--provider", "gemini", "hi"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("--provider");
    expect(result.stderr).toContain("anthropic, openai");
  });
});

describe("Ctrl-C", () => {
  // The reply stalls after "one" for ever (message_start, ping, the block's start, one word):
  // only the cancelled request lets the command exit (else the test's timeout fails it).
  it("aborts a slow turn through the run's signal and exits with 130", async () => {
    server = await mockServer({
      script: [{ text: "one two three four five six seven eight nine ten", stallAfter: 4 }],
    });
    const cli = startCli(["count slowly"], {
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" },
    });
    await cli.waitFor("stdout", "one");
    cli.child.kill("SIGINT");
    const result = await cli.exited;
    expect(result.code).toBe(130);
    expect(result.stdout).not.toContain("ten");
    expectOneCleanLine(result.stderr, "skein: interrupted.");
    expect(result.stderr).toContain("stopping: waiting for running tools to finish");
  });

  it("--json ends with a result line for the aborted run (its session, turns and tokens), then 130", async () => {
    server = await mockServer({
      script: [
        {
          text: "Waiting.",
          toolCalls: [{ id: "s1", name: "Bash", input: { command: "sleep 30" } }],
          usage: { inputTokens: 100, outputTokens: 7 },
        },
        { text: "never asked" },
      ],
    });
    const cli = startCli(["--json", "--allow", "Bash(sleep:*)", "wait"], {
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" },
    });
    await cli.waitFor("stdout", '"type":"tool_start"');
    cli.child.kill("SIGINT");
    const result = await cli.exited;
    expect(result.code).toBe(130);
    const events = lines(result.stdout).map((line) => JSON.parse(line));
    const sessionId = events[0].sessionId;
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(events.at(-1)).toMatchObject({
      type: "result",
      subtype: "error_during_execution",
      result: "",
      isError: true,
      sessionId,
      numTurns: 1,
      usage: { inputTokens: 100, outputTokens: 7 },
      error: { name: "AbortError", message: "The run was aborted. Interrupted by SIGINT." },
    });
    // The started call settled first: its end is in the stream, before the result.
    expect(events.some((event) => event.type === "tool_end" && event.callId === "s1")).toBe(true);
    expect(server.requests).toHaveLength(1);
    expectOneCleanLine(result.stderr, "skein: interrupted.");
  });

  it("lets started tools settle: the demo's weather lookups end before exit 130", async () => {
    const cli = startCli(["demo"]);
    await cli.waitFor("stderr", '→ get_weather {"city":"Atlantis"}');
    cli.child.kill("SIGINT");
    const result = await cli.exited;
    expect(result.code).toBe(130);
    // Every started call still got its end line (done, or cancelled by the abort), and no
    // later turn started.
    const ends = lines(result.stderr).filter((line) => /^[✓✗] get_weather/.test(line));
    expect(ends).toHaveLength(4);
    expect(result.stderr).not.toContain("plan_trip");
    expectOneCleanLine(result.stderr, "skein: interrupted.");
  });
});
