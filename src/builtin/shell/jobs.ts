/**
 * Background shells: the commands Bash starts with `run_in_background`, which BashOutput reads
 * and KillShell stops. Each runs as a task of the agent's background registry (which stops them
 * all on shutdown and owns their status); this file adds what the registry does not know about
 * shells: their output buffer, how far BashOutput has read it, and how the process ended. Ids
 * are `bash_N`, never one the registry already holds. Under the hardened preset a shell stops
 * when the run that started it ends (and its sandbox sweeps then), so nothing it does outlives
 * the run; outside the preset it lives until KillShell, `agent.close()` or the process's exit.
 */
import type { BackgroundTasks, ToolContext } from "../../tools/types.ts";
import { endWithRun, rootOf } from "../background.ts";
import { BuiltinToolError } from "../define.ts";
import type { BuiltinEnvironment } from "../environment.ts";
import { OutputBuffer } from "./output.ts";
import { KILL_GRACE_MS, runShell, type ShellLaunch, type ShellOutcome } from "./process.ts";

export interface ShellTask {
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

/** Keyed by the agent's registry: each run sees it through a view of its own. */
function shellsOf(registry: BackgroundTasks): ShellRegistry {
  const root = rootOf(registry);
  let shells = registries.get(root);
  if (!shells) {
    shells = { shells: new Map(), counter: 0 };
    registries.set(root, shells);
  }
  return shells;
}

/** The registry of this call: the context's, else the agent's. */
export function backgroundOf(env: BuiltinEnvironment, context: ToolContext): BackgroundTasks {
  return context.background ?? env.background;
}

function knownIds(registry: BackgroundTasks): string {
  const ids = [...shellsOf(registry).shells.keys()];
  return ids.length > 0 ? `Known shells: ${ids.join(", ")}.` : "No background shells were started.";
}

/** The background shell `id` and its registry task; an error naming the known ids if none. */
export function findShell(registry: BackgroundTasks, id: string) {
  const task = registry.get(id);
  const shell = shellsOf(registry).shells.get(id);
  if (!task || !shell) {
    throw new BuiltinToolError(`No background shell with id "${id}". ${knownIds(registry)}`);
  }
  return { task, shell };
}

/** Starts `run` as a background task; returns its id. */
export function startBackground(
  registry: BackgroundTasks,
  run: ShellLaunch,
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
        const removed = task.outcome.removedProtected;
        if (removed) task.output.push(`\n${removed.join("\n")}\n`);
      } finally {
        done();
      }
      const status = describeStatus(task.outcome);
      if (task.outcome.exitCode !== 0 || task.outcome.removedProtected) throw new Error(status);
      return status;
    },
  });
  if (run.sandbox) endWithRun(registry, id);
  return id;
}

export function describeStatus(outcome: ShellOutcome | undefined): string {
  if (!outcome) return "running";
  if (outcome.spawnError) return `failed to start (${outcome.spawnError})`;
  if (outcome.aborted) return "killed";
  const removed = outcome.removedProtected
    ? "; the sandbox removed protected paths it created"
    : "";
  if (outcome.signal) return `killed by ${outcome.signal}${removed}`;
  return `exited with code ${outcome.exitCode}${removed}`;
}

/** Waits until a stopped shell is really gone (SIGKILL follows SIGTERM after the grace). */
export function untilGone(shell: ShellTask): Promise<void> {
  return Promise.race([shell.finished, delay(KILL_GRACE_MS + 2_000)]);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
