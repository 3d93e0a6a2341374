// createWorker(): takes run jobs from the agents' queues and executes them, one session at a time
// (design/scale.md). The queue decides who works next; the session log decides what happened.

import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { createBareAgent } from "../agents/assemble.ts";
import { type AgentHandle, handleOf } from "../agents/registry.ts";
import { AbortError, ConfigurationError } from "../core/errors.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";
import type { SessionStore } from "../core/session-store.ts";
import { checkSharedSecret, requireApprovalSecret, secretId } from "../run/approval-secret.ts";
import { type Board, boardOf, CHANNEL } from "./board.ts";
import { type Execution, executeJob } from "./execution.ts";
import { fencedStore } from "./execution-io.ts";
import { requirePeers } from "./peers.ts";
import { ensureQueue, QUEUE_PREFIX, queueOf } from "./queue.ts";
import type { PgBossJob, PgBossLike, RunJobData, Worker, WorkerOptions } from "./types.ts";
import { drainUnserved, failOrphans } from "./unserved.ts";

const WORKER_OPTION_KEYS: ReadonlySet<string> = new Set([
  "sessionStore",
  "agents",
  "concurrency",
  "leaseMs",
  "pollingIntervalMs",
  "unservedAgentGraceMs",
  "onError",
  "approvalSecret",
]);

/** What every execution of a worker shares. */
export interface WorkerContext {
  id: string;
  boss: PgBossLike;
  board: Board;
  /** The app's store, for reads and leases (never fenced). */
  store: SessionStore & Required<Pick<SessionStore, "lease" | "renew" | "release">>;
  leaseMs: number;
  handles: Map<string, AgentHandle>;
  /** `secretId` of the worker's approval secret, compared with each job's. */
  secretId: string;
  /** The execution the current async context belongs to (the fenced store reads it). */
  current: AsyncLocalStorage<Execution>;
  /** True once `stop()` was called: executions not yet begun do not begin. */
  stopping(): boolean;
  report(error: unknown): void;
}

/** Starts a worker for `agents` on `boss` (started by the app); resolves once it takes jobs. */
export async function createWorker(boss: PgBossLike, options: WorkerOptions): Promise<Worker> {
  const prefix = "createWorker()";
  requirePeers(prefix);
  checkBoss(prefix, boss);
  if (typeof options !== "object" || options === null)
    throw new ConfigurationError(
      `${prefix}: options are required: { sessionStore, agents }, received ${describeValue(options)}.`,
    );
  assertKnownOptions(prefix, options, WORKER_OPTION_KEYS);
  const board = boardOf(prefix, options.sessionStore);
  const store = options.sessionStore as WorkerContext["store"];
  const concurrency = wholeNumber(prefix, "concurrency", options.concurrency, 1, 1);
  const leaseMs = wholeNumber(prefix, "leaseMs", options.leaseMs, 30_000, 300);
  const pollingMs = wholeNumber(prefix, "pollingIntervalMs", options.pollingIntervalMs, 2_000, 10);
  const graceMs = wholeNumber(
    prefix,
    "unservedAgentGraceMs",
    options.unservedAgentGraceMs,
    60_000,
    100,
  );
  if (options.onError !== undefined && typeof options.onError !== "function")
    throw new ConfigurationError(
      `${prefix}: onError must be a function, received ${describeValue(options.onError)}.`,
    );
  const onError = options.onError;
  const current = new AsyncLocalStorage<Execution>();
  const approvalSecret = requireApprovalSecret(prefix, options.approvalSecret);
  const handles = agentHandles(
    prefix,
    options.agents,
    fencedStore(store, board, current),
    approvalSecret,
  );

  const id = `worker-${randomUUID()}`;
  let stopping = false;
  const context: WorkerContext = {
    id,
    boss,
    board,
    store,
    leaseMs,
    handles,
    secretId: secretId(approvalSecret),
    current,
    stopping: () => stopping,
    report: (error) => {
      try {
        onError?.(error instanceof Error ? error : new Error(String(error)));
      } catch {
        // a failing onError must not stop the worker
      }
    },
  };
  const queues = [...handles.keys()].map((name) => ({ name, queue: QUEUE_PREFIX + name }));
  await board.ready();
  await Promise.all(queues.map(({ queue }) => ensureQueue(boss, queue)));
  const served = [...handles.keys()];
  await board.heartbeat(id, served);

  /** Executions by key; `execution` is set once it holds its session's lease. */
  const running = new Map<string, { execution?: Execution; done: Promise<void> }>();
  let wake: (() => void) | undefined;
  /** A nudge that came while no wait was pending (a fetch in flight): the next wait is skipped. */
  let nudged = false;
  const nudge = () => {
    const resume = wake;
    wake = undefined;
    if (resume) resume();
    else nudged = true;
  };
  const ours = new Set(queues.map(({ queue }) => queue));
  const unlisten = [
    board.listen(CHANNEL.wake, (queue) => {
      if (ours.has(queue)) nudge();
    }),
    board.listen(CHANNEL.cancel, (runId) => {
      for (const { execution } of running.values())
        if (execution?.runId === runId) execution.cancel();
    }),
  ];
  const startedAt = Date.now();
  const timers = [
    setInterval(
      () => board.heartbeat(id, served).catch(context.report),
      Math.max(100, Math.min(10_000, Math.floor(graceMs / 3))),
    ),
    setInterval(
      () => {
        if (stopping || Date.now() - startedAt < graceMs) return;
        drainUnserved(context, { graceMs, served: new Set(served) }).catch(context.report);
      },
      Math.max(200, Math.floor(graceMs / 2)),
    ),
    setInterval(
      () => {
        if (!stopping) failOrphans(context).catch(context.report);
      },
      Math.max(500, leaseMs),
    ),
  ];
  for (const timer of timers) timer.unref();

  /**
   * Completes or fails a job, retrying while the database is away: a job left active would block
   * its session's next job (and pg-boss's singleton fetch) until its expiry.
   */
  const settle = async (call: () => Promise<unknown>) => {
    for (let attempt = 0; ; attempt++) {
      try {
        await call();
        return;
      } catch (error) {
        context.report(error);
        if (stopping && attempt >= 3) return; // the orphan sweep or pg-boss's expiry settles it
        await sleep(Math.min(250 * 2 ** attempt, 15_000));
      }
    }
  };
  const start = (job: PgBossJob<RunJobData>, agent: string, queue: string) => {
    const key = `${job.id}#${Math.random()}`;
    const holder = {} as { execution?: Execution; done: Promise<void> };
    holder.done = executeJob(context, {
      job,
      agent,
      queue,
      onExecution: (execution) => {
        holder.execution = execution;
      },
    })
      .then(
        (output) => settle(() => boss.complete(queue, job.id, output)),
        (error) => {
          context.report(error);
          const message = error instanceof Error ? error.message : String(error);
          return settle(() => boss.fail(queue, job.id, { error: message }));
        },
      )
      .finally(() => {
        running.delete(key);
        nudge();
      });
    running.set(key, holder);
  };

  const loop = (async () => {
    let turn = 0;
    let failures = 0;
    while (!stopping) {
      let fetched = 0;
      nudged = false; // this round fetches: what a nudge asked for happens now
      for (let i = 0; i < queues.length && !stopping; i++) {
        const free = concurrency - running.size;
        if (free <= 0) break;
        const { name, queue } = queues[(turn + i) % queues.length]!;
        try {
          const jobs = (await boss.fetch(queue, {
            batchSize: free,
            includeMetadata: true,
          })) as PgBossJob<RunJobData>[];
          failures = 0;
          for (const job of jobs) start(job, name, queue);
          fetched += jobs.length;
        } catch (error) {
          failures++;
          context.report(error);
          break;
        }
      }
      turn++;
      if (stopping) break;
      if (fetched > 0 && running.size < concurrency) continue;
      // Idle (or full): wait for an enqueue, a free slot, stop, or the next poll.
      const delay =
        running.size >= concurrency ? undefined : pollingMs * 2 ** Math.min(failures, 4);
      if (nudged) {
        nudged = false;
        continue;
      }
      let poll: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (delay !== undefined) poll = setTimeout(nudge, delay).unref();
      });
      // Woken early: the poll's timer must not fire later as an extra fetch.
      clearTimeout(poll);
      nudged = false;
    }
  })();

  let stopped: Promise<void> | undefined;
  return {
    id,
    get running() {
      return running.size;
    },
    stop: async (stopOptions) => {
      // A bad argument rejects this call only: a later stop() still stops the worker.
      const timeoutMs = wholeNumber(
        "worker.stop()",
        "timeoutMs",
        stopOptions?.timeoutMs,
        30_000,
        0,
      );
      stopped ??= (async () => {
        stopping = true;
        for (const timer of timers) clearInterval(timer);
        nudge();
        await loop;
        const all = () => Promise.allSettled([...running.values()].map(({ done }) => done));
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          all(),
          new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs))),
        ]);
        clearTimeout(timer);
        // Left after the timeout: fenced (nothing more is logged) and aborted; their jobs fail and
        // the next execution recovers them from the log, as after a crash.
        for (const { execution } of running.values()) execution?.halt("the worker stopped");
        await all();
        for (const off of unlisten) off();
        await board.forgetWorker(id).catch(context.report);
      })();
      return stopped;
    },
  };
}

/** Each served agent's handle, logging into the worker's (fenced) store. */
function agentHandles(
  prefix: string,
  agents: unknown,
  store: SessionStore,
  approvalSecret: string,
): Map<string, AgentHandle> {
  if (typeof agents !== "object" || agents === null || Array.isArray(agents))
    throw new ConfigurationError(
      `${prefix}: agents must be an object of agents by name ({ researcher: defineAgent({ ... }) }), received ${describeValue(agents)}.`,
    );
  const handles = new Map<string, AgentHandle>();
  for (const [name, value] of Object.entries(agents)) {
    queueOf(`${prefix}: agents.${name}`, name);
    const own = handleOf(value);
    if (typeof value !== "object" || value === null)
      throw new ConfigurationError(
        `${prefix}: agents.${name} must be an agent definition (defineAgent({ ... })) or an agent (createAgent(...)), received ${describeValue(value)}.`,
      );
    try {
      if (own) {
        handles.set(name, own.withStore(store, approvalSecret));
        continue;
      }
      // A definition gets its own tools only, as agentTool assembles one (design/agents.md); an
      // agent made with createAgent keeps skein's built-in tools.
      checkSharedSecret((value as { approvalSecret?: unknown }).approvalSecret, approvalSecret);
      const agent = createBareAgent({ ...(value as object), sessionStore: store, approvalSecret });
      handles.set(name, handleOf(agent)!);
    } catch (error) {
      if (error instanceof ConfigurationError)
        throw new ConfigurationError(`${prefix}: agents.${name}: ${error.message}`);
      throw error;
    }
  }
  if (handles.size === 0)
    throw new ConfigurationError(
      `${prefix}: agents is empty; give the worker at least one agent to serve.`,
    );
  return handles;
}

function checkBoss(prefix: string, boss: unknown): asserts boss is PgBossLike {
  const methods = [
    "send",
    "fetch",
    "complete",
    "fail",
    "cancel",
    "createQueue",
    "getQueue",
    "getQueues",
    "getJobById",
  ];
  const missing =
    typeof boss === "object" && boss !== null
      ? methods.filter((name) => typeof (boss as Record<string, unknown>)[name] !== "function")
      : methods;
  if (missing.length > 0)
    throw new ConfigurationError(
      `${prefix}: boss must be a started pg-boss 10 instance (new PgBoss(url), then await boss.start()); ${describeValue(boss)} lacks ${missing.join(", ")}.`,
    );
}

export { checkBoss };

function wholeNumber(
  prefix: string,
  name: string,
  value: unknown,
  fallback: number,
  least: number,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < least)
    throw new ConfigurationError(
      `${prefix}: ${name} must be a whole number of at least ${least}, received ${describeValue(value)}.`,
    );
  return value;
}

export { wholeNumber };

/** An execution's run ended by abort: whether it was a cancel (the run is over) or a halt. */
export function isAbort(error: unknown): error is AbortError {
  return error instanceof AbortError;
}
