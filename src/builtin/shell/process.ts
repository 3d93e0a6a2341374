/**
 * One shell process: spawns the command with bash (or, under the hardened preset, bash inside
 * bubblewrap) and waits for its end. The command runs detached in its own process group, with a
 * marker in its environment, so that a timeout or an abort can kill everything it started, also
 * what left the group (tree.ts); trees still alive when this process exits are killed too. A small wrapper script merges stderr into stdout (one
 * pipe keeps their order) and reports the final working directory on fd 3, which is how the
 * session learns about a `cd` without parsing the command.
 */
import { existsSync } from "node:fs";
import type { Readable } from "node:stream";
import { childProcess } from "../node-modules.ts";
import type { SandboxRun } from "../sandbox-guard.ts";
import { decodeInto, type OutputBuffer } from "./output.ts";
import { newMarker, signalTree, TREE_MARKER } from "./tree.ts";

/** Between SIGTERM and SIGKILL of a process group. */
export const KILL_GRACE_MS = 1_000;
/** After the shell exits, how long leftover `&` children may hold the output pipes open. */
const DRAIN_MS = 250;

const SHELL = existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh";

/** Process groups (with their tree markers) still to kill if this process exits (one hook for all). */
const liveGroups = new Map<number, string>();
let groupHookInstalled = false;

function trackGroup(pid: number, marker: string): void {
  liveGroups.set(pid, marker);
  if (groupHookInstalled) return;
  groupHookInstalled = true;
  process.once("exit", () => {
    for (const [group, marker] of liveGroups) signalTree(group, marker, "SIGKILL");
  });
}

export interface ShellRun {
  command: string;
  cwd: string;
  env: Record<string, string>;
  /**
   * Run inside bubblewrap: its path, and what guards the workspace for this command (prepared
   * just before the spawn: the arguments before the shell; finished after the end: the sweep).
   */
  sandbox?: { bwrap: string; prepare(): Promise<SandboxRun> };
  signal: AbortSignal;
  timeoutMs?: number;
  output: OutputBuffer;
}

/** A run before it is given its signal, output buffer and time cap. */
export type ShellLaunch = Omit<ShellRun, "signal" | "output" | "timeoutMs">;

export interface ShellOutcome {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  /** `pwd -P` after the command, when the wrapper got to report it. */
  finalCwd?: string;
  spawnError?: string;
  /** Under the sandbox: one line per protected entry the command created and the sandbox removed. */
  removedProtected?: string[];
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

/**
 * Runs one command to its end, killing its whole process group on timeout or abort. Under the
 * sandbox, then removes the protected entries the command created (sandbox-guard.ts).
 */
export async function runShell(run: ShellRun): Promise<ShellOutcome> {
  if (!run.sandbox) return runProcess(run);
  let sandbox: SandboxRun;
  try {
    sandbox = await run.sandbox.prepare();
  } catch (error) {
    const spawnError = error instanceof Error ? error.message : String(error);
    return { exitCode: null, signal: null, timedOut: false, aborted: false, spawnError };
  }
  const outcome = await runProcess(run, sandbox);
  const removed = await sandbox.finish(outcome.timedOut || outcome.aborted || !!outcome.signal);
  if (removed.length > 0) outcome.removedProtected = removed;
  return outcome;
}

function runProcess(run: ShellRun, sandbox?: SandboxRun): Promise<ShellOutcome> {
  const outcome: ShellOutcome = { exitCode: null, signal: null, timedOut: false, aborted: false };
  if (run.signal.aborted) return Promise.resolve({ ...outcome, aborted: true });
  const script = wrapCommand(run.command);
  const [file, args] =
    run.sandbox && sandbox
      ? [run.sandbox.bwrap, [...sandbox.args, SHELL, "-c", script]]
      : [SHELL, ["-c", script]];
  const marker = newMarker();
  const child = childProcess().spawn(file, args, {
    cwd: run.cwd,
    // Every descendant inherits the marker, also those that leave the group (tree.ts).
    env: { ...run.env, [TREE_MARKER]: marker },
    detached: true,
    // Under the sandbox, fd 4 on: the seccomp program bwrap reads.
    stdio: ["ignore", "pipe", "pipe", "pipe", ...(sandbox?.fds ?? [])],
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
      signalTree(pid, marker, "SIGTERM");
      // Still runs after the shell exits: a child that ignores SIGTERM must die too.
      killTimer = setTimeout(() => {
        signalTree(pid, marker, "SIGKILL");
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

    if (pid !== undefined) trackGroup(pid, marker);
    run.signal.addEventListener("abort", onAbort, { once: true });
    for (const stream of streams) {
      decodeInto(stream, run.output);
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
