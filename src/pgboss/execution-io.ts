// What an execution reads and writes beside the engine: the store the engine logs through
// (fenced; its appends carry the run's events), the session read once for both, the run's end
// (which releases the lease in its statement), and the check of a job's run id.

import type { AsyncLocalStorage } from "node:async_hooks";
import { SessionStoreError } from "../core/errors.ts";
import type { SessionStore } from "../core/session-store.ts";
import { POSTGRES_STORE } from "../sessions/postgres.ts";
import { readSession, type SessionView } from "../sessions/session-view.ts";
import type { Board } from "./board.ts";
import type { Execution } from "./execution.ts";
import type { RunJobData } from "./types.ts";
import type { WorkerContext } from "./worker.ts";

/**
 * The board as a run's ending uses it: `finishRun` releases the execution's lease in the same
 * statement, and `startRun` is skipped when the pick-up started the run already.
 */
export function endingBoard(
  board: Board,
  execution: Execution,
  sessionId: string,
  started: boolean,
): Board {
  return {
    ...board,
    startRun: (run) => (started ? Promise.resolve(0) : board.startRun(run)),
    finishRun: async (runId, status, result, also) => {
      if (execution.fenced) return board.finishRun(runId, status, result, also);
      await board.finishRun(runId, status, result, {
        ...also,
        release: { sessionId, owner: execution.owner },
      });
      execution.released = true;
    },
  };
}

/** Reads the session and keeps its rows for the engine's first read of them (no second read). */
export async function readView(
  context: WorkerContext,
  execution: Execution,
  sessionId: string,
): Promise<SessionView | undefined> {
  const rows = await context.store.read(sessionId);
  execution.preload = { sessionId, rows };
  const once = { read: async () => rows } as unknown as SessionStore;
  return readSession(once, sessionId, undefined);
}

/**
 * Why a job that names another session's run (forged, or corrupted) must end alone: everything
 * it would write (the run's record, an end in the log, its job id) would land on that run.
 * Undefined for a job whose run is its session's own or has no record yet.
 */
export async function foreignRunError(
  board: Board,
  jobId: string,
  data: Pick<RunJobData, "sessionId" | "runId">,
): Promise<string | undefined> {
  const record = await board.getRun(data.runId);
  if (record === undefined || record.sessionId === data.sessionId) return undefined;
  return foreignMessage(jobId, data);
}

export function foreignMessage(
  jobId: string,
  data: Pick<RunJobData, "sessionId" | "runId">,
): string {
  return `Job ${jobId} names run ${data.runId}, which belongs to another session than its own ("${data.sessionId}"); it was ended without running or writing anything.`;
}

/**
 * The store the worker's agents log into: the app's, except that an execution that lost its
 * session (lease lost, worker stopping) is fenced, so the run it aborts logs nothing more and is
 * recovered by the next execution exactly as after a crash.
 */
export function fencedStore(
  store: SessionStore,
  board: Board,
  current: AsyncLocalStorage<Execution>,
): SessionStore {
  return {
    [POSTGRES_STORE]: (store as { [POSTGRES_STORE]?: unknown })[POSTGRES_STORE],
    append: async (sessionId, seq, entries) => {
      const execution = current.getStore();
      if (execution?.fenced)
        throw new SessionStoreError(
          `This execution no longer holds session "${sessionId}" (${execution.fenced}); the next one continues it from the log.`,
        );
      if (execution) execution.preload = undefined;
      // The run's events waiting to be written ride in the append's statement.
      const taken = execution?.runId ? execution.events?.take() : undefined;
      if (!taken || !execution) return store.append(sessionId, seq, entries);
      try {
        await board.appendAlso(
          sessionId,
          seq,
          entries,
          board.eventsAlso(execution.runId, taken.batch),
        );
        taken.settle(true);
      } catch (error) {
        // A conflict is a statement that ran: its events were written.
        taken.settle((error as { name?: unknown } | null)?.name === "SessionConflictError");
        throw error;
      }
    },
    read: async (sessionId, readOptions) => {
      // The execution's own read of the session a moment ago (it holds the session's lease):
      // the engine's first read of it is served from there instead of a second round trip.
      const preload = current.getStore()?.preload;
      if (preload?.sessionId === sessionId && !readOptions?.after) {
        current.getStore()!.preload = undefined;
        return preload.rows.map((row) => ({ ...row }));
      }
      return store.read(sessionId, readOptions);
    },
    list: () => store.list(),
    delete: (sessionId) => store.delete(sessionId),
    // The app's store outlives the worker's agents.
    close: async () => {},
  } as SessionStore;
}
