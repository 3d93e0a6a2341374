// One execution of a run job: lease the session, decide from the log what is left to do, run it
// (recovering a crashed execution's run exactly as agent.resume({ sessionId }) does), record the
// events and the result beside the log, and only then complete the job.

import type { AgentHandle } from "../agents/registry.ts";
import { isRestrictions } from "../agents/run-next.ts";
import { AbortError, ResumeError } from "../core/errors.ts";
import type { Message } from "../core/messages.ts";
import type { ResumeOptions } from "../run/agent-options.ts";
import { APPROVAL_SECRET_ENV } from "../run/approval-secret.ts";
import type { AgentEvent, ErrorInfo, SDKResultMessage } from "../run/types.ts";
import { readUserContent } from "../run/user-content.ts";
import { loggedRun, logRunEnd, logRunInput } from "../sessions/run-entries.ts";
import { readSession, type SessionView } from "../sessions/session-view.ts";
import { isValidSessionId } from "../sessions/validate.ts";
import type { Board, PickedUp, StartedRun } from "./board.ts";
import { EventWriter } from "./events.ts";
import { endingBoard, foreignMessage, readView } from "./execution-io.ts";
import { sendRun } from "./queue.ts";
import { eventText, failedResult, resultFromLog } from "./results.ts";
import type { JobOptions, PgBossJob, RunJobData } from "./types.ts";
import type { WorkerContext } from "./worker.ts";

/** An execution as its worker sees it: the fenced store reads `fenced`. */
export interface Execution {
  runId: string;
  /** The session's rows the execution read last, handed to the engine's first read of them. */
  preload?: { sessionId: string; rows: { seq: number; data: string }[] } | undefined;
  /** The run's events: the fenced store's appends carry what waits of them. */
  events?: EventWriter | undefined;
  /** Its lease's owner name; `released` once the run's end released the lease with it. */
  owner: string;
  released: boolean;
  /** Why the execution may log nothing more (lease lost, worker stopping); undefined while it may. */
  fenced: string | undefined;
  /** `cancelRun`: abort the run as `signal` does (it is logged as ended). */
  cancel(): void;
  /** Fence, then abort: the run stays unfinished in the log for the next execution. */
  halt(reason: string): void;
}

interface JobRef {
  job: PgBossJob<RunJobData>;
  agent: string;
  queue: string;
  onExecution(execution: Execution): void;
}

let executions = 0;

/**
 * Executes one job; resolves with the job's output once it may be completed, rejects when the
 * job must fail (and be retried). The worker settles the job with pg-boss.
 */
export async function executeJob(context: WorkerContext, ref: JobRef): Promise<object | undefined> {
  const { boss, board, store } = context;
  const { job, queue } = ref;
  const data = job.data;
  if (!isRunJob(data)) {
    context.report(
      new Error(
        `Job ${job.id} on ${queue} is not a skein run job ({ sessionId, runId }); completed without running.`,
      ),
    );
    return { error: "not a skein run job" };
  }
  const owner = `${context.id}/${job.id}/${++executions}`;
  // One round trip: the run's record checked (a job naming another session's run takes nothing:
  // a deferral would write its own id into that run's record), the lease, the run started.
  const picked = await board.pickUp({
    runId: data.runId,
    sessionId: data.sessionId,
    owner,
    ttlMs: context.leaseMs,
    worker: context.id,
    jobId: job.id,
  });
  if (picked.foreign) {
    const foreign = foreignMessage(job.id, data);
    context.report(new Error(foreign));
    return { error: foreign };
  }
  if (!picked.acquired) {
    // Another execution works on the session (or died holding it): come back when its lease
    // ends, without spending a retry on waiting.
    const startAfter = new Date(Date.now() + Math.max(picked.expiresInMs, 100));
    const next = await sendRun(boss, queue, data, jobOptionsOf(job), { startAfter });
    await board.setJob(data.runId, next).catch(context.report);
    return { deferredTo: next };
  }
  if (context.stopping()) {
    await store.release(data.sessionId, owner).catch(context.report);
    throw new Error("The worker stopped before this execution began; the job is retried.");
  }
  const controller = new AbortController();
  const execution: Execution = {
    runId: data.runId,
    owner,
    released: false,
    fenced: undefined,
    cancel: () => controller.abort(new Error("cancelRun")),
    halt: (reason) => {
      execution.fenced ??= reason;
      controller.abort(new Error(reason));
    },
  };
  ref.onExecution(execution);
  const renewal = keepLease(context, data, owner, execution);
  let release = true;
  try {
    await context.current.run(execution, () =>
      runJob(context, ref, data, execution, controller.signal, picked),
    );
    return undefined;
  } catch (error) {
    // Fenced: the lease is not ours to release (or the worker stops and releases nothing early).
    if (execution.fenced) release = false;
    throw error;
  } finally {
    clearInterval(renewal);
    if (release && !execution.released)
      await store.release(data.sessionId, owner).catch(context.report);
  }
}

/** Renews the lease every third of its time, and looks for a cancel request at the same time. */
function keepLease(
  context: WorkerContext,
  data: RunJobData,
  owner: string,
  execution: Execution,
): NodeJS.Timeout {
  let renewedAt = Date.now();
  const timer = setInterval(
    async () => {
      try {
        const held = await context.store.renew(data.sessionId, owner, context.leaseMs);
        if (!held) return execution.halt("its lease on the session was taken over");
        renewedAt = Date.now();
        if ((await context.board.getRun(data.runId))?.cancelRequested) execution.cancel();
      } catch (error) {
        context.report(error);
        // The database is unreachable: past the lease's time another execution may take over.
        if (Date.now() - renewedAt >= context.leaseMs)
          execution.halt("its lease on the session could not be renewed");
      }
    },
    Math.max(50, Math.floor(context.leaseMs / 3)),
  );
  timer.unref();
  return timer;
}

async function runJob(
  context: WorkerContext,
  ref: JobRef,
  data: RunJobData,
  execution: Execution,
  signal: AbortSignal,
  picked: PickedUp,
): Promise<void> {
  const { store } = context;
  const { sessionId, runId } = data;
  const record = picked.record;
  if (record && record.status !== "queued" && record.status !== "running") return; // done before
  const board = endingBoard(context.board, execution, sessionId, picked.started);
  let view = await readView(context, execution, sessionId);
  let checkpointId = record?.checkpointId;
  if (data.handoff !== undefined && !view && data.prompt !== undefined) {
    // Job data is anyone's with the queue: its prompt is user content (text and images) only.
    const prompt = readUserContent(data.prompt);
    if (!prompt.ok) {
      const message = `Handoff ${data.handoff}: the prompt ${prompt.problem}; it was not run.`;
      const started = { runId, sessionId, agent: ref.agent, checkpointId: "", worker: context.id };
      return finish(
        board,
        started,
        "ended",
        failedResult(sessionId, undefined, undefined, {
          name: "ConfigurationError",
          message,
        }),
      );
    }
    // A handoff creates its session on first delivery (a retried delivery finds it).
    const message: Message = { role: "user", content: prompt.content };
    checkpointId = (await logRunInput(store, sessionId, message)).checkpointId;
    view = await readView(context, execution, sessionId);
  }
  /** Ends the job's run with `error`: in its session too, when the log shows it unfinished. */
  const fail = async (error: ErrorInfo) => {
    if (checkpointId !== undefined && view?.unfinished?.runId === checkpointId) {
      await logRunEnd(store, sessionId, checkpointId, { subtype: "error_during_execution", error });
      view = await readView(context, execution, sessionId);
    }
    const started = {
      runId,
      sessionId,
      agent: ref.agent,
      checkpointId: checkpointId ?? "",
      worker: context.id,
    };
    await finish(board, started, "ended", failedResult(sessionId, checkpointId, view, error));
  };
  /**
   * Ends the job's run with a `ResumeError`, leaving the session as it is: a paused run stays
   * paused for a resume that a worker with the right secret can carry out.
   */
  const refuse = (message: string) =>
    finish(
      board,
      { runId, sessionId, agent: ref.agent, checkpointId: checkpointId ?? "", worker: context.id },
      "ended",
      failedResult(sessionId, checkpointId, view, { name: "ResumeError", message }),
    );
  if (data.secretId !== undefined && data.secretId !== context.secretId) {
    const message = `The run was put on the queue by a process whose approval secret is not this worker's, so a run this worker paused could not be resumed there, nor one paused there here. Give every worker and every process that enqueues or resumes runs the same ${APPROVAL_SECRET_ENV} (or approvalSecret option). Nothing was run.`;
    // A new run's input is in the log: it ends there, or the session would wait for it forever.
    if (data.resume === undefined) return fail({ name: "ConfigurationError", message });
    return refuse(message);
  }
  if (!view)
    return fail({
      name: "SessionError",
      message: `Session "${sessionId}" does not exist: a run job must point at a session holding its input (enqueue runs with enqueueRun).`,
    });
  checkpointId ??= data.handoff !== undefined ? view.checkpoints[0]?.id : view.unfinished?.runId;
  if (checkpointId === undefined)
    return fail({
      name: "ResumeError",
      message: `Session "${sessionId}" has no unfinished run to ${data.resume ? "resume" : "execute"} (its last run ended).`,
    });
  const logged = loggedRun(view, checkpointId);
  const started = {
    runId,
    sessionId,
    agent: ref.agent,
    checkpointId,
    worker: context.id,
    jobId: ref.job.id,
  };
  if (logged.state === "missing")
    return fail({
      name: "SessionError",
      message: `Session "${sessionId}" holds no run ${checkpointId}.`,
    });
  if (logged.state === "ended")
    return finish(board, started, "ended", resultFromLog(view, checkpointId, logged.end));
  if (logged.state === "paused" && !data.resume)
    return finish(board, started, "paused", resultFromLog(view, checkpointId, undefined));
  if (record?.cancelRequested) {
    await logRunEnd(store, sessionId, checkpointId, { subtype: "aborted" });
    return finish(board, started, "cancelled", resultFromLog(view, checkpointId, undefined));
  }
  // A handoff always carries its sender's restrictions: without them the task could do more than
  // its sender was allowed to, so it is refused (fail closed), as runNext refuses it.
  if (data.from !== undefined && !isRestrictions(data.restrictions))
    return fail({
      name: "ConfigurationError",
      message: `Handoff ${data.handoff ?? runId} came without the restrictions its sender posted; it was not run.`,
    });
  const handle = handleFor(context, ref.agent, data);
  const options: ResumeOptions = { signal };
  // Approvals answer a paused run's calls; a resume whose first execution died after taking the
  // run over finds it interrupted, and its calls ask again.
  if (logged.state === "paused" && data.resume) Object.assign(options, data.resume);
  const first = picked.started ? picked.nextEvent : await board.startRun(started);
  const writer = new EventWriter(board, runId, first, context.report);
  execution.events = writer;
  let result: SDKResultMessage | undefined;
  try {
    for await (const event of handle.agent().resumeStream({ sessionId }, options)) {
      writer.push(eventText(event as AgentEvent));
      if (event.type === "result") result = event as SDKResultMessage;
    }
  } catch (error) {
    await writer.close().catch(context.report);
    // The paused state was refused before anything ran (a seal made with another secret, an
    // approval for a call that is not waiting): running it again would fail the same way.
    if (error instanceof ResumeError && !execution.fenced) return refuse(error.message);
    if (error instanceof AbortError && !execution.fenced) {
      // Cancelled: the engine logged the run's end as aborted, unless the abort came before the
      // run began; then it ends here, so the session is not left unfinished.
      await logRunEnd(store, sessionId, checkpointId, { subtype: "aborted" });
      return board.finishRun(
        runId,
        "cancelled",
        JSON.stringify({
          messages: error.messages,
          numTurns: error.numTurns,
          usage: error.usage,
          totalUsage: error.totalUsage,
        }),
      );
    }
    throw error;
  }
  try {
    if (!result) throw new Error(`The run of session "${sessionId}" ended without a result.`);
    if (execution.fenced)
      throw new Error(`Execution of session "${sessionId}" was fenced: ${execution.fenced}.`);
    if (result.isError && result.error?.name === "SessionStoreError") {
      // The log could not be written: the run is not over. The job fails (and is retried); the
      // next execution recovers it from the log. Reading the log may fail too: that also fails it.
      const now = loggedRun(await readSession(store, sessionId, undefined), checkpointId);
      if (now.state !== "ended")
        throw new Error(
          `The session store failed during the run of session "${sessionId}": ${result.error.message}`,
        );
    }
  } catch (error) {
    await writer.close().catch(context.report);
    throw error;
  }
  // The last events, the result and the lease's release: one statement.
  const events = await writer.rest();
  await board.finishRun(
    runId,
    result.subtype === "paused" ? "paused" : "ended",
    eventText(result),
    {
      events,
    },
  );
}

/** Records the end of a run no engine ran in this execution (its record created if need be). */
async function finish(
  board: Board,
  started: StartedRun,
  status: "ended" | "paused" | "cancelled",
  result: SDKResultMessage | string,
): Promise<void> {
  await board.startRun(started);
  await board.finishRun(
    started.runId,
    status,
    typeof result === "string" ? result : eventText(result),
  );
}

/** The agent that runs the job: a handoff's narrowed by the restrictions its sender posted. */
function handleFor(context: WorkerContext, agent: string, data: RunJobData): AgentHandle {
  const handle = context.handles.get(agent)!;
  const carried = data.restrictions;
  if (!carried) return handle;
  const narrowing =
    carried.deny.length +
      carried.ask.length +
      carried.hidden.length +
      (carried.allowed?.length ?? 0) >
    0;
  return narrowing ? handle.narrowed(carried) : handle;
}

function isRunJob(data: unknown): data is RunJobData {
  const candidate = data as Partial<RunJobData> | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    isValidSessionId(candidate.sessionId) &&
    typeof candidate.runId === "string" &&
    candidate.runId !== ""
  );
}

/** A job's own send options, for the job that defers it. */
function jobOptionsOf(job: PgBossJob): JobOptions {
  const meta = job as PgBossJob & Record<string, unknown>;
  const options: JobOptions = {};
  for (const key of ["retryLimit", "retryDelay", "retryBackoff", "priority"])
    if (meta[key] !== undefined && meta[key] !== null) options[key] = meta[key];
  if (meta.expireInSeconds !== undefined) options.expireInSeconds = Number(meta.expireInSeconds);
  return options;
}

export type { SessionView };
