/**
 * Attack tests through the public API (RELIABILITY.md section (c)): a scripted model makes the
 * attacking tool calls, and the test inspects the transcript, the events and the file system.
 *
 * Layout of an arena (one temp parent per describe block, shared by its tests):
 *   parent/work     the workspace (`cwd`)
 *   parent/work2    a sibling sharing the prefix "work" (C2), with a secret
 *   parent/outside  secret files that must never be read, listed or changed
 * After every run: no secret string appears in the JSON of the result or of any event, nothing
 * outside the workspace changed (content, mtime, mode, links) and no entry appeared outside it,
 * and no tool result names the parent directory's host path unless the model gave it.
 */
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import path from "node:path";
import {
  type AgentEvent,
  type AgentOptions,
  createAgent,
  type SDKResultMessage,
  type StepToolCall,
} from "skein";
import { type ScriptedTurn, scriptedModel } from "skein/testing";
import { expect } from "vitest";
import { findOnPath } from "../support/processes.ts";
import { callText } from "../support/results.ts";
import { makeTempDir, removeDir } from "../support/temp.ts";

/** Every relevant case runs without a preset and under the hardened preset. */
export const PRESETS: { label: string; preset: "hardened" | undefined }[] = [
  { label: "no preset", preset: undefined },
  { label: "hardened preset", preset: "hardened" },
];

/** A unique string: a secret, a marker, a file name. */
export function token(label: string): string {
  return `${label}-${randomBytes(8).toString("hex")}`;
}

/**
 * Sandbox tests FAIL (never skip) without bubblewrap: under the preset, Bash without a sandbox
 * refuses every command, which would make "the secret did not leak" pass for the wrong reason.
 */
export function requireBubblewrap(): void {
  if (findOnPath("bwrap") === undefined)
    throw new Error(
      "bubblewrap (bwrap) is not on PATH: the hardened preset's sandbox tests need it. Install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`) and allow unprivileged user namespaces.",
    );
}

// ---------------------------------------------------------------------------------------------
// Arena

export interface Arena {
  /** Canonical temp parent directory. */
  parent: string;
  work: string;
  work2: string;
  outside: string;
  /** `outside/<name>`: a secret file (the `~/.ssh/id_rsa` of C3). */
  secretFile: string;
  /** `work2/x`: the sibling's secret file. */
  siblingFile: string;
  /** Strings that must never reach the model or an event. */
  secrets: string[];
  /** Unique names of outside entries: never listed unless the model typed them. */
  outsideNames: string[];
  /** State of everything outside the workspace when the arena was made. */
  before: Map<string, string>;
  /** Path of a new workspace file, made with parents. */
  put(relative: string, content: string): string;
  /** A symlink in the workspace (`relative`) pointing at `target` (as given). */
  link(relative: string, target: string): string;
  /** Everything outside the workspace, described: type, mode, mtime, size, content hash, link. */
  snapshot(): Map<string, string>;
  cleanup(): void;
}

export function makeArena(label = "attack"): Arena {
  const parent = makeTempDir(`skein-${label}-`);
  const work = path.join(parent, "work");
  const work2 = path.join(parent, "work2");
  const outside = path.join(parent, "outside");
  for (const dir of [work, work2, outside]) fs.mkdirSync(dir);

  const secrets: string[] = [];
  const outsideNames: string[] = [];
  const secretFileName = token("id_rsa");
  const secretFile = path.join(outside, secretFileName);
  const sshKey = token("OUTSIDE-SECRET");
  fs.writeFileSync(secretFile, `-----BEGIN KEY-----\n${sshKey}\nKEY=${sshKey}\n`);
  secrets.push(sshKey);
  outsideNames.push(secretFileName);
  const nestedName = token("nested");
  const nestedSecret = token("NESTED-SECRET");
  fs.mkdirSync(path.join(outside, "dir"));
  fs.writeFileSync(path.join(outside, "dir", nestedName), `KEY=${nestedSecret}\n`);
  secrets.push(nestedSecret);
  outsideNames.push(nestedName);
  const siblingSecret = token("SIBLING-SECRET");
  const siblingFile = path.join(work2, "x");
  fs.writeFileSync(siblingFile, `KEY=${siblingSecret}\n`);
  secrets.push(siblingSecret);
  const envSecret = token("WORK2-ENV-SECRET");
  fs.writeFileSync(path.join(work2, ".env"), `API_KEY=${envSecret}\n`);
  secrets.push(envSecret);

  // An ordinary workspace.
  fs.mkdirSync(path.join(work, "src"));
  fs.mkdirSync(path.join(work, "a"));
  fs.writeFileSync(path.join(work, "README.md"), "# Project\nhello from the workspace\n");
  fs.writeFileSync(path.join(work, "src", "app.ts"), "export const KEY_NAME = 'app';\n");

  const snapshot = () => snapshotOutside(parent, work);
  const arena: Arena = {
    parent,
    work,
    work2,
    outside,
    secretFile,
    siblingFile,
    secrets,
    outsideNames,
    before: snapshot(),
    put(relative, content) {
      const file = path.join(work, relative);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, content);
      return file;
    },
    link(relative, target) {
      const file = path.join(work, relative);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.symlinkSync(target, file);
      return file;
    },
    snapshot,
    cleanup() {
      removeDir(parent);
    },
  };
  return arena;
}

function snapshotOutside(parent: string, work: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const name of fs.readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      if (full === work) {
        out.set(full, "the workspace");
        continue;
      }
      const stats = fs.lstatSync(full);
      const kind = stats.isSymbolicLink()
        ? `symlink -> ${fs.readlinkSync(full)}`
        : stats.isDirectory()
          ? "directory"
          : stats.isFile()
            ? `file sha256=${createHash("sha256").update(fs.readFileSync(full)).digest("hex")}`
            : "special";
      out.set(full, `${kind} mode=${stats.mode} size=${stats.size} mtime=${stats.mtimeMs}`);
      if (stats.isDirectory()) walk(full);
    }
  };
  walk(parent);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Runs

export type Call = [id: string, name: string, input: Record<string, unknown>];

/** One model turn making these calls. */
export function turn(...calls: Call[]): ScriptedTurn {
  return { toolCalls: calls.map(([id, name, input]) => ({ id, name, input })) };
}

export const approveAll: NonNullable<AgentOptions["approval"]> = () => true;

export interface AttackOptions {
  /** Tool-call turns; a final `{ text: "done" }` is added. */
  turns: ScriptedTurn[];
  preset?: "hardened" | undefined;
  permissions?: AgentOptions["permissions"];
  approval?: AgentOptions["approval"];
  /** Strings besides the arena's secrets that must appear nowhere (environment values). */
  secrets?: string[];
  /** Skip the "nothing outside changed" check (a test that changes it on purpose). */
  outsideMayChange?: boolean;
  /** The run must end within this time: it is aborted then, and the test fails saying so. */
  deadlineMs?: number;
}

export interface AttackRun {
  result: SDKResultMessage;
  events: AgentEvent[];
  /** Every call that ran or was answered, by id. */
  calls: Map<string, StepToolCall>;
  call(id: string): StepToolCall;
  /** The text of the call's result. */
  text(id: string): string;
}

/** Runs the attack through `agent.stream` and checks that nothing leaked or changed outside. */
export async function attack(arena: Arena, options: AttackOptions): Promise<AttackRun> {
  const model = scriptedModel([...options.turns, { text: "done" }]);
  const agent = createAgent({
    model,
    cwd: arena.work,
    ...(options.preset !== undefined ? { preset: options.preset } : {}),
    ...(options.permissions !== undefined ? { permissions: options.permissions } : {}),
    ...(options.approval !== undefined ? { approval: options.approval } : {}),
  });
  const events: AgentEvent[] = [];
  const signal = options.deadlineMs !== undefined ? AbortSignal.timeout(options.deadlineMs) : null;
  try {
    for await (const event of agent.stream("attack", signal ? { signal } : {})) events.push(event);
  } catch (error) {
    if (signal?.aborted)
      throw new Error(
        `the run did not finish within ${options.deadlineMs} ms (aborted then); calls still running: ${unfinished(events).join(", ")}`,
      );
    throw error;
  }
  const last = events.at(-1);
  expect(last?.type, "the stream ends with a result event").toBe("result");
  const result = last as SDKResultMessage;
  const calls = new Map<string, StepToolCall>();
  for (const step of result.steps) for (const call of step.toolCalls) calls.set(call.callId, call);
  const run: AttackRun = {
    result,
    events,
    calls,
    call(id) {
      const found = calls.get(id);
      if (!found)
        throw new Error(
          `no result for call ${id} (subtype ${result.subtype}, pending ${JSON.stringify(result.pending?.map((p) => p.id))})`,
        );
      return found;
    },
    text: (id) => callText(run.call(id)),
  };
  expectNothingLeaked(arena, run, options);
  return run;
}

/** `name input` of the calls that started and did not end. */
function unfinished(events: AgentEvent[]): string[] {
  const ended = new Set(
    events.filter((e) => e.type === "tool_end").map((e) => (e as { callId?: string }).callId),
  );
  return events
    .filter((e) => e.type === "tool_start" && !ended.has((e as { callId?: string }).callId))
    .map((e) => {
      const { name, input } = e as { name?: string; input?: unknown };
      return `${name} ${JSON.stringify(input)}`;
    });
}

export function expectNothingLeaked(
  arena: Arena,
  run: AttackRun,
  options: Pick<AttackOptions, "secrets" | "outsideMayChange"> = {},
): void {
  const texts = [JSON.stringify(run.result), ...run.events.map((event) => JSON.stringify(event))];
  for (const secret of [...arena.secrets, ...(options.secrets ?? [])]) {
    const where = texts.findIndex((text) => text.includes(secret));
    expect(
      where,
      `secret ${secret} appeared in ${where === 0 ? "the result" : `event ${where - 1}`}`,
    ).toBe(-1);
  }
  const workspace = new RegExp(`${escapeRegExp(arena.work)}(?![A-Za-z0-9_.-])`, "g");
  for (const call of run.calls.values()) {
    const input = JSON.stringify(call.input);
    const text = callText(call);
    // The host path of the parent (hence of work2 and outside) is never shown unless the model typed it.
    if (!input.includes(arena.parent))
      expect(
        text.replace(workspace, "<workspace>"),
        `result of ${call.callId} (${call.name})`,
      ).not.toContain(arena.parent);
    for (const name of arena.outsideNames)
      if (!input.includes(name))
        expect(text, `result of ${call.callId} lists an outside entry`).not.toContain(name);
  }
  if (!options.outsideMayChange) {
    expect(Object.fromEntries(arena.snapshot()), "nothing outside the workspace changed").toEqual(
      Object.fromEntries(arena.before),
    );
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

// ---------------------------------------------------------------------------------------------
// Expectations

export function expectError(run: AttackRun, id: string, text?: RegExp): void {
  const call = run.call(id);
  expect(call.isError, `${id} should be an error result: ${callText(call).slice(0, 300)}`).toBe(
    true,
  );
  if (text) expect(callText(call)).toMatch(text);
}

export function expectOk(run: AttackRun, id: string, text?: RegExp): void {
  const call = run.call(id);
  expect(call.isError, `${id} should succeed: ${callText(call).slice(0, 300)}`).toBe(false);
  if (text) expect(callText(call)).toMatch(text);
}

/** The run paused on this call, waiting for approval. */
export function expectPausedForApproval(run: AttackRun, id: string): void {
  const { result } = run;
  expect(
    result.subtype,
    `run should pause for approval of ${id}; results: ${JSON.stringify([...run.calls.values()].map((c) => [c.callId, callText(c).slice(0, 200)]))}`,
  ).toBe("paused");
  expect(result.pending?.[0]).toMatchObject({ id, reason: "approval" });
  expect(run.calls.has(id), `${id} must not have run`).toBe(false);
}

/** A denied call: an error result saying so (never a pause, never a run). */
export function expectDenied(run: AttackRun, id: string): void {
  expect(run.result.subtype, `${id} should be denied, not ${run.result.subtype}`).not.toBe(
    "paused",
  );
  const call = run.call(id);
  expect(call.isError, `${id}: ${callText(call).slice(0, 300)}`).toBe(true);
  expect(callText(call)).toMatch(/denied/i);
  expect((call.result.details as { reason?: unknown } | undefined)?.reason).toBe("denied");
}

export function mkfifo(file: string): void {
  execFileSync("mkfifo", [file]);
}

export function exists(file: string): boolean {
  try {
    fs.lstatSync(file);
    return true;
  } catch {
    return false;
  }
}
