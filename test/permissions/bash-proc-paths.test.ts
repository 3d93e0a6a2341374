// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are shell commands
/**
 * Paths through /proc/<pid>/cwd, /proc/<pid>/root and /dev/fd are resolved by the shell in its own
 * process: `/proc/self/cwd/.env` is the `.env` of the shell's directory, the workspace. The gate,
 * in another process, must judge them as what they name from the shell's side: a Read deny rule
 * denies them, an Edit deny rule denies writes through them, and a protected path asks, whatever
 * allows Bash. Globs that way (`/proc/self/cwd/.e*`) are judged like any pattern.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { exists, failing, runBash, SECRET, workspaces } from "./bash-support.ts";

const workspace = workspaces();

describe("allow Bash, deny Read(.env): paths through /proc and /dev/fd are denied", () => {
  it("every form that names .env through the shell's own /proc entry is denied", async () => {
    const ws = await workspace();
    const commands = [
      "cat /proc/self/cwd/.env",
      "cat /proc/self/cwd/.e*",
      "cat /proc/self/cwd/.en[v]",
      "cat /proc/self/cwd/{.env,x}",
      "cat /proc/thread-self/cwd/.env",
      "cat /proc/self/task/*/cwd/.env",
      `cat /proc/self/root${ws}/.env`,
      `cat /proc/self/root${ws}/.e*`,
      "cat /dev/fd/../cwd/.env",
      "cat /dev/fd/../cwd/.e*",
      "cat < /proc/self/cwd/.env",
      "grep -r API /proc/self/cwd",
      "grep -r API /proc/self/cwd/",
      "tar c /proc/self/cwd/.env | cat",
      "cat ../../../../../../../../../../proc/self/cwd/.env",
      "cat /proc/self/cwd/src/../.env",
      "cat /proc/self/cwd//./.env",
      "cat /proc/self/fd/../cwd/.env",
      "cat /proc/self/cw[d]/.env",
    ];
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Read(.env)"] }, commands, true);
    expect(failing(commands, (id) => run.reason(id) === "denied")).toEqual([]);
    expect(run.all).not.toContain(SECRET);
  });

  it("other files through /proc still run", async () => {
    const ws = await workspace();
    const commands = ["cat /proc/self/cwd/src/app.ts", "cat /proc/self/status | head -1"];
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Read(.env)"] }, commands);
    expect(run.asked).toEqual([]);
    expect(failing(commands, (id) => run.reason(id) === undefined)).toEqual([]);
    expect(run.text("c0")).toContain("KEY_NAME");
  });
});

describe("allow Bash: writes through /proc meet the Edit rules and the protected paths", () => {
  it("an Edit deny rule denies a write through /proc/self/cwd", async () => {
    const ws = await workspace();
    const commands = [
      "echo x > /proc/self/cwd/notes.txt",
      "echo x | tee /proc/self/cwd/notes.txt",
      "cp src/app.ts /proc/self/cwd/notes.txt",
    ];
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Edit(notes.txt)"] }, commands, true);
    expect(failing(commands, (id) => run.reason(id) === "denied")).toEqual([]);
    expect(exists(ws, "notes.txt")).toBe(false);
  });

  it("a write into .git through /proc/self/cwd asks", async () => {
    const ws = await workspace();
    const commands = [
      "echo x > /proc/self/cwd/.git/hooks/pre-commit",
      "cp src/app.ts /proc/self/cwd/.git/hooks/post-checkout",
    ];
    const run = await runBash(ws, { allow: ["Bash"] }, commands);
    expect(failing(commands, (id) => run.asked.includes(id))).toEqual([]);
    expect(exists(ws, path.join(".git", "hooks", "pre-commit"))).toBe(false);
    expect(exists(ws, path.join(".git", "hooks", "post-checkout"))).toBe(false);
    expect(await readFile(path.join(ws, ".env"), "utf8")).toContain(SECRET);
  });
});
