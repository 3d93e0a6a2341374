/** Test scripts run as child processes: from source (through tsx), one JSON argument, stdout lines. */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface Child {
  name: string;
  child: ChildProcess;
  /** Complete stdout lines so far. */
  readonly lines: string[];
  readonly stderr: string;
  /**
   * Resolves once `predicate` holds for the lines (checked as each arrives); rejects if the child
   * exits first, or after `withinMs` (the runner's `withinMs` unless given; none: no limit).
   */
  until(predicate: (lines: string[]) => boolean, what: string, withinMs?: number): Promise<void>;
  /** Resolves once a line equals `line` (or starts with it, when it ends with a space). */
  line(line: string, withinMs?: number): Promise<string>;
  send(line: string): void;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL, and wait for the death. */
  kill(): Promise<void>;
  /** True once this test killed it (with `kill()`). */
  killed: boolean;
  /** True until the process exits, whatever ends it. */
  readonly running: boolean;
}

export interface RunChildOptions {
  /** The child's name in failures (default: the script). */
  name?: string;
  /** How long `until` and `line` wait by default (default: no limit of their own). */
  withinMs?: number;
}

/** Runs `<dir>/<script>` from source (through tsx) in the repository root, with one JSON argument. */
export function runChild(
  dir: string,
  script: string,
  argument: unknown,
  options: RunChildOptions = {},
): Child {
  const name = options.name ?? script;
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const child = spawn(
    process.execPath,
    ["--import", "tsx", join(dir, script), JSON.stringify(argument)],
    { cwd: ROOT, env, stdio: ["pipe", "pipe", "pipe"] },
  );
  const lines: string[] = [];
  let partial = "";
  let stderr = "";
  const waiters = new Set<() => void>();
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop()!;
    lines.push(...parts);
    for (const waiter of [...waiters]) waiter();
  });
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  child.stdin!.on("error", () => {}); // a dead child's stdin: nothing to tell it any more
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
    (resolve, reject) => {
      child.on("error", reject);
      child.on("close", (code, signal) => resolve({ code, signal }));
    },
  );
  let outcome: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let failed: unknown; // the process could not be started
  const ended = () => {
    for (const waiter of [...waiters]) waiter();
  };
  exited.then(
    (exit) => {
      outcome = exit;
      ended();
    },
    (error) => {
      failed = error ?? new Error(`${name} could not be started`);
      ended();
    },
  );
  const output = () => `stdout: ${lines.slice(-40).join("\n")}\nstderr: ${stderr.slice(-3000)}`;
  const handle: Child = {
    name,
    child,
    lines,
    get stderr() {
      return stderr;
    },
    killed: false,
    get running() {
      return (
        outcome === undefined &&
        failed === undefined &&
        child.exitCode === null &&
        child.signalCode === null
      );
    },
    until(predicate, what, withinMs = options.withinMs) {
      return new Promise<void>((resolve, reject) => {
        const timer =
          withinMs === undefined
            ? undefined
            : setTimeout(() => {
                waiters.delete(check);
                reject(new Error(`${name}: no ${what} within ${withinMs} ms.\n${output()}`));
              }, withinMs);
        const check = () => {
          if (predicate(lines)) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve();
          } else if (outcome) {
            waiters.delete(check);
            clearTimeout(timer);
            const how = outcome.code ?? outcome.signal;
            reject(new Error(`${name} exited (${how}) before ${what}.\n${output()}`));
          } else if (failed !== undefined) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(failed);
          }
        };
        waiters.add(check);
        check();
      });
    },
    async line(wanted, withinMs) {
      const matches = (line: string) =>
        wanted.endsWith(" ") ? line.startsWith(wanted) : line === wanted;
      await handle.until((all) => all.some(matches), `line "${wanted}"`, withinMs);
      return lines.find(matches)!;
    },
    send(line) {
      if (outcome === undefined) child.stdin!.write(`${line}\n`);
    },
    exited,
    async kill() {
      if (outcome || failed !== undefined) return;
      handle.killed = true;
      child.kill("SIGKILL");
      await exited;
    },
  };
  return handle;
}
