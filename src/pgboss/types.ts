// The public shapes of skein/pgboss (design/scale.md): runs as jobs on pg-boss 10, over the
// Postgres session store.

import type { Agent, AgentDefinition } from "../agents/agent.ts";
import type { SessionStore } from "../core/session-store.ts";
import type { Restrictions } from "../run/config.ts";
import type { Prompt } from "../run/user-content.ts";
import type { PermissionResult } from "../tools/types.ts";

/**
 * What skein uses of a pg-boss 10 instance (`new PgBoss(url)`, started). Typed by shape so that
 * skein/pgboss has no type dependency on pg-boss: a `PgBoss` fits.
 */
export interface PgBossLike {
  send(name: string, data: object, options?: object): Promise<string | null>;
  fetch(name: string, options?: object): Promise<PgBossJob[]>;
  complete(name: string, id: string | string[], data?: object): Promise<unknown>;
  fail(name: string, id: string | string[], data?: object): Promise<unknown>;
  cancel(name: string, id: string | string[]): Promise<unknown>;
  createQueue(name: string, options?: object): Promise<void>;
  getQueue(name: string): Promise<{ name: string; policy?: string } | null>;
  getQueues(): Promise<{ name: string; policy?: string }[]>;
  getJobById(name: string, id: string, options?: object): Promise<PgBossJob | null>;
  on(event: "error", listener: (error: Error) => void): unknown;
}

/** A job as `fetch` returns it (with `includeMetadata: true`). */
export interface PgBossJob<T = unknown> {
  id: string;
  name: string;
  data: T;
  state?: string;
  retryCount?: number;
  retryLimit?: number;
  expireInSeconds?: number;
  singletonKey?: string | null;
}

/**
 * pg-boss send options (`retryLimit`, `retryDelay`, `retryBackoff`, `expireInSeconds`,
 * `priority`, `startAfter`, ...), merged over skein's defaults. `singletonKey` is always the
 * session id and `id` skein's own: giving either is an error.
 */
export type JobOptions = Record<string, unknown>;

export interface EnqueueRunOptions {
  /** The agent to run: the name a worker serves it under (`createWorker({ agents: { name } })`). */
  agent: string;
  prompt: Prompt;
  /** The Postgres session store (`postgresStore()` from "skein/postgres") the workers use. */
  sessionStore: SessionStore;
  /** Continue this session (its last run must have ended); default a new session. */
  sessionId?: string | undefined;
  jobOptions?: JobOptions | undefined;
  /** The worker's approval secret (see `WorkerOptions.approvalSecret`); default `$SKEIN_APPROVAL_SECRET`. Required. */
  approvalSecret?: string | undefined;
}

/** A run on the queue: `waitForRun` and `followRun` take its `runId`. */
export interface EnqueuedRun {
  sessionId: string;
  jobId: string;
  runId: string;
}

export interface ResumeRunOptions {
  agent: string;
  /** The store: lets `waitForRun(store, sessionId)` find this run as the session's latest. */
  sessionStore?: SessionStore | undefined;
  approvals?: Record<string, PermissionResult> | undefined;
  toolOutputs?: Record<string, unknown> | undefined;
  jobOptions?: JobOptions | undefined;
  /** The worker's approval secret (see `WorkerOptions.approvalSecret`); default `$SKEIN_APPROVAL_SECRET`. Required. */
  approvalSecret?: string | undefined;
}

export interface CancelRunOptions {
  agent: string;
  sessionStore: SessionStore;
  /** The run to cancel; default the session's latest run that has not ended. */
  runId?: string | undefined;
}

/** Agents a worker serves, by the name jobs are enqueued for: definitions or agents skein made. */
export type WorkerAgents = Record<string, AgentDefinition<any> | Agent<any>>;

export interface WorkerOptions {
  /** The Postgres session store; the worker's agents log into it (their own `sessionStore` is replaced). */
  sessionStore: SessionStore;
  agents: WorkerAgents;
  /** Runs executed at once by this process; default 1. */
  concurrency?: number | undefined;
  /** How long a session stays leased to one execution without renewal; default 30,000 ms (renewed every third). */
  leaseMs?: number | undefined;
  /** How often an idle worker polls its queues (it is also woken at once by `enqueueRun`); default 2,000 ms. */
  pollingIntervalMs?: number | undefined;
  /** How long an agent may go without a live worker before its jobs are failed as unserved; default 60,000 ms. */
  unservedAgentGraceMs?: number | undefined;
  /** Errors the worker recovers from (a lost connection, a failed job), for logs; default none. */
  onError?: ((error: Error) => void) | undefined;
  /**
   * The key of the seals on paused runs, the same on every worker and every process that enqueues
   * or resumes runs (a run pauses on one worker and resumes on another); default
   * `$SKEIN_APPROVAL_SECRET`. Required: a worker without one refuses to start. The agents take it
   * (an agent's own `approvalSecret`, if it has one, must be the same).
   */
  approvalSecret?: string | undefined;
}

export interface Worker {
  /** This worker's id (also its name in the store's worker registry). */
  readonly id: string;
  /** Executions running now. */
  readonly running: number;
  /**
   * Stops taking jobs and waits for the running executions; after `timeoutMs` (default 30,000)
   * aborts what is left, which the next execution recovers as after a crash.
   */
  stop(options?: { timeoutMs?: number }): Promise<void>;
}

export interface WaitForRunOptions {
  /** The run (`enqueueRun`'s `runId`); default the session's latest enqueued run. */
  runId?: string | undefined;
  signal?: AbortSignal | undefined;
  /** The polling interval behind LISTEN/NOTIFY; default 1,000 ms. */
  pollIntervalMs?: number | undefined;
}

export type FollowRunOptions = WaitForRunOptions;

/** The job data of one run (internal: the transcript lives in the session, never in the job). */
export interface RunJobData {
  sessionId: string;
  runId: string;
  /** Set on handoff deliveries: the session is created from it on first delivery. */
  prompt?: Prompt;
  /** The mailbox message id of a handoff. */
  handoff?: string;
  from?: { sessionId: string; callId: string };
  restrictions?: Restrictions;
  /** A `resumeRun` continuation. */
  resume?: { approvals?: Record<string, PermissionResult>; toolOutputs?: Record<string, unknown> };
  /**
   * Names the approval secret of the process that put the job on the queue (`secretId`), so a
   * worker with another refuses the job before running anything rather than pause a run that no
   * process could resume. Absent on jobs of older versions and of handoffs.
   */
  secretId?: string;
}
