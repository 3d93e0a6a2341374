/**
 * A run the command paused resumes in the next command: the project keeps its approval secret in
 * .skein/approval-secret (mode 0600, never in the sessions database), so `--continue` and
 * `--resume` on a terminal ask again, and with `--allow` rules they run. .skein/ ignores itself
 * in git. Real `skein` processes, one after the other, as a user runs them.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type MockServer, mockServer } from "skein/testing";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { lines, runCli } from "./helpers.ts";
import { requirePython, startOnTerminal } from "./terminal-helpers.ts";

const QUESTION = "allow? [y/N]";
/** A write the model asks for, then its answer once the write's result is back. */
const writeTurns = () => [
  { toolCalls: [{ id: "w1", name: "Write", input: { file_path: "hello.txt", content: "hi\n" } }] },
  { text: "Wrote it." },
];

let server: MockServer;
let cwd: string;
const env = () => ({ ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" });
beforeAll(() => requirePython());
beforeEach(async () => {
  cwd = await mkdtemp(path.join(os.tmpdir(), "skein-cli-resume-"));
  server = await mockServer({ script: writeTurns() });
});
afterEach(async () => {
  await server.close();
  await rm(cwd, { recursive: true, force: true });
});

async function pausedOffTerminal(): Promise<void> {
  const paused = await runCli(["write", "hello"], { env: env(), cwd });
  expect(paused.code, paused.stderr).toBe(1);
  expect(lines(paused.stderr).at(-1)).toMatch(/the run paused/);
  expect(existsSync(path.join(cwd, "hello.txt"))).toBe(false);
}

describe("a run paused by one command resumes in the next", () => {
  it("off a terminal it pauses; --continue on a terminal asks again, y runs the call, and the session goes on", async () => {
    await pausedOffTerminal();
    const cli = startOnTerminal(["--continue"], { env: env(), cwd });
    await cli.waitFor(QUESTION);
    cli.type("y\r");
    const { code, screen } = await cli.exited;
    expect(code, screen).toBe(0);
    expect(screen).not.toContain("does not match its seal");
    expect(readFileSync(path.join(cwd, "hello.txt"), "utf8")).toBe("hi\n");
    expect(screen).toContain("Wrote it.");
    expect(server.requests).toHaveLength(2);
    const result = server.requests[1]!.body.messages.at(-1).content[0];
    expect(result).toMatchObject({ tool_use_id: "w1" });
    expect(result.is_error ?? false).toBe(false);
  }, 90_000);

  it("Ctrl-C at the question leaves the run paused; the next command on a terminal asks again and runs it", async () => {
    const first = startOnTerminal(["write", "hello"], { env: env(), cwd });
    await first.waitFor(QUESTION);
    first.type("\u0003");
    const interrupted = await first.exited;
    expect(interrupted.code, interrupted.screen).toBe(130);
    expect(existsSync(path.join(cwd, "hello.txt"))).toBe(false);

    const again = startOnTerminal(["--continue"], { env: env(), cwd });
    await again.waitFor(QUESTION);
    again.type("y\r");
    const { code, screen } = await again.exited;
    expect(code, screen).toBe(0);
    expect(readFileSync(path.join(cwd, "hello.txt"), "utf8")).toBe("hi\n");
  }, 90_000);

  it("--resume <id> with an --allow rule runs it off a terminal, without asking", async () => {
    await pausedOffTerminal();
    const listed = await runCli(["sessions"], { env: env(), cwd });
    const id = /^(\S+)/.exec(lines(listed.stdout).find((line) => /paused/.test(line)) ?? "")?.[1];
    expect(id, listed.stdout).toBeTruthy();
    const resumed = await runCli(["--resume", id!, "--allow", "Write(hello.txt)"], {
      env: env(),
      cwd,
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readFileSync(path.join(cwd, "hello.txt"), "utf8")).toBe("hi\n");
  }, 90_000);

  it("--continue off a terminal with no rule for the call leaves it paused, saying how to allow it", async () => {
    await pausedOffTerminal();
    const again = await runCli(["--continue"], { env: env(), cwd });
    expect(again.code).toBe(1);
    expect(lines(again.stderr).at(-1)).toMatch(
      /^skein: the run paused: 1 tool call\(s\) \(Write\) wait for approval; .*--allow "Write\(hello\.txt\)"/,
    );
    expect(server.requests).toHaveLength(1);
    expect(existsSync(path.join(cwd, "hello.txt"))).toBe(false);
    // Still paused, and still resumable.
    const allowed = await runCli(["--continue", "--allow", "Write"], { env: env(), cwd });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(readFileSync(path.join(cwd, "hello.txt"), "utf8")).toBe("hi\n");
  }, 90_000);

  it("a new prompt with --continue resumes the paused run first (it is not stuck)", async () => {
    await pausedOffTerminal();
    await server.close();
    server = await mockServer({ script: [...writeTurns(), { text: "And hello." }] });
    const next = await runCli(["--continue", "--allow", "Write", "say", "hello"], {
      env: env(),
      cwd,
    });
    expect(next.code, next.stderr).toBe(0);
    expect(readFileSync(path.join(cwd, "hello.txt"), "utf8")).toBe("hi\n");
    expect(next.stdout).toContain("And hello.");
  }, 90_000);
});

describe(".skein/ keeps its secret to itself", () => {
  it("the secret is a 0600 file beside the database, not in it; .skein/ ignores itself in git", async () => {
    execFileSync("git", ["init", "-q"], { cwd });
    await pausedOffTerminal();
    const file = path.join(cwd, ".skein", "approval-secret");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const secret = readFileSync(file, "utf8").trim();
    expect(secret.length).toBeGreaterThanOrEqual(32);
    const database = readFileSync(path.join(cwd, ".skein", "sessions.db"));
    expect(database.includes(secret)).toBe(false);
    expect(readFileSync(path.join(cwd, ".skein", ".gitignore"), "utf8")).toMatch(/^\*$/m);
    execFileSync("git", ["add", "-A"], { cwd });
    const staged = execFileSync("git", ["status", "--porcelain"], { cwd, encoding: "utf8" });
    expect(staged).not.toContain(".skein");
    // The same secret next time: the file is kept, not replaced.
    await runCli(["--continue", "--allow", "Write"], { env: env(), cwd });
    expect(readFileSync(file, "utf8").trim()).toBe(secret);
  }, 90_000);

  it("a secret file others can read is refused, saying how to fix it", async () => {
    await pausedOffTerminal();
    const file = path.join(cwd, ".skein", "approval-secret");
    chmodSync(file, 0o644);
    const refused = await runCli(["--continue"], { env: env(), cwd });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("approval-secret");
    expect(refused.stderr).toContain("chmod 600");
    expect(server.requests).toHaveLength(1);
  }, 90_000);

  it("a secret file that is too short is refused, not used", async () => {
    const dir = path.join(cwd, ".skein");
    await runCli(["--help"], { cwd });
    execFileSync("mkdir", ["-p", dir]);
    writeFileSync(path.join(dir, "approval-secret"), "short\n", { mode: 0o600 });
    const refused = await runCli(["write", "hello"], { env: env(), cwd });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("no usable approval secret");
    expect(server.requests).toHaveLength(0);
  }, 90_000);
});
