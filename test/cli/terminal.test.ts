/**
 * The approval question on a real (pseudo-)terminal: Ctrl-C there is an interrupt (exit 130); a
 * prompt piped in still gets its questions on the terminal (/dev/tty), or the command says why
 * it cannot ask; the tool's time leaves out the wait for the answer, and the usage line comes
 * once, for the whole run.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { type MockServer, mockServer } from "skein/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { requirePython, startOnTerminal } from "./terminal-helpers.ts";

let server: MockServer | undefined;
let cwd: string;
beforeAll(() => {
  requirePython();
  cwd = mkdtempSync(join(tmpdir(), "skein-cli-tty-"));
});
afterAll(() => rmSync(cwd, { recursive: true, force: true }));
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const bashTurns = () => [
  {
    toolCalls: [{ id: "b1", name: "Bash", input: { command: "echo skein-tty-approved" } }],
    usage: { inputTokens: 100, outputTokens: 10 },
  },
  { text: "Done.", usage: { inputTokens: 120, outputTokens: 5 } },
];

async function bashServer(): Promise<Record<string, string>> {
  server = await mockServer({ script: bashTurns() });
  return { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" };
}

const QUESTION = "allow? [y/N]";

describe("Ctrl-C at the approval question", () => {
  it("typed on the terminal (a ^C byte): exit 130, interrupted, not a paused run", async () => {
    const cli = startOnTerminal(["run", "echo"], { env: await bashServer(), cwd });
    await cli.waitFor(QUESTION);
    cli.type("\u0003");
    const { code, screen } = await cli.exited;
    expect(code, screen).toBe(130);
    expect(screen).toContain("skein: interrupted.");
    expect(screen).not.toContain("interactive terminal");
    expect(screen).not.toContain("the run paused");
    expect(server!.requests).toHaveLength(1);
  });

  it("as a SIGINT sent to the process: exit 130 too", async () => {
    const cli = startOnTerminal(["run", "echo"], { env: await bashServer(), cwd });
    const pid = await cli.pid();
    await cli.waitFor(QUESTION);
    process.kill(pid, "SIGINT");
    const { code, screen } = await cli.exited;
    expect(code, screen).toBe(130);
    expect(screen).toContain("skein: interrupted.");
    expect(screen).not.toContain("the run paused");
    // Nothing was running: no "waiting for running tools" at the question.
    expect(screen).not.toContain("stopping: waiting for running tools");
  });
});

describe("a prompt piped in on a terminal", () => {
  it("asks on the terminal (/dev/tty); the tool's time leaves out the wait; one usage line", async () => {
    const cli = startOnTerminal([], { env: await bashServer(), cwd, stdin: "run echo\n" });
    await cli.waitFor(QUESTION);
    // The user takes a moment before answering.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const answeredAt = performance.now();
    cli.type("y\r");
    const { code, screen } = await cli.exited;
    const sinceAnswer = performance.now() - answeredAt;
    expect(code, screen).toBe(0);
    expect(server!.requests).toHaveLength(2);
    expect(JSON.stringify(server!.requests[1]!.body.messages.at(-1))).toContain(
      "skein-tty-approved",
    );
    // The tool ran after the answer: its time cannot exceed the time since.
    const done = /✓ Bash.*? (\d+(?:\.\d+)?) (ms|s) →/.exec(screen);
    expect(done, screen).not.toBeNull();
    const toolMs = Number(done![1]) * (done![2] === "s" ? 1000 : 1);
    expect(toolMs).toBeLessThanOrEqual(sinceAnswer);
    // One usage line, for the whole run: both turns' tokens, both turns.
    const usage = screen.split("\n").filter((line) => line.includes("usage:"));
    expect(usage, screen).toHaveLength(1);
    expect(usage[0]).toMatch(/usage: 220 input, 15 output tokens; .* · 2 turns · /);
  });

  it("says why it cannot ask when there is no controlling terminal", async () => {
    const cli = startOnTerminal([], {
      env: await bashServer(),
      cwd,
      stdin: "run echo\n",
      noControllingTerminal: true,
    });
    const { code, screen } = await cli.exited;
    expect(code, screen).toBe(1);
    expect(screen).toMatch(
      /skein: the run paused: 1 tool call\(s\) \(Bash\) wait for approval; they could not be asked: stdin is not a terminal and \/dev\/tty cannot be opened \(ENXIO: the process has no controlling terminal\); allow such calls with --allow/,
    );
    expect(screen).not.toContain(QUESTION);
  });
});
