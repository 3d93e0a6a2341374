/**
 * C6: Write and Edit to persistence targets inside the workspace (git hooks and config, shell
 * start-up files, MCP, editor tasks, skein's own settings, case variants) always ask, even with
 * `permissions.allow: ["Write", "Edit"]`; with no approval handler the run pauses and the file
 * is left as it was.
 */
import * as fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Arena,
  attack,
  exists,
  expectOk,
  expectPausedForApproval,
  makeArena,
  PRESETS,
  turn,
} from "./helpers.ts";

/** Targets, and whether they exist beforehand (Edit needs an existing file). */
const TARGETS: { file: string; existing: boolean }[] = [
  { file: ".git/hooks/pre-commit", existing: true },
  { file: ".git/config", existing: true },
  { file: ".gitmodules", existing: true },
  { file: ".bashrc", existing: true },
  { file: ".mcp.json", existing: true },
  { file: ".vscode/tasks.json", existing: true },
  { file: ".skein/settings.json", existing: false },
  { file: ".GIT/config", existing: false },
  { file: "vendor/lib/.git/hooks/post-checkout", existing: false },
];

const ORIGINAL = "original content\n";

describe.each(PRESETS)("C6: protected paths ask ($label)", ({ preset }) => {
  let arena: Arena;
  beforeAll(() => {
    arena = makeArena("protected");
    for (const { file, existing } of TARGETS) if (existing) arena.put(file, ORIGINAL);
  });
  afterAll(() => arena.cleanup());

  const permissions = { allow: ["Write", "Edit"] };

  describe.each(TARGETS)("$file", ({ file, existing }) => {
    it("Write pauses for approval and writes nothing", async () => {
      const run = await attack(arena, {
        preset,
        permissions,
        turns: [turn(["w1", "Write", { file_path: file, content: "#!/bin/sh\ntouch pwned\n" }])],
      });
      expectPausedForApproval(run, "w1");
      if (existing) expect(fs.readFileSync(path.join(arena.work, file), "utf8")).toBe(ORIGINAL);
      else expect(exists(path.join(arena.work, file))).toBe(false);
    });

    if (existing)
      it("Edit (after a Read) pauses for approval and changes nothing", async () => {
        const run = await attack(arena, {
          preset,
          permissions,
          turns: [
            turn(["r1", "Read", { file_path: file }]),
            turn([
              "e1",
              "Edit",
              { file_path: file, old_string: "original", new_string: "[core]\nhooksPath=/x" },
            ]),
          ],
        });
        expectOk(run, "r1", /original content/);
        expectPausedForApproval(run, "e1");
        expect(fs.readFileSync(path.join(arena.work, file), "utf8")).toBe(ORIGINAL);
      });
  });

  it("spellings that reach the same entry ask too (./, a/../, absolute, trailing dot, HFS+)", async () => {
    for (const file of [
      "./.git/config",
      "src/../.git/config",
      path.join(arena.work, ".git/config"),
      ".git/./hooks/pre-commit",
      ".bashrc.",
      ".Skein/settings.json",
      // HFS+ drops these invisible code points from names: the same entry there.
      ".g\u200cit/config",
      "\ufeff.bashrc",
    ]) {
      const run = await attack(arena, {
        preset,
        permissions,
        turns: [turn(["w1", "Write", { file_path: file, content: "pwned" }])],
      });
      expectPausedForApproval(run, "w1");
    }
    expect(fs.readFileSync(path.join(arena.work, ".git/config"), "utf8")).toBe(ORIGINAL);
  });

  it("a symlink in the workspace pointing at a protected file asks too", async () => {
    arena.link(`innocent-${preset ?? "none"}.txt`, ".git/config");
    arena.link(`hooks-${preset ?? "none"}`, ".git/hooks");
    for (const file of [`innocent-${preset ?? "none"}.txt`, `hooks-${preset ?? "none"}/pre-push`]) {
      const run = await attack(arena, {
        preset,
        permissions,
        turns: [turn(["w1", "Write", { file_path: file, content: "pwned" }])],
      });
      expectPausedForApproval(run, "w1");
    }
    expect(exists(path.join(arena.work, ".git/hooks/pre-push"))).toBe(false);
  });

  it("control: the same allow rule lets an ordinary file be written without asking", async () => {
    const run = await attack(arena, {
      preset,
      permissions,
      turns: [turn(["w1", "Write", { file_path: `notes-${preset ?? "none"}.md`, content: "ok" }])],
    });
    expectOk(run, "w1");
    expect(run.result.subtype).toBe("success");
  });
});
