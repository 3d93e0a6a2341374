// Putting runs on the queue, continuing paused ones, and cancelling them.

import { randomUUID } from "node:crypto";
import { ConfigurationError } from "../core/errors.ts";
import type { Message } from "../core/messages.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";
import type { SessionStore } from "../core/session-store.ts";
import { requireApprovalSecret, secretId } from "../run/approval-secret.ts";
import { assertPrompt } from "../run/user-content.ts";
import { logRunEnd, logRunInput } from "../sessions/run-entries.ts";
import { readSession } from "../sessions/session-view.ts";
import { assertSessionId } from "../sessions/validate.ts";
import { boardOf, CHANNEL } from "./board.ts";
import { requirePeers } from "./peers.ts";
import { checkJobOptions, ensureQueue, queueOf, sendRun } from "./queue.ts";
import { eventText, failedResult } from "./results.ts";
import type {
  CancelRunOptions,
  EnqueuedRun,
  EnqueueRunOptions,
  PgBossLike,
  ResumeRunOptions,
} from "./types.ts";
import { checkBoss } from "./worker.ts";

const ENQUEUE_KEYS: ReadonlySet<string> = new Set([
  "agent",
  "prompt",
  "sessionStore",
  "sessionId",
  "jobOptions",
  "approvalSecret",
]);
const RESUME_KEYS: ReadonlySet<string> = new Set([
  "agent",
  "sessionStore",
  "approvals",
  "toolOutputs",
  "jobOptions",
  "approvalSecret",
]);
const CANCEL_KEYS: ReadonlySet<string> = new Set(["agent", "sessionStore", "runId"]);

/** A run's id on the queue (a resumed run gets a new one: each job execution's result is its own). */
export function newRunId(): string {
  return `run_${Date.now().toString(36)}_${randomUUID().slice(0, 8)}`;
}

function checkOptions(prefix: string, options: unknown, keys: ReadonlySet<string>): void {
  if (typeof options !== "object" || options === null)
    throw new ConfigurationError(
      `${prefix}: options are required, received ${describeValue(options)}.`,
    );
  assertKnownOptions(prefix, options, keys);
}

/**
 * Logs the prompt as the session's next run, then puts the run on its agent's queue; returns at
 * once. A job never points at a session without its input; the session's last run must have ended.
 */
export async function enqueueRun(
  boss: PgBossLike,
  options: EnqueueRunOptions,
): Promise<EnqueuedRun> {
  const prefix = "enqueueRun()";
  requirePeers(prefix);
  checkBoss(prefix, boss);
  checkOptions(prefix, options, ENQUEUE_KEYS);
  const queue = queueOf(prefix, options.agent);
  const prompt = assertPrompt(prefix, "prompt", options.prompt);
  const board = boardOf(prefix, options.sessionStore);
  const sessionId = options.sessionId ?? randomUUID();
  assertSessionId(prefix, sessionId);
  const jobOptions = checkJobOptions(prefix, options.jobOptions);
  const keyId = secretId(requireApprovalSecret(prefix, options.approvalSecret));
  const message: Message = { role: "user", content: prompt };
  // The queue (and the board's tables) first: what can be refused is refused before any write.
  await ensureQueue(boss, queue);
  await board.ready();
  // The job's id is chosen here, so the run's record carries it from its insert (no update after),
  // and the record is inserted by the statement that logs the input (one round trip; a new
  // session's id was made just now: there is nothing to read first).
  let jobId: string = randomUUID();
  const { checkpointId } = await logRunInput(options.sessionStore, sessionId, message, {
    fresh: options.sessionId === undefined,
    append: (seq, entries, checkpointId) =>
      board.appendAlso(
        sessionId,
        seq,
        entries,
        board.insertRunAlso({ runId: checkpointId, agent: options.agent, checkpointId, jobId }),
      ),
  });
  const runId = checkpointId;
  try {
    jobId = await sendRun(boss, queue, { sessionId, runId, secretId: keyId }, jobOptions, {
      id: jobId,
    });
  } catch (error) {
    // Not on the queue: the logged prompt's run ends here, so the session is not left waiting for
    // a job that does not exist (a later enqueueRun would be refused). Best effort: the database
    // may be what failed; then `resumeRun` puts the logged run on the queue.
    const reason = error instanceof Error ? error.message : String(error);
    const failure = { name: "EnqueueError", message: `The run could not be enqueued: ${reason}` };
    await logRunEnd(options.sessionStore, sessionId, checkpointId, {
      subtype: "error_during_execution",
      error: failure,
    }).catch(() => {});
    const result = failedResult(sessionId, checkpointId, undefined, failure);
    await board.finishRun(runId, "ended", eventText(result)).catch(() => {});
    throw error;
  }
  await board.notify(CHANNEL.wake, queue).catch(() => {});
  return { sessionId, jobId, runId };
}

/**
 * Continues a paused run (`approvals`, `toolOutputs` for its pending calls) on a worker; returns
 * the continuation's own `runId`. The session's log decides what runs: a run that is no longer
 * paused ends this job with an error result.
 */
export async function resumeRun(
  boss: PgBossLike,
  sessionId: string,
  options: ResumeRunOptions,
): Promise<EnqueuedRun> {
  const prefix = "resumeRun()";
  requirePeers(prefix);
  checkBoss(prefix, boss);
  assertSessionId(prefix, sessionId);
  checkOptions(prefix, options, RESUME_KEYS);
  const queue = queueOf(prefix, options.agent);
  const jobOptions = checkJobOptions(prefix, options.jobOptions);
  const keyId = secretId(requireApprovalSecret(prefix, options.approvalSecret));
  for (const key of ["approvals", "toolOutputs"] as const) {
    const value = options[key];
    if (
      value !== undefined &&
      (typeof value !== "object" || value === null || Array.isArray(value))
    )
      throw new ConfigurationError(
        `${prefix}: ${key} must be an object keyed by call id, received ${describeValue(value)}.`,
      );
  }
  const runId = newRunId();
  const board = options.sessionStore ? boardOf(prefix, options.sessionStore) : undefined;
  const id = randomUUID();
  await board?.insertRun({ runId, sessionId, agent: options.agent, jobId: id });
  const resume: {
    approvals?: ResumeRunOptions["approvals"];
    toolOutputs?: Record<string, unknown>;
  } = {};
  if (options.approvals) resume.approvals = options.approvals;
  if (options.toolOutputs) resume.toolOutputs = options.toolOutputs;
  const jobId = await sendRun(
    boss,
    queue,
    { sessionId, runId, resume, secretId: keyId },
    jobOptions,
    { id },
  );
  await board?.notify(CHANNEL.wake, queue).catch(() => {});
  return { sessionId, jobId, runId };
}

/**
 * Runs `cancelRun` ends: queued, running, and paused (its calls waiting for approval or the app
 * are answered "not run" in the log, with its end).
 */
const CANCELLABLE: ReadonlySet<string> = new Set(["queued", "running", "paused"]);

/**
 * Cancels a run: a queued one is taken off the queue and its run ended in the session as
 * aborted; a running one is aborted by its worker (told at once, and checked with each lease
 * renewal); a paused one is ended in the session, its waiting calls answered as not run.
 * `waitForRun` then rejects with `AbortError`. `false` when there was nothing to cancel.
 */
export async function cancelRun(
  boss: PgBossLike,
  sessionId: string,
  options: CancelRunOptions,
): Promise<boolean> {
  const prefix = "cancelRun()";
  checkBoss(prefix, boss);
  assertSessionId(prefix, sessionId);
  checkOptions(prefix, options, CANCEL_KEYS);
  const queue = queueOf(prefix, options.agent);
  const board = boardOf(prefix, options.sessionStore);
  const record =
    options.runId !== undefined
      ? await board.getRun(options.runId)
      : await board.latestRun(sessionId, { unfinished: true });
  if (!record || record.sessionId !== sessionId) return false;
  if (!CANCELLABLE.has(record.status)) return false;
  await board.requestCancel(record.runId);
  // Whoever holds the session's lease executes the run: its worker sees the request (notified at
  // once, and checked with each renewal) and aborts the run, which logs its end. Otherwise no
  // execution runs it, and it ends here.
  const store = options.sessionStore as Required<Pick<SessionStore, "lease" | "release">> &
    SessionStore;
  const owner = `cancel/${record.runId}/${randomUUID()}`;
  const lease = await store.lease(sessionId, owner, 30_000);
  // A paused run has no execution to tell: one holding the lease is running something else (a
  // resume of it), which a cancel of that resume's own run stops.
  if (!lease.acquired) return record.status !== "paused";
  try {
    const fresh = await board.getRun(record.runId);
    if (!fresh || !CANCELLABLE.has(fresh.status)) return true;
    let view = await readSession(store, sessionId, undefined);
    // A paused record whose run was resumed since (or ended) is history, not a paused run.
    if (
      fresh.status === "paused" &&
      (view?.status !== "paused" || view.unfinished?.runId !== fresh.checkpointId)
    )
      return false;
    if (fresh.jobId) await boss.cancel(queue, fresh.jobId).catch(() => {});
    const checkpointId = fresh.checkpointId ?? view?.unfinished?.runId;
    if (
      checkpointId !== undefined &&
      (await logRunEnd(store, sessionId, checkpointId, { subtype: "aborted" }))
    )
      view = await readSession(store, sessionId, undefined);
    await board.finishRun(
      record.runId,
      "cancelled",
      JSON.stringify({ messages: view?.messages ?? [] }),
    );
  } finally {
    await store.release(sessionId, owner).catch(() => {});
  }
  return true;
}
