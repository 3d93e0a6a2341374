import { spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { dirname } from "node:path";
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { glob } from "tinyglobby";
import type { BackgroundTasks, ToolContext, ToolDefinition, ToolResult } from "../tools/types.ts";
import { BuiltinToolError, defineBuiltin } from "./define.ts";
import type { BuiltinEnvironment } from "./environment.ts";
import { bwrapArgs, canonicalExisting, probeSandbox } from "./sandbox.ts";
import { isInsideOrEqual, sandboxEnvironment, scrubbedEnvironment } from "./shell-env.ts";

export const DEFAULT_TIMEOUT_MS = 120_000;
export const MAX_TIMEOUT_MS = 600_000;
/** Output kept for the model: the first HEAD and the last TAIL characters (the tail matters most). */
export const OUTPUT_HEAD_CHARS = 5_000;
export const OUTPUT_TAIL_CHARS = 25_000;
/** Between SIGTERM and SIGKILL of a process group. */
const KILL_GRACE_MS = 1_000;
/** After the shell exits, how long leftover `&` children may hold the output pipes open. */
const DRAIN_MS = 250;
/** At most this many paths matched by Read deny rules are masked in the sandbox. */
const MAX_MASKED_PATHS = 1_000;

const SHELL = existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh";

// ---------------------------------------------------------------------------------------------
// Bounded output

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;

/**
 * Output kept in bounded memory: a fixed head and a tail window, plus how much went by. Text
 * arrives already decoded, and no cut splits a UTF-16 surrogate pair (B4).
 */
export class OutputBuffer {
  private head = "";
  private headOpen = true;
  private tail: string[] = [];
  private tailLength = 0;
  private tailOffset = 0;
  /** Characters pushed so far. */
  total = 0;

  constructor(
    readonly headLimit = OUTPUT_HEAD_CHARS,
    readonly tailLimit = OUTPUT_TAIL_CHARS,
  ) {}

  push(text: string): void {
    if (!text) return;
    let rest = text;
    if (this.headOpen) {
      const room = this.headLimit - this.head.length;
      if (rest.length <= room) {
        this.head += rest;
        this.total += rest.length;
        return;
      }
      const cut = room > 0 && isHighSurrogate(rest.charCodeAt(room - 1)) ? room - 1 : room;
      this.head += rest.slice(0, cut);
      this.total += cut;
      this.headOpen = false;
      this.tailOffset = this.total;
      rest = rest.slice(cut);
    }
    this.tail.push(rest);
    this.tailLength += rest.length;
    this.total += rest.length;
    // Compacting at twice the window keeps memory bounded and the joins amortised.
    if (this.tailLength > 2 * this.tailLimit) this.trimTail();
  }

  /** True when characters were dropped between the head and the tail. */
  get truncated(): boolean {
    this.trimTail();
    return this.tailStart > this.head.length;
  }

  /** Head, a marker saying how much was left out, and the tail. */
  text(): string {
    return this.since(0);
  }

  /** What is still held from absolute offset `from` on, with a marker for what was dropped. */
  since(from: number): string {
    this.trimTail();
    let out = from < this.head.length ? this.head.slice(from) : "";
    const start = Math.max(from, this.head.length);
    const skipped = this.tailStart - start;
    if (skipped > 0) out += `\n\n[... ${skipped} characters of output omitted ...]\n\n`;
    const tail = this.tail.join("");
    return out + tail.slice(Math.max(0, start - this.tailStart));
  }

  private get tailStart(): number {
    return this.headOpen ? this.head.length : this.tailOffset;
  }

  private trimTail(): void {
    if (this.tailLength <= this.tailLimit) return;
    const joined = this.tail.join("");
    let drop = joined.length - this.tailLimit;
    if (isLowSurrogate(joined.charCodeAt(drop))) drop += 1;
    this.tail = [joined.slice(drop)];
    this.tailLength = joined.length - drop;
    this.tailOffset += drop;
  }
}

// ---------------------------------------------------------------------------------------------
// One shell process

/** Process groups still to kill if this process exits (one hook for all). */
const liveGroups = new Set<number>();
let groupHookInstalled = false;

function trackGroup(pid: number): void {
  liveGroups.add(pid);
  if (groupHookInstalled) return;
  groupHookInstalled = true;
  process.once("exit", () => {
    for (const group of liveGroups) killGroup(group, "SIGKILL");
  });
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {}
}

export interface ShellRun {
  command: string;
  cwd: string;
  env: Record<string, string>;
  /** Run inside bubblewrap: its path and the arguments before the shell. */
  sandbox?: { bwrap: string; args: string[] };
  signal: AbortSignal;
  timeoutMs?: number;
  output: OutputBuffer;
}

export interface ShellOutcome {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  /** `pwd -P` after the command, when the wrapper got to report it. */
  finalCwd?: string;
  spawnError?: string;
}

/**
 * The user's command runs in a group with fd 3 closed and stderr merged into stdout (one pipe
 * keeps their order); then the wrapper reports `pwd -P` on fd 3, NUL-terminated. A command that
 * calls `exit` never reaches the report, so the working directory stays as it was.
 */
function wrapCommand(command: string): string {
  return [
    `{ ${command}`,
    "} 2>&1 3>&-",
    "__skein_status=$?",
    `__skein_cwd=$(pwd -P 2>/dev/null) && printf '%s\\0' "$__skein_cwd" >&3`,
    "exit $__skein_status",
  ].join("\n");
}

/** Runs one command to its end, killing its whole process group on timeout or abort. */
export function runShell(run: ShellRun): Promise<ShellOutcome> {
  const outcome: ShellOutcome = { exitCode: null, signal: null, timedOut: false, aborted: false };
  if (run.signal.aborted) return Promise.resolve({ ...outcome, aborted: true });
  const script = wrapCommand(run.command);
  const [file, args] = run.sandbox
    ? [run.sandbox.bwrap, [...run.sandbox.args, SHELL, "-c", script]]
    : [SHELL, ["-c", script]];
  const child = spawn(file, args, {
    cwd: run.cwd,
    env: run.env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe", "pipe"],
  });

  return new Promise((resolve) => {
    const pid = child.pid;
    const streams = [child.stdout, child.stderr].filter((s): s is Readable => s !== null);
    const report = child.stdio[3] as Readable | null;
    let reported = Buffer.alloc(0);
    let open = streams.length + (report ? 1 : 0);
    let exited = false;
    let finished = false;
    let drainTimer: NodeJS.Timeout | undefined;
    let killTimer: NodeJS.Timeout | undefined;

    const stop = (): void => {
      if (pid === undefined || killTimer || exited) return;
      killGroup(pid, "SIGTERM");
      // Still runs after the shell exits: a child that ignores SIGTERM must die too.
      killTimer = setTimeout(() => {
        killGroup(pid, "SIGKILL");
        liveGroups.delete(pid);
      }, KILL_GRACE_MS);
      killTimer.unref();
    };
    const onAbort = (): void => {
      outcome.aborted = true;
      stop();
    };
    const timeout =
      run.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            outcome.timedOut = true;
            stop();
          }, run.timeoutMs);

    const finish = (): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timeout);
      clearTimeout(drainTimer);
      run.signal.removeEventListener("abort", onAbort);
      for (const stream of streams) stream.destroy();
      report?.destroy();
      if (reported.at(-1) === 0) {
        const records = reported.subarray(0, -1).toString("utf8").split("\0");
        outcome.finalCwd = records.at(-1);
      }
      resolve(outcome);
    };
    const closed = (): void => {
      open -= 1;
      if (open === 0 && exited) finish();
    };

    if (pid !== undefined) trackGroup(pid);
    run.signal.addEventListener("abort", onAbort, { once: true });
    for (const stream of streams) {
      const decoder = new StringDecoder("utf8");
      stream.on("data", (chunk: Buffer) => run.output.push(decoder.write(chunk)));
      stream.on("end", () => run.output.push(decoder.end()));
      stream.on("close", closed);
    }
    report?.on("data", (chunk: Buffer) => {
      // Only the last record counts; keep a bounded suffix.
      reported = Buffer.concat([reported, chunk]);
      if (reported.length > 65_536) reported = reported.subarray(-65_536);
    });
    report?.on("close", closed);
    child.on("error", (error) => {
      outcome.spawnError = error.message;
      exited = true;
      finish();
    });
    child.on("exit", (code, signal) => {
      exited = true;
      outcome.exitCode = code;
      outcome.signal = signal;
      if (pid !== undefined && !killTimer) liveGroups.delete(pid);
      if (open === 0) return finish();
      drainTimer = setTimeout(finish, DRAIN_MS);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Per-agent session: the working directory and the lock that keeps Bash calls apart (B13)

interface Session {
  cwd?: string;
  tail: Promise<void>;
}

const sessions = new WeakMap<BuiltinEnvironment, Session>();

function sessionOf(env: BuiltinEnvironment): Session {
  let session = sessions.get(env);
  if (!session) {
    session = { tail: Promise.resolve() };
    sessions.set(env, session);
  }
  return session;
}

/** Runs `fn` after every earlier call of this session; an abort while waiting skips it. */
async function exclusive<T>(
  session: Session,
  signal: AbortSignal,
  fn: () => Promise<T>,
): Promise<T | undefined> {
  const previous = session.tail;
  let release!: () => void;
  const mine = new Promise<void>((resolve) => {
    release = resolve;
  });
  session.tail = previous.then(() => mine);
  try {
    await untilSettledOrAborted(previous, signal);
    if (signal.aborted) return undefined;
    return await fn();
  } finally {
    release();
  }
}

function untilSettledOrAborted(previous: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      signal.removeEventListener("abort", done);
      resolve();
    };
    signal.addEventListener("abort", done, { once: true });
    previous.then(done);
  });
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The session's directory if it is still a directory inside the workspace; else the root. */
function startingCwd(env: BuiltinEnvironment, session: Session, notes: string[]): string {
  const root = env.workspace.root;
  const cwd = session.cwd ?? root;
  const canonical = canonicalExisting(cwd);
  if (cwd !== root && !(canonical && isDirectory(canonical) && isInsideOrEqual(root, canonical))) {
    notes.push("The previous working directory no longer exists; the command ran in the root.");
    session.cwd = root;
    return root;
  }
  return cwd;
}

/** Keeps the directory the command ended in, if it is inside the workspace. */
function keepCwd(
  env: BuiltinEnvironment,
  session: Session,
  outcome: ShellOutcome,
  notes: string[],
) {
  if (outcome.finalCwd === undefined) return;
  const root = env.workspace.root;
  const canonical = canonicalExisting(outcome.finalCwd);
  if (canonical && isDirectory(canonical) && isInsideOrEqual(root, canonical)) {
    session.cwd = canonical;
    return;
  }
  // Never echo the outside path (DESIGN: no host paths outside the workspace).
  session.cwd = root;
  notes.push(
    `The command changed directory to outside the workspace; the working directory was reset to the workspace root (${root}).`,
  );
}

// ---------------------------------------------------------------------------------------------
// Sandbox (hardened preset)

type Sandbox = { bwrap: string; root: string; maskPaths: string[] };

/** Undefined outside the preset; under it, the sandbox or an error saying why there is none. */
async function prepareSandbox(env: BuiltinEnvironment): Promise<Sandbox | undefined> {
  if (!env.sandboxed) return undefined;
  const probe = await probeSandbox();
  if (!probe.available) {
    throw new BuiltinToolError(
      `The command was not run: the hardened preset runs every Bash command inside a bubblewrap sandbox, and the sandbox is unavailable here (${probe.reason ?? "unknown reason"}). ` +
        "To fix it, install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`) and allow user namespaces, or run without the hardened preset. Commands never run unsandboxed under the preset.",
    );
  }
  const maskPaths = await deniedPaths(env);
  return { bwrap: probe.bwrap ?? "bwrap", root: env.workspace.root, maskPaths };
}

/**
 * Workspace paths matched by `Read(...)` deny patterns, gitignore-style: a pattern without "/"
 * matches at any depth, a leading "/" anchors it at the root, `dir/**` masks the directory whole.
 * Patterns for the home (`~/...`) or absolute ones (`//...`) are covered by the hidden home or
 * not at all. Matching is case-insensitive, as deny rules are (DESIGN).
 */
async function deniedPaths(env: BuiltinEnvironment): Promise<string[]> {
  const patterns = env.readDenyPatterns.map(toGlob).filter((p): p is string => p !== undefined);
  if (patterns.length === 0) return [];
  const root = env.workspace.root;
  const found = await glob(patterns, {
    cwd: root,
    absolute: true,
    dot: true,
    onlyFiles: false,
    expandDirectories: false,
    followSymbolicLinks: false,
    caseSensitiveMatch: false,
  });
  const canonical = [...new Set(found.map((p) => canonicalExisting(p.replace(/\/$/, ""))))]
    .filter((p): p is string => p !== undefined && p !== root)
    .sort((a, b) => a.length - b.length);
  // Shortest first, so a masked directory is seen before what it holds; those need no mask of
  // their own (and bwrap could not create their mount points inside a read-only tmpfs).
  const masks = new Set<string>();
  for (const path of canonical) {
    let parent = dirname(path);
    while (parent !== root && parent !== dirname(parent) && !masks.has(parent)) {
      parent = dirname(parent);
    }
    if (!masks.has(parent)) masks.add(path);
  }
  if (masks.size > MAX_MASKED_PATHS) {
    throw new BuiltinToolError(
      `The command was not run: more than ${MAX_MASKED_PATHS} paths match the Read deny rules, more than the sandbox masks. Deny their directory instead (Read(dir/**)).`,
    );
  }
  return [...masks];
}

function toGlob(pattern: string): string | undefined {
  let p = pattern.trim();
  if (!p || p.startsWith("!") || p.startsWith("~") || p.startsWith("//")) return undefined;
  if (p.startsWith("./")) p = p.slice(2);
  p = p.replace(/\/+$/, "").replace(/\/\*\*$/, "");
  if (!p) return undefined;
  if (p.startsWith("/")) return p.slice(1);
  return p.includes("/") ? p : `**/${p}`;
}

function shellRun(
  sandbox: Sandbox | undefined,
  command: string,
  cwd: string,
): Omit<ShellRun, "signal" | "output" | "timeoutMs"> {
  if (!sandbox) return { command, cwd, env: scrubbedEnvironment() };
  const inner = sandboxEnvironment(sandbox.root);
  const args = bwrapArgs({ root: sandbox.root, cwd, maskPaths: sandbox.maskPaths, env: inner });
  // bwrap itself needs nothing from our environment; --clearenv gives the command `inner` only.
  return { command, cwd, env: inner, sandbox: { bwrap: sandbox.bwrap, args } };
}

// ---------------------------------------------------------------------------------------------
// Background shells

interface ShellTask {
  output: OutputBuffer;
  /** Offset BashOutput has read up to. */
  read: number;
  outcome?: ShellOutcome;
  finished: Promise<void>;
}

interface ShellRegistry {
  shells: Map<string, ShellTask>;
  counter: number;
}

const registries = new WeakMap<BackgroundTasks, ShellRegistry>();

function shellsOf(registry: BackgroundTasks): ShellRegistry {
  let shells = registries.get(registry);
  if (!shells) {
    shells = { shells: new Map(), counter: 0 };
    registries.set(registry, shells);
  }
  return shells;
}

function backgroundOf(env: BuiltinEnvironment, context: ToolContext): BackgroundTasks {
  return context.background ?? env.background;
}

function knownIds(registry: BackgroundTasks): string {
  const ids = [...shellsOf(registry).shells.keys()];
  return ids.length > 0 ? `Known shells: ${ids.join(", ")}.` : "No background shells were started.";
}

function startBackground(
  registry: BackgroundTasks,
  run: Omit<ShellRun, "signal" | "output" | "timeoutMs">,
  description: string | undefined,
): string {
  const shells = shellsOf(registry);
  let id: string;
  do id = `bash_${++shells.counter}`;
  while (registry.get(id) !== undefined || shells.shells.has(id));
  let done!: () => void;
  const task: ShellTask = {
    output: new OutputBuffer(),
    read: 0,
    finished: new Promise<void>((resolve) => {
      done = resolve;
    }),
  };
  shells.shells.set(id, task);
  registry.start({
    id,
    description: description ?? run.command,
    run: async (signal) => {
      try {
        task.outcome = await runShell({ ...run, signal, output: task.output });
      } finally {
        done();
      }
      const status = describeStatus(task.outcome);
      if (task.outcome.exitCode !== 0) throw new Error(status);
      return status;
    },
  });
  return id;
}

function describeStatus(outcome: ShellOutcome | undefined): string {
  if (!outcome) return "running";
  if (outcome.spawnError) return `failed to start (${outcome.spawnError})`;
  if (outcome.aborted) return "killed";
  if (outcome.signal) return `killed by ${outcome.signal}`;
  return `exited with code ${outcome.exitCode}`;
}

// ---------------------------------------------------------------------------------------------
// Results

function foregroundResult(
  outcome: ShellOutcome,
  output: OutputBuffer,
  timeoutMs: number,
  notes: string[],
  details: Record<string, unknown>,
): ToolResult {
  const text = output.text().replace(/\n+$/, "");
  const withNotes = (head: string, body: string): string =>
    [head, body, ...notes].filter((part) => part !== "").join("\n");
  const resultDetails = {
    ...details,
    exitCode: outcome.exitCode,
    signal: outcome.signal,
    timedOut: outcome.timedOut,
    outputChars: output.total,
    truncated: output.truncated,
  };
  let head: string | undefined;
  if (outcome.spawnError) head = `The command could not be started: ${outcome.spawnError}`;
  else if (outcome.timedOut)
    head = `Command timed out after ${timeoutMs} ms; its process group was killed. Output so far:`;
  else if (outcome.aborted) head = "Command was aborted; its process group was killed.";
  else if (outcome.signal) head = `Command was killed by signal ${outcome.signal}.`;
  else if (outcome.exitCode !== 0) head = `Exit code ${outcome.exitCode}`;
  if (head !== undefined) {
    return { content: withNotes(head, text), isError: true, details: resultDetails };
  }
  return { content: withNotes("", text || "(no output)"), details: resultDetails };
}

// ---------------------------------------------------------------------------------------------
// Tools

export interface BashInput {
  command: string;
  timeout?: number;
  description?: string;
  run_in_background?: boolean;
}

const BASH_DESCRIPTION = `Runs a shell command with /bin/bash and returns its output (stdout and stderr together).
- The working directory persists between calls (cd sub, then later commands run in sub); it never leaves the workspace.
- timeout is in milliseconds: default ${DEFAULT_TIMEOUT_MS}, at most ${MAX_TIMEOUT_MS}. On timeout the whole process tree is killed.
- stdin is closed: commands that read input get end-of-file at once. Use non-interactive flags.
- Long output keeps the first ${OUTPUT_HEAD_CHARS} and last ${OUTPUT_TAIL_CHARS} characters.
- run_in_background: true starts the command and returns a bash_id at once; read its output with BashOutput and stop it with KillShell.
- A non-zero exit code is reported as an error with the output's tail.`;

export function bashTool(env: BuiltinEnvironment): ToolDefinition<BashInput> {
  return defineBuiltin<BashInput>({
    name: "Bash",
    description: BASH_DESCRIPTION,
    schema: {
      type: "object",
      properties: {
        command: { type: "string", description: "The command to execute" },
        timeout: {
          type: "number",
          description: `Optional timeout in milliseconds (default ${DEFAULT_TIMEOUT_MS}, max ${MAX_TIMEOUT_MS})`,
        },
        description: {
          type: "string",
          description: "Clear, concise description of what this command does in 5-10 words",
        },
        run_in_background: {
          type: "boolean",
          description:
            "Set to true to run this command in the background. Use BashOutput to read the output later.",
        },
      },
      required: ["command"],
      additionalProperties: false,
    },
    security: { network: "unrestricted", filesystem: "unrestricted", sideEffects: "external" },
    concurrencySafe: false,
    permission: { kind: "bash", command: (input) => input.command },
    async handler(input, context) {
      if (!input.command.trim()) throw new BuiltinToolError("The command is empty.");
      const timeoutMs = Math.min(
        MAX_TIMEOUT_MS,
        Math.max(1, Math.round(input.timeout ?? DEFAULT_TIMEOUT_MS)),
      );
      // Refuse before anything runs when the preset's sandbox is missing.
      const sandbox = await prepareSandbox(env);
      const session = sessionOf(env);
      const result = await exclusive(session, context.signal, async (): Promise<ToolResult> => {
        const notes: string[] = [];
        const cwd = startingCwd(env, session, notes);
        const run = shellRun(sandbox, input.command, cwd);
        if (input.run_in_background) {
          const id = startBackground(backgroundOf(env, context), run, input.description);
          return {
            content: [
              `Command running in the background with bash_id ${id}.`,
              `Read its output with BashOutput { "bash_id": "${id}" }; stop it with KillShell { "shell_id": "${id}" }.`,
              ...notes,
            ].join("\n"),
            details: { bashId: id, cwd, sandboxed: sandbox !== undefined },
          };
        }
        const output = new OutputBuffer();
        const outcome = await runShell({ ...run, signal: context.signal, timeoutMs, output });
        keepCwd(env, session, outcome, notes);
        return foregroundResult(outcome, output, timeoutMs, notes, {
          cwd: session.cwd ?? env.workspace.root,
          sandboxed: sandbox !== undefined,
        });
      });
      return result ?? { content: "The command was not run: the call was aborted.", isError: true };
    },
  });
}

export interface BashOutputInput {
  bash_id: string;
  filter?: string;
}

export function bashOutputTool(env: BuiltinEnvironment): ToolDefinition<BashOutputInput> {
  return defineBuiltin<BashOutputInput>({
    name: "BashOutput",
    description:
      "Returns the new output of a background Bash command since the last BashOutput for it, and its status (running, exited with code N, killed). filter: an optional regular expression; only matching lines are returned (the others are consumed).",
    schema: {
      type: "object",
      properties: {
        bash_id: { type: "string", description: "The id of the background shell" },
        filter: {
          type: "string",
          description: "Optional regular expression; only output lines matching it are shown",
        },
      },
      required: ["bash_id"],
      additionalProperties: false,
    },
    security: { network: "none", filesystem: "none", sideEffects: "none" },
    concurrencySafe: true,
    permission: { kind: "none" },
    async handler(input, context) {
      const registry = backgroundOf(env, context);
      const task = registry.get(input.bash_id);
      const shell = shellsOf(registry).shells.get(input.bash_id);
      if (!task || !shell) {
        throw new BuiltinToolError(
          `No background shell with id "${input.bash_id}". ${knownIds(registry)}`,
        );
      }
      let filter: RegExp | undefined;
      if (input.filter !== undefined) {
        try {
          filter = new RegExp(input.filter);
        } catch (error) {
          throw new BuiltinToolError(
            `filter is not a valid regular expression: ${(error as Error).message}`,
          );
        }
      }
      let text = shell.output.since(shell.read);
      shell.read = shell.output.total;
      if (filter) {
        const pattern = filter;
        text = text
          .split("\n")
          .filter((line) => pattern.test(line))
          .join("\n");
      }
      const status =
        task.status === "stopped"
          ? "killed (KillShell)"
          : task.status === "running"
            ? "running"
            : describeStatus(shell.outcome);
      return {
        content: `Status: ${status}\n${text.replace(/\n+$/, "") || "(no new output)"}`,
        details: { bashId: input.bash_id, status, exitCode: shell.outcome?.exitCode ?? null },
      };
    },
  });
}

export interface KillShellInput {
  shell_id: string;
}

export function killShellTool(env: BuiltinEnvironment): ToolDefinition<KillShellInput> {
  return defineBuiltin<KillShellInput>({
    name: "KillShell",
    description:
      "Stops a background Bash command started with run_in_background, killing its whole process tree.",
    schema: {
      type: "object",
      properties: {
        shell_id: { type: "string", description: "The id of the background shell to kill" },
      },
      required: ["shell_id"],
      additionalProperties: false,
    },
    security: { network: "none", filesystem: "none", sideEffects: "external" },
    concurrencySafe: false,
    permission: { kind: "none" },
    async handler(input, context) {
      const registry = backgroundOf(env, context);
      const task = registry.get(input.shell_id);
      const shell = shellsOf(registry).shells.get(input.shell_id);
      if (!task || !shell) {
        throw new BuiltinToolError(
          `No background shell with id "${input.shell_id}". ${knownIds(registry)}`,
        );
      }
      if (!registry.stop(input.shell_id)) {
        return `Shell ${input.shell_id} is not running (${describeStatus(shell.outcome)}).`;
      }
      // Wait until it is really gone (SIGKILL follows SIGTERM after the grace).
      await Promise.race([shell.finished, delay(KILL_GRACE_MS + 2_000)]);
      return `Killed shell ${input.shell_id}.`;
    },
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
