/**
 * Pattern matching that cannot freeze the process. Glob patterns and gitignore patterns compile to
 * regular expressions, and some of them backtrack for ages on some names (`*a*a*a…*c` against a
 * name of 64 a's): a RegExp cannot be interrupted, so on the main thread it would stop the event
 * loop, every agent of the process and every timer, including the tool's own timeout. So the
 * matching runs in a worker thread. While a task runs the worker sends a heartbeat; when the beats
 * stop for `stallMs` (one match is stuck) or the task outlives its time limit, the worker is
 * terminated (V8 interrupts the regular expression) and the task fails with a `MatchTooSlowError`.
 * Idle workers are kept for the next task (a warm call costs well under a millisecond more than
 * matching in place; the first one about 50 ms to start the worker).
 */
import { createRequire } from "node:module";
import type { Worker } from "node:worker_threads";
import { WORKER_SOURCE } from "./match-worker.ts";
import { workerThreads } from "./node-modules.ts";

/** A single match (one synchronous stretch of the worker) may take this long. */
export const MATCH_STALL_MS = 10_000;
/** How often a busy worker says it is alive. */
const BEAT_MS = 250;
/** Workers kept idle for the next task. */
const MAX_IDLE = 2;

/** Matching was stopped: one match took too long (`stalled`) or the whole task did (`time`). */
export class MatchTooSlowError extends Error {
  constructor(
    readonly reason: "stalled" | "time",
    readonly afterMs: number,
  ) {
    super(`matching ${reason === "stalled" ? "stalled" : "ran out of time"} after ${afterMs} ms`);
    this.name = "MatchTooSlowError";
  }
}

export interface BoundedOptions {
  signal?: AbortSignal;
  /** Time for the whole task; the worker is terminated when it passes. */
  limitMs: number;
  stallMs?: number;
}

export interface GlobTask {
  patterns: string[];
  options: {
    cwd: string;
    dot?: boolean;
    onlyFiles?: boolean;
    absolute?: boolean;
    expandDirectories?: boolean;
    followSymbolicLinks?: boolean;
    caseSensitiveMatch?: boolean;
    ignore?: string[];
  };
  /** List no directory outside this one (symbolic links are not followed either). */
  confine?: string;
  /** The crawl stops after this long and returns what it found. */
  timeoutMs: number;
}

type Tasks = {
  glob: [GlobTask, { paths: string[]; stopped: boolean }];
  ignored: [{ patterns: string[]; paths: string[]; ignorecase?: boolean }, boolean[]];
  gitignore: [{ rules: [string, string][]; paths: string[] }, boolean[]];
};

const idle: Worker[] = [];
let taskIds = 0;
let modules: { tinyglobby: string; ignore: string } | undefined;

function spawnWorker(): Worker {
  if (!modules) {
    const require = createRequire(import.meta.url);
    modules = { tinyglobby: require.resolve("tinyglobby"), ignore: require.resolve("ignore") };
  }
  return new (workerThreads().Worker)(WORKER_SOURCE, {
    eval: true,
    workerData: { ...modules, beatMs: BEAT_MS },
  });
}

/** Runs one task in a worker of its own, bounded in time; see the file comment. */
export function runBounded<K extends keyof Tasks>(
  kind: K,
  input: Tasks[K][0],
  options: BoundedOptions,
): Promise<Tasks[K][1]> {
  const { signal, limitMs, stallMs = MATCH_STALL_MS } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const worker = idle.pop() ?? spawnWorker();
  // A busy worker keeps the process alive, as pending I/O would; an idle one does not.
  worker.ref();
  const id = ++taskIds;
  return new Promise((resolve, reject) => {
    let stall: NodeJS.Timeout | undefined;
    let settled = false;
    const finish = (keep: boolean, settle: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(stall);
      clearTimeout(deadline);
      signal?.removeEventListener("abort", onAbort);
      worker.off("message", onMessage);
      worker.off("error", onError);
      worker.off("exit", onExit);
      if (keep && idle.length < MAX_IDLE) {
        worker.unref();
        idle.push(worker);
      } else void worker.terminate();
      settle();
    };
    const armStall = (): void => {
      clearTimeout(stall);
      stall = setTimeout(
        () => finish(false, () => reject(new MatchTooSlowError("stalled", stallMs))),
        stallMs,
      );
    };
    const deadline = setTimeout(
      () => finish(false, () => reject(new MatchTooSlowError("time", limitMs))),
      limitMs,
    );
    const onAbort = (): void => finish(false, () => reject(signal?.reason));
    const onMessage = (message: { id: number; beat?: true; result?: unknown; error?: string }) => {
      if (message.id !== id) return;
      if (message.beat) return armStall();
      if (message.error !== undefined) finish(true, () => reject(new Error(message.error)));
      else finish(true, () => resolve(message.result as Tasks[K][1]));
    };
    const onError = (error: Error): void => finish(false, () => reject(error));
    const onExit = (): void =>
      finish(false, () => reject(new Error("the matcher worker exited unexpectedly")));
    signal?.addEventListener("abort", onAbort, { once: true });
    worker.on("message", onMessage);
    worker.on("error", onError);
    worker.on("exit", onExit);
    armStall();
    worker.postMessage({ id, kind, input });
  });
}
