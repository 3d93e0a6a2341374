/**
 * One shell process: spawns the command with bash (or, under the hardened preset, bash inside
 * bubblewrap) and waits for its end. The command runs detached in its own process group so that
 * a timeout or an abort can kill everything it started, not just the shell; groups still alive
 * when this process exits are killed too. A small wrapper script merges stderr into stdout (one
 * pipe keeps their order) and reports the final working directory on fd 3, which is how the
 * session learns about a `cd` without parsing the command.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import type { Readable } from "node:stream";
import { type ProtectedSnapshot, sweepProtected } from "../sandbox.ts";
import { decodeInto, type OutputBuffer } from "./output.ts";

/** Between SIGTERM and SIGKILL of a process group. */
export const KILL_GRACE_MS = 1_000;
/** After the shell exits, how long leftover `&` children may hold the output pipes open. */
const DRAIN_MS = 250;
/** After a sandbox is killed, before the second sweep of protected entries. */
const SETTLE_MS = 250;

const SHELL = existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh";

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
  /**
   * Run inside bubblewrap: its path, the arguments before the shell, and the protected top-level
   * entries before the command (the ones it creates are removed when it ends).
   */
  sandbox?: { bwrap: string; args: string[]; protectedBefore?: ProtectedSnapshot };
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
 * sandbox, then removes the protected top-level entries the command created.
 */
export async function runShell(run: ShellRun): Promise<ShellOutcome> {
  const outcome = await runProcess(run);
  const snapshot = run.sandbox?.protectedBefore;
  if (!snapshot) return outcome;
  const removed = await sweepProtected(snapshot);
  if (outcome.timedOut || outcome.aborted || outcome.signal) {
    // The outer bwrap died first; what ran inside is killed just after it. Sweep once more.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    removed.push(...(await sweepProtected(snapshot)));
  }
  if (removed.length > 0) outcome.removedProtected = removed;
  return outcome;
}

function runProcess(run: ShellRun): Promise<ShellOutcome> {
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
