/**
 * Regression tests for the fixes of the permission layer's security review (commit "Review fixes
 * in the permission layer"). Each test failed before those fixes.
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, realpath, rm, stat, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import {
  type AgentOptions,
  ConfigurationError,
  createAgent,
  createBareAgent,
  type Message,
  ResumeError,
  type RunState,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { rejectionOf } from "../support/promises.ts";
import { expectValidTranscript, resultText } from "../support/results.ts";
import { useTempDirs } from "../support/temp.ts";
import { countingTool } from "../support/tools.ts";
import { expectErrorResult, expectOkResult, failureReason, offeredTools } from "./helpers.ts";

const tempDir = useTempDirs("skein-perm-");

const SECRET = "SECRET-TOKEN-4242";

/** A temp workspace (its canonical path) with `.env` and `secrets/k.pem` holding SECRET. */
async function workspace(): Promise<string> {
  const ws = await realpath(await tempDir());
  await writeFile(path.join(ws, ".env"), `API_KEY=${SECRET}\n`);
  await mkdir(path.join(ws, "secrets"));
  await writeFile(path.join(ws, "secrets", "k.pem"), `-----BEGIN KEY----- ${SECRET}\n`);
  await writeFile(path.join(ws, "notes.txt"), `public notes mention TOKEN too\n`);
  return ws;
}

/** Every tool_result text of a transcript, joined. */
function allResultText(messages: Message[]): string {
  return messages
    .flatMap((message) => (typeof message.content === "string" ? [] : message.content))
    .filter((block) => block.type === "tool_result")
    .map((block) => resultText(block as Parameters<typeof resultText>[0]))
    .join("\n");
}

/** One batch of calls, then "done". */
function batchModel(calls: { id: string; name: string; input: unknown }[]) {
  return scriptedModel([{ toolCalls: calls }, { text: "done" }]);
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 30));

describe("1. path rules are read relative to the workspace", () => {
  async function readDenied(deny: (ws: string) => string, file: string) {
    const ws = await workspace();
    const model = batchModel([{ id: "r1", name: "Read", input: { file_path: file } }]);
    const result = await createAgent({ model, cwd: ws, permissions: { deny: [deny(ws)] } }).run(
      "go",
    );
    expect(result.subtype).toBe("success");
    expectErrorResult(result.messages, "r1", /denied/i);
    expect(failureReason(result, "r1")).toBe("denied");
    expect(allResultText(result.messages)).not.toContain(SECRET);
  }

  it('"./.env" matches .env', async () => {
    await readDenied(() => "Read(./.env)", ".env");
  });

  it('"./secrets/**" matches secrets/k.pem', async () => {
    await readDenied(() => "Read(./secrets/**)", "secrets/k.pem");
  });

  it("an absolute path inside the workspace matches", async () => {
    await readDenied((ws) => `Read(${ws}/.env)`, ".env");
  });

  it('an absolute path written with "//" matches', async () => {
    // `//tmp/ws/.env` (Claude Code's spelling of an absolute path), and `//${ws}` as written.
    await readDenied((ws) => `Read(/${ws}/.env)`, ".env");
    await readDenied((ws) => `Read(//${ws}/.env)`, ".env");
  });

  it("patterns that can only name paths outside the workspace, or negate, are refused at assembly", async () => {
    const ws = await workspace();
    const build = (rule: string) => () =>
      createAgent({ model: scriptedModel([]), cwd: ws, permissions: { deny: [rule] } });
    for (const rule of ["Read(~/.ssh/**)", "Read(//etc/passwd)", "Read(../x)"]) {
      expect(build(rule), rule).toThrow(ConfigurationError);
      expect(build(rule), rule).toThrow(/outside the workspace/);
    }
    expect(build("Read(!x)")).toThrow(ConfigurationError);
    expect(build("Read(!x)")).toThrow(/negations are not supported/);
  });
});

describe("2. a Read ask rule hides files from LS, Glob and Grep", () => {
  it("the secret never appears in their results, and Read of it asks", async () => {
    const ws = await workspace();
    // Only the rule under test restricts reading: no other file holds the secret.
    await rm(path.join(ws, ".env"));
    const model = batchModel([
      {
        id: "g1",
        name: "Grep",
        input: { pattern: "TOKEN", output_mode: "content" },
      },
      { id: "g2", name: "Glob", input: { pattern: "**/*" } },
      { id: "l1", name: "LS", input: { path: "secrets" } },
      { id: "r1", name: "Read", input: { file_path: "secrets/k.pem" } },
    ]);
    const result = await createAgent({
      model,
      cwd: ws,
      permissions: { ask: ["Read(secrets/**)"] },
    }).run("go");
    expect(result.subtype).toBe("paused");
    expect(result.pending?.map((call) => [call.id, call.reason])).toEqual([["r1", "approval"]]);
    const textOf = (id: string) => {
      const call = result.steps[0]!.toolCalls.find((entry) => entry.callId === id);
      expect(call?.isError, `${id} ran`).toBe(false);
      return JSON.stringify(call?.result.content);
    };
    for (const id of ["g1", "g2", "l1"]) {
      expect(textOf(id), id).not.toContain(SECRET);
      expect(textOf(id), id).not.toContain("k.pem");
    }
    // The searches did run: the public file is found.
    expect(textOf("g1")).toContain("notes.txt");
    expect(textOf("g2")).toContain("notes.txt");
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });
});

describe("3. Bash file arguments honour Read rules", () => {
  const permissions = { deny: ["Read(.env)"], allow: ["Bash(cat:*)"] };

  it("a glob that could name a denied file is denied (a deny is never an ask) and does not run", async () => {
    const ws = await workspace();
    const model = batchModel([
      { id: "b1", name: "Bash", input: { command: "cat .en?" } },
      { id: "b2", name: "Bash", input: { command: "cat .en*" } },
    ]);
    const result = await createAgent({ model, cwd: ws, permissions }).run("go");
    expect(result.subtype).toBe("success");
    for (const id of ["b1", "b2"]) expectErrorResult(result.messages, id, /denied/i);
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it('"../.env" is denied, and ".env" is denied even when the approval handler says yes', async () => {
    const ws = await workspace();
    const approval = vi.fn(() => true);
    const model = batchModel([
      { id: "b1", name: "Bash", input: { command: "cat ../.env" } },
      { id: "b2", name: "Bash", input: { command: "cat .env" } },
    ]);
    const result = await createAgent({ model, cwd: ws, permissions, approval }).run("go");
    expect(result.subtype).toBe("success");
    for (const id of ["b1", "b2"]) {
      expectErrorResult(result.messages, id, /denied/i);
      expect(failureReason(result, id)).toBe("denied");
    }
    expect(approval).not.toHaveBeenCalled();
    expect(allResultText(result.messages)).not.toContain(SECRET);
  });
});

describe("4. Bash rules read a custom Bash tool's ruleContent as a command", () => {
  it('deny "Bash(rm:*)" denies rm, through wrappers too', async () => {
    const runs: string[] = [];
    const bash = tool(
      "Bash",
      "Runs a command",
      z.object({ command: z.string() }),
      async ({ command }) => {
        runs.push(command);
        return `ran ${command}`;
      },
      { ruleContent: (input) => input.command },
    );
    const model = batchModel([
      { id: "c1", name: "Bash", input: { command: "rm -rf x" } },
      { id: "c2", name: "Bash", input: { command: "timeout 5 rm x" } },
      { id: "c3", name: "Bash", input: { command: "ls" } },
    ]);
    const result = await createBareAgent({
      model,
      tools: [bash],
      permissions: { deny: ["Bash(rm:*)"] },
    }).run("go");
    expect(result.subtype).toBe("success");
    expectErrorResult(result.messages, "c1", /denied/i);
    expectErrorResult(result.messages, "c2", /denied/i);
    expectOkResult(result.messages, "c3");
    expect(runs).toEqual(["ls"]);
  });
});

describe("5. held calls are decided again on resume", () => {
  /** Write w1 asks (no handler); Bash b1 (allowed by the pausing agent) is held behind it. */
  async function pausedBatch() {
    const ws = await workspace();
    const model = batchModel([
      { id: "w1", name: "Write", input: { file_path: "new.txt", content: "x" } },
      { id: "b1", name: "Bash", input: { command: "touch bash-ran" } },
    ]);
    const options: AgentOptions = { model, cwd: ws, permissions: { allow: ["Bash"] } };
    const result = await createAgent(options).run("go");
    expect(result.subtype).toBe("paused");
    expect(result.pending?.map((call) => call.id)).toEqual(["w1"]);
    const state = JSON.parse(JSON.stringify(result.state)) as RunState;
    const held = state.batch?.calls.find((call) => call.id === "b1");
    expect(held && "reason" in held ? held.reason : undefined).toBe("held");
    return { ws, model, options, state, bashRan: () => existsSync(path.join(ws, "bash-ran")) };
  }

  it("a held call the resuming agent's rules ask about does not run without an approval", async () => {
    const { ws, model, state, bashRan } = await pausedBatch();
    const resumed = await createAgent({ model, cwd: ws, permissions: { ask: ["Bash"] } }).resume(
      state,
      { approvals: { w1: true } },
    );
    expect(resumed.subtype).toBe("success");
    expectOkResult(resumed.messages, "w1");
    expectErrorResult(resumed.messages, "b1", /not given|denied/i);
    expect(bashRan()).toBe(false);
    expectValidTranscript(resumed.messages);
  });

  it("approved by id, the held call runs under the asking rules", async () => {
    const { ws, model, state, bashRan } = await pausedBatch();
    const resumed = await createAgent({ model, cwd: ws, permissions: { ask: ["Bash"] } }).resume(
      state,
      { approvals: { w1: true, b1: true } },
    );
    expect(resumed.subtype).toBe("success");
    expectOkResult(resumed.messages, "b1");
    expect(bashRan()).toBe(true);
  });

  it("an approval may name a held call: false keeps it from running", async () => {
    const { options, state, bashRan } = await pausedBatch();
    const resumed = await createAgent(options).resume(state, {
      approvals: { w1: true, b1: false },
    });
    expect(resumed.subtype).toBe("success");
    expectOkResult(resumed.messages, "w1");
    expectErrorResult(resumed.messages, "b1");
    expect(bashRan()).toBe(false);
  });
});

describe("6. a tampered finished call is refused on resume", () => {
  async function expectTamperRefused(tamper: (call: Record<string, unknown>) => void) {
    const safe = countingTool("safe");
    const risky = countingTool("risky");
    const model = batchModel([
      { id: "s1", name: "safe", input: { target: "one" } },
      { id: "r1", name: "risky", input: { target: "alpha" } },
    ]);
    const options: AgentOptions = {
      model,
      tools: [safe.tool, risky.tool],
      permissions: { ask: ["risky"] },
    };
    const paused = await createBareAgent(options).run("go");
    expect(paused.subtype).toBe("paused");
    const state = JSON.parse(JSON.stringify(paused.state)) as RunState;
    const done = state.batch!.calls.find((call) => call.id === "s1")!;
    expect(done.status).toBe("done");
    tamper(done as unknown as Record<string, unknown>);

    const unhandled = vi.fn();
    process.on("unhandledRejection", unhandled);
    try {
      const error = await rejectionOf(
        createBareAgent(options).resume(state, { approvals: { r1: true } }),
      );
      expect(error).toBeInstanceOf(ResumeError);
      await settle();
      expect(unhandled).not.toHaveBeenCalled();
    } finally {
      process.off("unhandledRejection", unhandled);
    }
    expect(safe.runs).toEqual(["one"]);
    expect(risky.runs).toEqual([]);
    expect(model.requests).toHaveLength(1);
  }

  it("result set to null", async () => {
    await expectTamperRefused((call) => {
      call.result = null;
    });
  });

  it("block removed", async () => {
    await expectTamperRefused((call) => {
      delete call.block;
    });
  });

  it("block.tool_use_id changed", async () => {
    await expectTamperRefused((call) => {
      (call.block as { tool_use_id: string }).tool_use_id = "r1";
    });
  });
});

describe("7. runData is sealed: altered data is dropped on resume", () => {
  /** Read a.txt, then Write c.txt asks (no handler): the paused state carries a.txt's record. */
  async function pausedAfterRead() {
    const ws = await workspace();
    await writeFile(path.join(ws, "a.txt"), "alpha\n");
    await writeFile(path.join(ws, "b.txt"), "bravo\n");
    const model = batchModel([
      { id: "r1", name: "Read", input: { file_path: "a.txt" } },
      { id: "w1", name: "Write", input: { file_path: "c.txt", content: "c" } },
    ]);
    const result = await createAgent({ model, cwd: ws }).run("go");
    expect(result.subtype).toBe("paused");
    expect(result.pending?.map((call) => call.id)).toEqual(["w1"]);
    const fresh = () => JSON.parse(JSON.stringify(result.state)) as RunState;
    expect(Object.keys(fresh().runData ?? {})).toEqual(["skein.read:a.txt"]);
    return { ws, fresh };
  }

  /** Resumes `state` (w1 approved) with a model whose next turn edits `file`. */
  async function resumeWithEdit(ws: string, state: RunState, file: string, from: string) {
    const model = scriptedModel([
      {
        toolCalls: [
          {
            id: "e1",
            name: "Edit",
            input: { file_path: file, old_string: from, new_string: "CHANGED" },
          },
        ],
      },
      { text: "done" },
    ]);
    const resumed = await createAgent({ model, cwd: ws, approval: () => true }).resume(state, {
      approvals: { w1: true },
    });
    expect(resumed.subtype).toBe("success");
    return resumed;
  }

  it("a forged read record for a file never read is dropped: Edit asks to read it first", async () => {
    const { ws, fresh } = await pausedAfterRead();
    const file = path.join(ws, "b.txt");
    const stats = await stat(file);
    const state = fresh();
    state.runData!["skein.read:b.txt"] = {
      mtimeMs: stats.mtimeMs,
      size: stats.size,
      sha256: createHash("sha256")
        .update(await readFile(file))
        .digest("hex"),
    };
    const resumed = await resumeWithEdit(ws, state, "b.txt", "bravo");
    expectErrorResult(resumed.messages, "e1", /not been read|Read it first/);
    expect(await readFile(file, "utf8")).toBe("bravo\n");
  });

  it("without its seal the data is dropped; the untouched state keeps it", async () => {
    const { ws, fresh } = await pausedAfterRead();
    const file = path.join(ws, "a.txt");
    const unsealed = fresh();
    delete unsealed.runDataSeal;
    const tampered = await resumeWithEdit(ws, unsealed, "a.txt", "alpha");
    expectErrorResult(tampered.messages, "e1", /not been read|Read it first/);
    expect(await readFile(file, "utf8")).toBe("alpha\n");
    // Control: the same state, sealed, lets Edit change the file Read recorded.
    const intact = await resumeWithEdit(ws, fresh(), "a.txt", "alpha");
    expectOkResult(intact.messages, "e1");
    expect(await readFile(file, "utf8")).toBe("CHANGED\n");
  });
});

describe("8. a bare Read deny hides the whole read family", () => {
  it("Read, LS, Glob and Grep are not offered to the model", async () => {
    const ws = await workspace();
    const model = scriptedModel([{ text: "hi" }]);
    await createAgent({ model, cwd: ws, permissions: { deny: ["Read"] } }).run("go");
    const offered = offeredTools(model);
    for (const name of ["Read", "LS", "Glob", "Grep"]) expect(offered).not.toContain(name);
    expect(offered).toContain("Write");
    expect(offered).toContain("Bash");
  });
});

describe("9. an app tool cannot pass itself off as a built-in", () => {
  it('the hardened preset refuses a tool without security whatever its Symbol.for("skein.builtin")', () => {
    const values: unknown[] = [
      { permission: { kind: "none" } },
      { permission: { kind: "read", paths: () => [] } },
      true,
      {},
    ];
    for (const value of values) {
      const fake = tool("fake_builtin", "Claims to be built in", z.object({}), async () => "ok");
      Object.defineProperty(fake, Symbol.for("skein.builtin"), { value, enumerable: false });
      const build = () =>
        createBareAgent({ model: scriptedModel([]), tools: [fake], preset: "hardened" });
      expect(build, JSON.stringify(value)).toThrow(ConfigurationError);
      expect(build, JSON.stringify(value)).toThrow('"fake_builtin"');
    }
  });
});

describe("10. the CLI's approval prompt", () => {
  // Imported here, not at the top: the function is new with the fix.
  const load = async () => (await import("../../src/cli/approve.ts")).printable;

  it("shows a long input whole", async () => {
    const printable = await load();
    const command = `echo ${"a".repeat(990)} && rm -rf ~`;
    expect(command.length).toBeGreaterThanOrEqual(1000);
    const shown = printable({ command });
    expect(shown).toContain(command);
    expect(shown).toContain("rm -rf ~");
  });

  it("escapes control and format characters; ordinary text and JSON newlines stay readable", async () => {
    const printable = await load();
    const shown = printable(`ok\u001b[2J\u0007 evil\u202Etxt.exe zero\u200Bwidth`);
    expect(shown).toBe("ok\\u001b[2J\\u0007 evil\\u202etxt.exe zero\\u200bwidth");
    for (const char of ["\u001b", "\u0007", "\u202E", "\u200B"]) expect(shown).not.toContain(char);
    const input = printable({ command: "echo one\necho two", note: "caf\u00e9 \u202E" });
    expect(input).toBe('{"command":"echo one\\necho two","note":"café \\u202e"}');
  });
});

describe("11. symlinks: the path opened is checked, not only the path given", () => {
  it("Read through a link to a denied file is denied", async () => {
    const ws = await workspace();
    await symlink(".env", path.join(ws, "l"));
    const model = batchModel([{ id: "r1", name: "Read", input: { file_path: "l" } }]);
    const result = await createAgent({
      model,
      cwd: ws,
      permissions: { deny: ["Read(.env)"] },
    }).run("go");
    expectErrorResult(result.messages, "r1", /denied/i);
    expect(allResultText(result.messages)).not.toContain(SECRET);
  });

  it("a Write through a link into .git/hooks asks despite Edit(**)", async () => {
    const ws = await workspace();
    await mkdir(path.join(ws, ".git", "hooks"), { recursive: true });
    await symlink(path.join(".git", "hooks"), path.join(ws, "l"));
    const model = batchModel([
      { id: "w1", name: "Write", input: { file_path: "l/pre-commit", content: "evil" } },
    ]);
    const result = await createAgent({
      model,
      cwd: ws,
      permissions: { allow: ["Edit(**)"] },
    }).run("go");
    expect(result.subtype).toBe("paused");
    expect(result.pending?.map((call) => call.id)).toEqual(["w1"]);
    expect(existsSync(path.join(ws, ".git", "hooks", "pre-commit"))).toBe(false);
  });

  /** A custom tool that points the link `l` at `target` when it runs (after the gate's checks). */
  function swapTool(ws: string) {
    return tool("swap_link", "Repoints l", z.object({ target: z.string() }), async ({ target }) => {
      await rm(path.join(ws, "l"), { force: true });
      await symlink(target, path.join(ws, "l"));
      return "swapped";
    });
  }

  it("a link swapped to a denied file after the check is not read", async () => {
    const ws = await workspace();
    await symlink("notes.txt", path.join(ws, "l"));
    const model = batchModel([
      { id: "s1", name: "swap_link", input: { target: ".env" } },
      { id: "r1", name: "Read", input: { file_path: "l" } },
    ]);
    const result = await createAgent({
      model,
      cwd: ws,
      tools: [swapTool(ws)],
      permissions: { deny: ["Read(.env)"] },
    }).run("go");
    expectOkResult(result.messages, "s1");
    expectErrorResult(result.messages, "r1", /denied|forbids/i);
    expect(allResultText(result.messages)).not.toContain(SECRET);
  });

  it("a link swapped into .git/hooks after the check is not written through", async () => {
    const ws = await workspace();
    await mkdir(path.join(ws, ".git", "hooks"), { recursive: true });
    await mkdir(path.join(ws, "sub"));
    await symlink("sub", path.join(ws, "l"));
    const model = batchModel([
      { id: "s1", name: "swap_link", input: { target: path.join(".git", "hooks") } },
      { id: "w1", name: "Write", input: { file_path: "l/pre-commit", content: "evil" } },
    ]);
    const result = await createAgent({
      model,
      cwd: ws,
      tools: [swapTool(ws)],
      permissions: { allow: ["Edit(**)"] },
    }).run("go");
    expect(result.subtype).toBe("success");
    expectOkResult(result.messages, "s1");
    expectErrorResult(result.messages, "w1", /protected/);
    expect(existsSync(path.join(ws, ".git", "hooks", "pre-commit"))).toBe(false);
  });
});
