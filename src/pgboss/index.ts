/**
 * Runs and handoffs as jobs on pg-boss 10, over the Postgres session store. pg-boss and pg are
 * optional peers.
 * @module skein/pgboss
 */

export type { RunRecord, RunStatus } from "./board.ts";
export { cancelRun, enqueueRun, resumeRun } from "./enqueue.ts";
export { followRun, waitForRun } from "./follow.ts";
export { pgBossMailbox } from "./mailbox.ts";
export type {
  CancelRunOptions,
  EnqueuedRun,
  EnqueueRunOptions,
  FollowRunOptions,
  JobOptions,
  PgBossJob,
  PgBossLike,
  ResumeRunOptions,
  WaitForRunOptions,
  Worker,
  WorkerAgents,
  WorkerOptions,
} from "./types.ts";
export { createWorker } from "./worker.ts";
