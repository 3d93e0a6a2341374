import type { BackgroundTasks } from "../tools/types.ts";

type TaskStatus = "running" | "done" | "failed" | "stopped";

interface TaskRecord {
  id: string;
  description?: string;
  status: TaskStatus;
  output?: unknown;
  controller: AbortController;
}

export type BackgroundRegistry = BackgroundTasks & {
  /** Stops every running task (on agent shutdown, and at process exit). */
  stopAll(): void;
};

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
      const record: TaskRecord = {
        id,
        status: "running",
        controller: new AbortController(),
        ...(task.description !== undefined ? { description: task.description } : {}),
      };
      tasks.set(id, record);
      trackLive(registry);
      const settle = (status: "done" | "failed", output: unknown): void => {
        if (record.status === "running") record.status = status;
        record.output = output;
        untrackIfIdle();
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
  };
  return registry;
}
