/**
 * The project's approval secret (.skein/approval-secret) seals the command's paused runs. The
 * README says it never goes into a session store: whoever can write the log must not also hold
 * the key. The agent's own tools must then not be able to read it into the transcript.
 * The command denies reading it (a Read deny rule, which Bash's readers meet too).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type MockServer, mockServer } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "./helpers.ts";

let server: MockServer | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("the project's approval secret", () => {
  it("is not read into the transcript by the agent's Read or Bash", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "skein-cli-secret-"));
    dirs.push(cwd);
    // A first run makes the key.
    server = await mockServer({ script: [{ text: "hi" }] });
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" };
    expect((await runCli(["hello"], { env, cwd })).code).toBe(0);
    const secret = readFileSync(join(cwd, ".skein", "approval-secret"), "utf8").trim();
    await server.close();
    server = await mockServer({
      script: [
        {
          toolCalls: [
            { id: "r1", name: "Read", input: { file_path: ".skein/approval-secret" } },
            { id: "b1", name: "Bash", input: { command: "cat .skein/approval-secret" } },
          ],
        },
        { text: "Done." },
      ],
    });
    const second = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" };
    await runCli(["--allow", "Bash", "read it"], { env: second, cwd });
    expect(JSON.stringify(server.requests.map((request) => request.body))).not.toContain(secret);
    expect(readFileSync(join(cwd, ".skein", "sessions.db")).includes(secret)).toBe(false);
  }, 120_000);
});

describe("the key file is read only when it is what it seems", () => {
  it("a symbolic link in its place (even to a private file) is refused, not followed", async () => {
    const { projectSecret } = await import("../../src/cli/project-dir.ts");
    const cwd = mkdtempSync(join(tmpdir(), "skein-cli-secret-"));
    dirs.push(cwd);
    const elsewhere = join(cwd, "elsewhere");
    writeFileSync(elsewhere, "a secret of someone else's, long enough\n", { mode: 0o600 });
    mkdirSync(join(cwd, ".skein"));
    symlinkSync(elsewhere, join(cwd, ".skein", "approval-secret"));
    expect(() => projectSecret(cwd)).toThrow(/is a symbolic link/);
    // Made afresh: the same key on every call.
    const fresh = mkdtempSync(join(tmpdir(), "skein-cli-secret-"));
    dirs.push(fresh);
    const key = projectSecret(fresh);
    expect(key.length).toBeGreaterThanOrEqual(32);
    expect(projectSecret(fresh)).toBe(key);
  });
});
