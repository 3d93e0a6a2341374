/**
 * Issue 8, section 4: the hardened preset leaves nothing behind. A sandboxed command (foreground
 * or background) must not plant a persistence target (`.git/hooks/pre-commit`, `.vscode/tasks.json`,
 * a nested `sub/.git`) that outlives it: missing top-level names cannot be created, existing
 * nested ones are read-only, nested ones created are removed when the command ends, and background
 * commands end with the run (or `agent.close()`). Through the public API, with bubblewrap for real.
 */
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createAgent } from "skein";
import { scriptedModel } from "skein/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { findOnPath, pidsWithCmdline } from "../support/processes.ts";
import { waitFor } from "../support/promises.ts";
import {
  type Arena,
  approveAll,
  attack,
  exists,
  expectError,
  expectOk,
  makeArena,
  requireBubblewrap,
  token,
  turn,
} from "./helpers.ts";

let arena: Arena;
beforeEach(() => {
  requireBubblewrap();
  arena = makeArena("persist");
});
afterEach(() => arena.cleanup());

const at = (relative: string) => path.join(arena.work, relative);

/** A foreground command that waits (at most ~20 s) until the workspace file `name` exists. */
const waitForFile = (name: string) =>
  `for i in $(seq 1 400); do [ -e ${name} ] && break; sleep 0.05; done; ls ${name}`;

describe("missing top-level protected names", () => {
  it("a background command cannot create .git/hooks/pre-commit or .vscode/tasks.json, and the run leaves nothing", async () => {
    const run = await attack(arena, {
      preset: "hardened",
      approval: approveAll,
      turns: [
        turn([
          "bg",
          "Bash",
          {
            command:
              "mkdir -p .git/hooks; echo 'touch pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; mkdir -p .vscode; echo '{}' > .vscode/tasks.json; echo x > .mcp.json; rmdir .vscode; mv .git moved; touch tried; sleep 600",
            run_in_background: true,
          },
        ]),
        turn(["wait", "Bash", { command: waitForFile("tried"), timeout: 60_000 }]),
      ],
    });
    expectOk(run, "bg");
    expectOk(run, "wait", /tried/);
    for (const file of [".git", ".vscode", ".mcp.json", "moved", "pwned"])
      expect(exists(at(file)), `${file} after the run`).toBe(false);
  }, 120_000);

  it("git init and a hook in the foreground fail, and the empty placeholders are gone after", async () => {
    const git = findOnPath("git");
    const run = await attack(arena, {
      preset: "hardened",
      approval: approveAll,
      turns: [
        turn([
          "init",
          "Bash",
          { command: git ? "git init -q ." : "mkdir .git/objects && touch .git/HEAD" },
        ]),
        turn(["hook", "Bash", { command: "mkdir -p .husky && echo x > .husky/pre-commit" }]),
        turn(["ok", "Bash", { command: "ls -A" }]),
      ],
    });
    expectError(run, "init");
    expectError(run, "hook");
    // During a command the placeholders are there (empty, read-only); afterwards they are gone.
    expectOk(run, "ok", /\.git/);
    for (const file of [".git", ".husky", ".vscode", ".bashrc", ".mcp.json"])
      expect(exists(at(file)), `${file} after the run`).toBe(false);
  }, 120_000);
});

describe("protected entries below the top", () => {
  it("existing ones are read-only; new ones, in new or existing directories, are removed and reported", async () => {
    arena.put("sub/.git/config", "[core]\n");
    arena.put("pkg/.vscode/settings.json", "{}\n");
    const run = await attack(arena, {
      preset: "hardened",
      approval: approveAll,
      turns: [
        turn([
          "existing",
          "Bash",
          {
            command:
              'echo "[core] hooksPath=/x" >> sub/.git/config; echo "config=$?"; mkdir sub/.git/hooks; echo "hooks=$?"; echo {} > pkg/.vscode/tasks.json; echo "tasks=$?"; rm -rf pkg/.vscode; echo "rm=$?"',
          },
        ]),
        turn([
          "new",
          "Bash",
          {
            command:
              "mkdir -p vendor/lib/.git/hooks && echo 'touch pwned' > vendor/lib/.git/hooks/pre-commit; mkdir -p src/.vscode && echo {} > src/.vscode/tasks.json; echo '{}' > a/.mcp.json; echo fine > src/fine.txt",
          },
        ]),
      ],
    });
    for (const name of ["config", "hooks", "tasks", "rm"])
      expect(run.text("existing")).toMatch(new RegExp(`${name}=[1-9]`));
    expect(fs.readFileSync(at("sub/.git/config"), "utf8")).toBe("[core]\n");
    expect(exists(at("sub/.git/hooks"))).toBe(false);
    expect(exists(at("pkg/.vscode/tasks.json"))).toBe(false);
    expect(fs.readFileSync(at("pkg/.vscode/settings.json"), "utf8")).toBe("{}\n");

    expectError(run, "new");
    for (const entry of ["vendor/lib/.git", "src/.vscode", "a/.mcp.json"]) {
      expect(run.text("new")).toContain(
        `the sandbox removed ${entry}, which commands may not create (protected path)`,
      );
      expect(exists(at(entry)), entry).toBe(false);
    }
    expect(fs.readFileSync(at("src/fine.txt"), "utf8")).toBe("fine\n");
    expect(exists(at("vendor/lib"))).toBe(true);
  }, 120_000);

  it("an existing nested .git moved along with its directory is kept", async () => {
    arena.put("lib/.git/HEAD", "ref: refs/heads/main\n");
    const run = await attack(arena, {
      preset: "hardened",
      approval: approveAll,
      turns: [turn(["mv", "Bash", { command: "mv lib lib2 && ls -A lib2" }])],
    });
    expectOk(run, "mv", /\.git/);
    expect(fs.readFileSync(at("lib2/.git/HEAD"), "utf8")).toBe("ref: refs/heads/main\n");
  }, 120_000);
});

describe("background commands end with the run, or with agent.close()", () => {
  it("under the preset: stopped when the run ends, what they made at depth removed before it returns", async () => {
    const needle = `sleep 6${Math.floor(Math.random() * 1e6)}`;
    const run = await attack(arena, {
      preset: "hardened",
      approval: approveAll,
      turns: [
        turn([
          "bg",
          "Bash",
          {
            command: `mkdir -p deep/a/.git/hooks && echo x > deep/a/.git/hooks/pre-commit && touch made; ${needle}`,
            run_in_background: true,
          },
        ]),
        turn(["wait", "Bash", { command: waitForFile("made"), timeout: 60_000 }]),
      ],
    });
    // The waiting command's own sweep may already remove what the background one made (any
    // sandboxed command that ends removes what appeared meanwhile); if not, the run's end does.
    expect(run.text("wait")).toContain("made");
    expect(run.result.subtype).toBe("success");
    // Swept before run() returned, and nothing of the command is left running.
    expect(exists(at("deep/a/.git"))).toBe(false);
    expect(exists(at("deep/a"))).toBe(true);
    await waitFor(() => (pidsWithCmdline(needle).length === 0 ? true : undefined));
  }, 120_000);

  it("agent.close() stops background shells (outside the preset, where runs leave them running)", async () => {
    const needle = `sleep 7${Math.floor(Math.random() * 1e6)}`;
    const agent = createAgent({
      model: scriptedModel([
        {
          toolCalls: [
            { id: "bg", name: "Bash", input: { command: needle, run_in_background: true } },
          ],
        },
        { text: "done" },
      ]),
      cwd: arena.work,
      approval: approveAll,
    });
    try {
      const result = await agent.run("start it");
      expect(result.subtype).toBe("success");
      await waitFor(() => (pidsWithCmdline(needle).length > 0 ? true : undefined));
      await agent.close();
      await waitFor(() => (pidsWithCmdline(needle).length === 0 ? true : undefined));
    } finally {
      for (const pid of pidsWithCmdline(needle)) process.kill(pid, "SIGKILL");
    }
  }, 120_000);
});

describe("the host killed mid-command", () => {
  // Three waits of up to the 60 s liveness limit each: the host starts tsx and a sandbox, then dies.
  it("SIGKILL of the host: the sandbox dies with it, the top level holds at most empty placeholders, and git looks past them", async () => {
    const git = findOnPath("git");
    if (git) {
      // The workspace inside a repository: an empty .git left behind must not hide it.
      execFileSync(git, ["init", "-q", arena.parent]);
    }
    const needle = token("needle");
    const script = path.join(arena.parent, "host.mts");
    const src = (file: string) => new URL(`../../src/${file}`, import.meta.url).href;
    fs.writeFileSync(
      script,
      `import { createAgent } from ${JSON.stringify(src("index.ts"))};
import { scriptedModel } from ${JSON.stringify(src("testing/index.ts"))};
const loop = "while true; do mkdir -p .git/hooks; echo x > .git/hooks/pre-commit; mkdir -p .vscode; echo {} > .vscode/tasks.json; touch tried; sleep 0.05; done # ${needle}";
const agent = createAgent({
  cwd: ${JSON.stringify(arena.work)},
  preset: "hardened",
  approval: () => true,
  model: scriptedModel([
    { toolCalls: [{ id: "bg", name: "Bash", input: { command: loop, run_in_background: true } }] },
    { toolCalls: [{ id: "fg", name: "Bash", input: { command: "sleep 600 # ${needle}", timeout: 600000 } }] },
    { text: "done" },
  ]),
});
await agent.run("go");
`,
    );
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const child = spawn(process.execPath, ["--import", "tsx", script], {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    try {
      await waitFor(() => (exists(at("tried")) ? true : undefined)).catch((error) => {
        throw new Error(`${(error as Error).message}; host stderr: ${stderr}`);
      });
      // Both commands run now: the background loop and the foreground sleep.
      // Liveness limits of tens of seconds: a loaded machine starts the sandbox slowly.
      await waitFor(() => (pidsWithCmdline(`sleep 600 # ${needle}`).length > 0 ? true : undefined));
      child.kill("SIGKILL");
      await waitFor(() => (pidsWithCmdline(needle).length === 0 ? true : undefined));
    } finally {
      child.kill("SIGKILL");
    }
    for (const file of [".git/hooks", ".vscode/tasks.json"])
      expect(exists(at(file)), `${file} after the host died`).toBe(false);
    for (const name of [".git", ".vscode"]) {
      if (exists(at(name))) expect(fs.readdirSync(at(name)), `${name} is empty`).toEqual([]);
    }
    if (git) {
      const top = execFileSync(git, ["rev-parse", "--show-toplevel"], {
        cwd: arena.work,
        encoding: "utf8",
      });
      expect(top.trim()).toBe(arena.parent);
    }
  }, 180_000);
});
