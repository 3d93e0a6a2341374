// Jobs for agents no live worker serves are not left on the queue forever: any worker ends them
// with a clear error, stored as the run's end (in its session) and result, and completes them.

import { logRunEnd } from "../sessions/run-entries.ts";
import { readSession } from "../sessions/session-view.ts";
import { isValidSessionId } from "../sessions/validate.ts";
import { foreignRunError } from "./execution-io.ts";
import { QUEUE_PREFIX } from "./queue.ts";
import { eventText, failedResult } from "./results.ts";
import type { PgBossJob, RunJobData } from "./types.ts";
import type { WorkerContext } from "./worker.ts";

/**
 * Hands out again, without waiting for pg-boss's expiry, the job of a run whose execution died:
 * the session's lease is the heartbeat (renewed every third of its time), so a run marked running
 * whose lease is gone or expired has nobody executing it. Failing its still-active job lets
 * pg-boss retry it, and the next execution recovers the run from the log. A holder that was only
 * cut off finds its lease taken at its next renewal and stops (it is fenced first).
 */
export async function failOrphans(context: WorkerContext): Promise<void> {
  const { boss, board } = context;
  for (const orphan of await board.orphanedRuns(context.leaseMs)) {
    const queue = QUEUE_PREFIX + orphan.agent;
    const job = await boss.getJobById(queue, orphan.jobId);
    if (job?.state !== "active") continue;
    await boss.fail(queue, orphan.jobId, {
      error:
        "the execution running it stopped renewing its session lease (its worker died or lost the database)",
    });
  }
}

export async function drainUnserved(
  context: WorkerContext,
  options: { graceMs: number; served: Set<string> },
): Promise<void> {
  const { boss, board, store } = context;
  const live = await board.servedAgents(options.graceMs);
  for (const { name: queue } of await boss.getQueues()) {
    if (!queue.startsWith(QUEUE_PREFIX)) continue;
    const agent = queue.slice(QUEUE_PREFIX.length);
    if (options.served.has(agent) || live.has(agent)) continue;
    const jobs = (await boss.fetch(queue, { batchSize: 20 })) as PgBossJob<RunJobData>[];
    for (const job of jobs) {
      const { sessionId, runId } = (job.data ?? {}) as Partial<RunJobData>;
      const error = {
        name: "ConfigurationError",
        message: `unknown agent "${agent}": no worker serves it (no worker registered it within ${options.graceMs} ms). Start a worker with this agent, then enqueue the run again.`,
      };
      const named = isValidSessionId(sessionId) && typeof runId === "string" && runId !== "";
      // A job naming another session's run ends alone: that run is not this job's to end.
      const foreign = named
        ? await foreignRunError(board, job.id, { sessionId, runId })
        : undefined;
      if (foreign) {
        context.report(new Error(foreign));
        await boss.complete(queue, job.id, { error: foreign });
        continue;
      }
      if (named) {
        const owner = `${context.id}/drain/${job.id}`;
        const lease = await store.lease(sessionId, owner, context.leaseMs);
        if (!lease.acquired) continue; // someone works on it after all: its job expires and returns
        try {
          const record = await board.getRun(runId);
          const view = await readSession(store, sessionId, undefined);
          const checkpointId = record?.checkpointId ?? view?.unfinished?.runId;
          if (checkpointId !== undefined)
            await logRunEnd(store, sessionId, checkpointId, {
              subtype: "error_during_execution",
              error,
            });
          const after = await readSession(store, sessionId, undefined);
          const started = {
            runId,
            sessionId,
            agent,
            checkpointId: checkpointId ?? "",
            worker: context.id,
          };
          await board.startRun(started);
          await board.finishRun(
            runId,
            "ended",
            eventText(failedResult(sessionId, checkpointId, after, error)),
          );
        } finally {
          await store.release(sessionId, owner).catch(context.report);
        }
      }
      await boss.complete(queue, job.id, { error: error.message });
    }
  }
}
