/**
 * The protected-entry guard around sandboxed commands (sandbox-guard.ts, sandbox-scan.ts):
 * placeholders shared by concurrent commands, what the host writes meanwhile, leftovers that are
 * not ours, the walk's limit, and the sweep's rule for entries moved with their directory.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bashOutputTool, bashTool } from "../../src/builtin/bash.ts";
import { probeSandbox } from "../../src/builtin/sandbox.ts";
import { scanProtected, sweepProtected } from "../../src/builtin/sandbox-scan.ts";
import { PROTECTED_NAMES } from "../../src/permissions/protected.ts";
import { findOnPath } from "../support/processes.ts";
import { sleep, waitFor } from "../support/promises.ts";
import { invoke, type ShellFixture, shellFixture } from "./shell-harness.ts";

let fx: ShellFixture;
afterEach(() => fx?.cleanup());

describe("placeholders (bubblewrap)", () => {
  beforeEach(async () => {
    const probe = await probeSandbox();
    if (!probe.available) throw new Error(`bubblewrap is required here: ${probe.reason}`);
    fx = shellFixture({ sandboxed: true });
  });

  const bash = (input: Record<string, unknown>) => invoke(bashTool(fx.env), input);
  const finished = () =>
    waitFor(() => (fx.background.get("bash_1")?.status === "running" ? undefined : true));

  it("stay while another sandboxed command runs, so it still cannot create the names", async () => {
    await bash({
      command:
        'while [ ! -e go ]; do sleep 0.05; done; mkdir -p .git/hooks; echo "mkdir=$?"; touch .git/x .vscode/tasks.json; echo "touch=$?"',
      run_in_background: true,
    });
    // A foreground command starts and ends meanwhile: the placeholders are not its to remove.
    expect((await bash({ command: "echo fg" })).text).toBe("fg");
    expect(existsSync(join(fx.root, ".git"))).toBe(true);
    writeFileSync(join(fx.root, "go"), "");
    await finished();
    const read = await invoke(bashOutputTool(fx.env), { bash_id: "bash_1" });
    expect(read.text).toMatch(/touch=[1-9]/);
    expect(read.text).not.toContain("the sandbox removed");
    // The last one ended: the empty placeholders went with it.
    expect(readdirSync(fx.root).sort()).toEqual(["go", "sub"]);
  });

  it("that the host wrote into meanwhile are kept, and not swept", async () => {
    await bash({
      command: "while [ ! -e go ]; do sleep 0.05; done; echo ended",
      run_in_background: true,
    });
    await waitFor(() => (existsSync(join(fx.root, ".vscode")) ? true : undefined));
    // As an approved Write would, on the host side of the placeholder.
    writeFileSync(join(fx.root, ".vscode", "settings.json"), "{}\n");
    writeFileSync(join(fx.root, "go"), "");
    await finished();
    const read = await invoke(bashOutputTool(fx.env), { bash_id: "bash_1" });
    expect(read.text).toContain("ended");
    expect(read.text).not.toContain("the sandbox removed");
    expect(readdirSync(join(fx.root, ".vscode"))).toEqual(["settings.json"]);
    expect(existsSync(join(fx.root, ".git"))).toBe(false);
  });

  it("are empty directories, so git inside lists none of them", async () => {
    const git = findOnPath("git");
    if (git) execFileSync(git, ["init", "-q", fx.root]);
    const result = await bash({
      command: `${git ? "git status --porcelain; " : ""}find . -mindepth 1 -maxdepth 1 -name '.*' ! -type d; ls -A | wc -l`,
    });
    // Only the count (every protected name, plus sub) is printed: no file, no untracked entry.
    expect(result.text).toBe(String(PROTECTED_NAMES.length + 1));
    expect(readdirSync(fx.root).sort()).toEqual(git ? [".git", "sub"] : ["sub"]);
  });

  it("an empty entry that is not ours (a leftover) is mounted read-only and left in place", async () => {
    mkdirSync(join(fx.root, ".git"));
    const result = await bash({ command: 'mkdir .git/hooks; echo "hooks=$?"' });
    expect(result.text).toMatch(/hooks=[1-9]/);
    expect(readdirSync(join(fx.root, ".git"))).toEqual([]);
  });

  it("refuses to run when there are more protected entries than it mounts, saying why", async () => {
    for (let i = 0; i <= 1_000; i++)
      mkdirSync(join(fx.root, "sub", `p${i}`, ".vscode"), { recursive: true });
    const result = await bash({ command: "touch ran" });
    expect(result.isError).toBe(true);
    expect(result.text).toContain("more than 1000 protected entries");
    expect(result.text).toContain("smaller workspace");
    expect(existsSync(join(fx.root, "ran"))).toBe(false);
    expect(existsSync(join(fx.root, ".git"))).toBe(false);
  });
});

describe("scan and sweep", () => {
  beforeEach(() => {
    fx = shellFixture();
  });

  it("stop at the limit; the sweep leaves unread directories alone and says when it could not read all", async () => {
    for (const dir of ["a", "b", "c"])
      mkdirSync(join(fx.root, "sub", dir, "deep"), { recursive: true });
    mkdirSync(join(fx.root, "sub", "c", "deep", ".git"));
    const before = await scanProtected(fx.root, { maxDirs: 3 });
    // Read: the root, sub, one of a/b/c; the .git under c/deep was not reached.
    expect([...before.entries.keys()]).toEqual([]);
    expect(before.unwalked.size).toBeGreaterThan(0);
    expect(await sweepProtected(before, 100)).toEqual([]);
    expect(existsSync(join(fx.root, "sub", "c", "deep", ".git"))).toBe(true);

    // New directories beyond what the sweep may read: it says so.
    for (let i = 0; i < 5; i++) mkdirSync(join(fx.root, `n${i}`));
    const lines = await sweepProtected(before, 4);
    expect(lines.join("\n")).toContain("could not check everything the command created");
  });

  it("removes entries created after the scan, keeps one that existed and was moved with its directory", async () => {
    mkdirSync(join(fx.root, "sub", "old", ".git"), { recursive: true });
    const before = await scanProtected(fx.root, { maxDirs: 100 });
    expect([...before.entries.keys()]).toEqual(["sub/old/.git"]);
    await sleep(5);
    renameSync(join(fx.root, "sub", "old"), join(fx.root, "sub", "moved"));
    mkdirSync(join(fx.root, "sub", "new", ".vscode"), { recursive: true });
    const lines = await sweepProtected(before, 100);
    expect(lines).toEqual([
      "the sandbox removed sub/new/.vscode, which commands may not create (protected path)",
    ]);
    expect(existsSync(join(fx.root, "sub", "moved", ".git"))).toBe(true);
  });
});
