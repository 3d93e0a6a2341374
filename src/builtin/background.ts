import type { BackgroundTasks } from "../tools/types.ts";

type TaskStatus = "running" | "done" | "failed" | "stopped";

interface TaskRecord {
  id: string;
  description?: string;
  status: TaskStatus;
  output?: unknown;
  controller: AbortController;
  /** Resolves once `run` settled (a stopped task's clean-up, such as a sandbox sweep, included). */
  settled: Promise<void>;
}

export type BackgroundRegistry = BackgroundTasks & {
  /** Stops every running task (on agent shutdown, and at process exit). */
  stopAll(): void;
  /** Stops every running task and waits until each has settled (`agent.close()`). */
  close(): Promise<void>;
  /**
   * A view of the same tasks for one run: tasks started through it and marked with
   * `endWithRun` are stopped by its `end()`, which waits until they settled.
   */
  forRun(): RunBackground;
};

export interface RunBackground extends BackgroundTasks {
  end(): Promise<void>;
}

/** A stopped task that never settles does not hold up the end of a run or `close()` longer. */
const SETTLE_LIMIT_MS = 30_000;

/** The registries `createBackgroundTasks` made (an app may pass a registry of its own). */
const registries = new WeakSet<BackgroundTasks>();

/** On each run view: its registry and the ids to stop at its end (a set made with the first). */
const VIEW = Symbol("skein.runBackground");

interface ViewState {
  root: BackgroundTasks;
  marked: Set<string> | undefined;
}

function viewState(tasks: BackgroundTasks): ViewState | undefined {
  return (tasks as { [VIEW]?: ViewState })[VIEW];
}

/** The registry behind a run's view; any other registry is its own. */
export function rootOf(tasks: BackgroundTasks): BackgroundTasks {
  return viewState(tasks)?.root ?? tasks;
}

/** Task `id`, started through a run's view, is stopped when that run ends (else nothing). */
export function endWithRun(tasks: BackgroundTasks, id: string): void {
  const state = viewState(tasks);
  if (!state) return;
  state.marked ??= new Set();
  state.marked.add(id);
}

/** A view for one run of `tasks` when it is a registry of ours; undefined otherwise. */
export function runBackground(tasks: BackgroundTasks | undefined): RunBackground | undefined {
  return tasks && registries.has(tasks) ? (tasks as BackgroundRegistry).forRun() : undefined;
}

/** `close()` of a registry of ours; nothing for others. */
export function closeBackground(tasks: BackgroundTasks | undefined): Promise<void> {
  return tasks && registries.has(tasks) ? (tasks as BackgroundRegistry).close() : Promise.resolve();
}

/** Registries with running tasks; one exit hook stops them all. */
const live = new Set<BackgroundRegistry>();
let exitHookInstalled = false;

function trackLive(registry: BackgroundRegistry): void {
  live.add(registry);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const each of live) each.stopAll();
  });
}

/**
 * One agent's background tasks. A task's `run(signal)` promise settles its status: resolved is
 * "done" (its value is the output), rejected is "failed"; `stop` aborts the signal and the task
 * stays "stopped" however it then settles. Ids are the caller's (`bash_1`) or `task_N`.
 */
export function createBackgroundTasks(): BackgroundRegistry {
  const tasks = new Map<string, TaskRecord>();
  let counter = 0;

  const untrackIfIdle = (): void => {
    for (const task of tasks.values()) if (task.status === "running") return;
    live.delete(registry);
  };

  const registry: BackgroundRegistry = {
    start(task) {
      let id = task.id;
      if (id === undefined) {
        do id = `task_${++counter}`;
        while (tasks.has(id));
      } else if (tasks.has(id)) {
        throw new Error(`A background task with id "${id}" already exists.`);
      }
      let settled!: () => void;
      const record: TaskRecord = {
        id,
        status: "running",
        controller: new AbortController(),
        settled: new Promise<void>((resolve) => {
          settled = resolve;
        }),
        ...(task.description !== undefined ? { description: task.description } : {}),
      };
      tasks.set(id, record);
      trackLive(registry);
      const settle = (status: "done" | "failed", output: unknown): void => {
        if (record.status === "running") record.status = status;
        record.output = output;
        untrackIfIdle();
        settled();
      };
      let running: Promise<unknown>;
      try {
        running = Promise.resolve(task.run(record.controller.signal));
      } catch (error) {
        running = Promise.reject(error);
      }
      running.then(
        (value) => settle("done", value),
        (error: unknown) => settle("failed", error instanceof Error ? error.message : error),
      );
      return id;
    },
    get(id) {
      const record = tasks.get(id);
      if (!record) return undefined;
      return {
        id: record.id,
        status: record.status,
        ...(record.output !== undefined ? { output: record.output } : {}),
      };
    },
    stop(id) {
      const record = tasks.get(id);
      if (record?.status !== "running") return false;
      record.status = "stopped";
      record.controller.abort(new Error(`Background task ${id} was stopped.`));
      untrackIfIdle();
      return true;
    },
    stopAll() {
      for (const record of tasks.values()) registry.stop(record.id);
    },
    close() {
      registry.stopAll();
      // Stopped ones too: one stopped earlier may still be cleaning up.
      return settledWithin([...tasks.values()].map((record) => record.settled));
    },
    forRun() {
      // Made for every run, most of which start no task: the registry's own functions, and
      // the set of tasks to stop only once one is marked.
      const state: ViewState = { root: registry, marked: undefined };
      const view: RunBackground & { [VIEW]: ViewState } = {
        start: startTask,
        get: getTask,
        stop: stopTask,
        end() {
          const marked = state.marked;
          if (!marked) return Promise.resolve();
          const waiting: Promise<void>[] = [];
          for (const id of marked) {
            const record = tasks.get(id);
            if (!record) continue;
            registry.stop(id);
            waiting.push(record.settled);
          }
          marked.clear();
          return settledWithin(waiting);
        },
        [VIEW]: state,
      };
      return view;
    },
  };
  const startTask: BackgroundTasks["start"] = (task) => registry.start(task);
  const getTask: BackgroundTasks["get"] = (id) => registry.get(id);
  const stopTask: BackgroundTasks["stop"] = (id) => registry.stop(id);
  registries.add(registry);
  return registry;
}

function settledWithin(waiting: Promise<void>[]): Promise<void> {
  if (waiting.length === 0) return Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, SETTLE_LIMIT_MS);
    timer.unref();
  });
  return Promise.race([Promise.all(waiting).then(() => {}), limit]).finally(() =>
    clearTimeout(timer),
  );
}
