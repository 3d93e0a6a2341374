// The queue's record beside the session log, in the Postgres store's schema: each enqueued run
// (status, result, cancel request), its events, and the workers serving each agent. The log
// stays the one record of what a run did; this is what the queue and its watchers need.

import { ConfigurationError } from "../core/errors.ts";
import { describeValue } from "../core/options.ts";
import type { SessionStore } from "../core/session-store.ts";
import {
  type AppendAlso,
  POSTGRES_STORE,
  type PostgresStoreInternals,
} from "../sessions/postgres.ts";
import { CHANNEL, createTables, finishSql, pickUpSql } from "./board-sql.ts";
import { sharedListener } from "./listener.ts";

export { CHANNEL };

export type RunStatus = "queued" | "running" | "paused" | "ended" | "cancelled";

export interface StartedRun {
  runId: string;
  sessionId: string;
  agent: string;
  checkpointId: string;
  worker: string;
  /** The job being executed. */
  jobId?: string;
}

/** One enqueued run, as the board keeps it. */
export interface RunRecord {
  runId: string;
  sessionId: string;
  agent: string;
  /** The session run (its checkpoint id) this job executes; unknown until a worker looks. */
  checkpointId: string | undefined;
  jobId: string | undefined;
  status: RunStatus;
  cancelRequested: boolean;
  /** The result message's JSON, once the run ended or paused. */
  result: string | undefined;
}

/** What an execution learns when it picks a job up (`Board.pickUp`), in one round trip. */
export interface PickedUp {
  /** The run's record as it was before this statement (undefined: none yet). */
  record: RunRecord | undefined;
  /** The record names another session: nothing was taken or written. */
  foreign: boolean;
  acquired: boolean;
  /** When not acquired: how long the holder's lease still runs (0: unknown, just released). */
  expiresInMs: number;
  /** Marked running under this job here (its record named its session run already). */
  started: boolean;
  /** The number of the run's next event (after those of earlier executions). */
  nextEvent: number;
}

/** Events written in the same statement as something else (`finishRun`, an append). */
export interface EventBatch {
  first: number;
  list: string[];
}

export interface Board {
  store: SessionStore;
  ready(): Promise<void>;
  insertRun(run: {
    runId: string;
    sessionId: string;
    agent: string;
    checkpointId?: string;
    jobId?: string;
  }): Promise<void>;
  setJob(runId: string, jobId: string): Promise<void>;
  /** The store's append, `also` in its statement (below: what may ride there). */
  appendAlso(
    sessionId: string,
    seq: number,
    entries: readonly string[],
    also: AppendAlso,
  ): Promise<void>;
  /** The run's record inserted (queued) only when the append's claim matched. */
  insertRunAlso(run: {
    runId: string;
    agent: string;
    checkpointId: string;
    jobId: string;
  }): AppendAlso;
  /** The run's events written (and watchers told), whether or not the claim matched. */
  eventsAlso(runId: string, batch: EventBatch): AppendAlso;
  getRun(runId: string): Promise<RunRecord | undefined>;
  latestRun(sessionId: string, options?: { unfinished?: boolean }): Promise<RunRecord | undefined>;
  /** Marks the run running under its job (creating its record when the job came without one). */
  /** Marks the run running (its record made if need be); resolves with its next event's number. */
  startRun(run: StartedRun): Promise<number>;
  /**
   * Runs marked running for more than `olderThanMs` whose session lease is gone or expired that
   * long: the execution that ran them died (or lost the database) without settling its job.
   */
  orphanedRuns(olderThanMs: number): Promise<{ runId: string; agent: string; jobId: string }[]>;
  /**
   * Picks up a job's run: unless its record names another session, takes the session's lease for
   * `owner` and, when taken and the record names its session run, marks the run running under
   * `jobId`; reads the record and the run's next event number. One round trip.
   */
  pickUp(run: {
    runId: string;
    sessionId: string;
    owner: string;
    ttlMs: number;
    worker: string;
    jobId: string;
  }): Promise<PickedUp>;
  /**
   * Ends (or pauses) the run with its result, unless it ended already; notifies watchers. In the
   * same statement, `also` writes the run's last events first and releases the session's lease.
   */
  finishRun(
    runId: string,
    status: "ended" | "paused" | "cancelled",
    result: string,
    also?: { events?: EventBatch; release?: { sessionId: string; owner: string } },
  ): Promise<void>;
  requestCancel(runId: string): Promise<void>;
  /** The next event number of a run (events of an earlier execution come first). */
  appendEvents(runId: string, first: number, events: string[]): Promise<void>;
  readEvents(runId: string, after: number): Promise<{ n: number; data: string }[]>;
  /** Records that `worker` serves `agents` now. */
  heartbeat(worker: string, agents: string[]): Promise<void>;
  forgetWorker(worker: string): Promise<void>;
  /** Agents some worker has served within the last `withinMs`. */
  servedAgents(withinMs: number): Promise<Set<string>>;
  notify(channel: string, payload: string): Promise<void>;
  /** Calls `listener` with each payload sent on `channel`, until the returned function is called. */
  listen(channel: string, listener: (payload: string) => void): () => void;
  /** Runs (latest first) with their session and status, for listings. */
  listRuns(limit: number): Promise<RunRecord[]>;
}

const boards = new WeakMap<object, Board>();

/** The board of a Postgres store; one per store object. */
export function boardOf(prefix: string, store: unknown): Board {
  const internals = (store as { [POSTGRES_STORE]?: PostgresStoreInternals } | null)?.[
    POSTGRES_STORE
  ];
  if (!internals)
    throw new ConfigurationError(
      `${prefix}: sessionStore must be a Postgres store (postgresStore() from "skein/postgres"): runs on a queue are recorded beside their sessions, in the same database. Received ${describeValue(store)}.`,
    );
  let board = boards.get(store as object);
  if (!board) {
    board = newBoard(store as SessionStore, internals);
    boards.set(store as object, board);
  }
  return board;
}

function identifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function newBoard(store: SessionStore, internals: PostgresStoreInternals): Board {
  const { pool } = internals;
  const s = identifier(internals.schema);
  const runs = `${s}.skein_runs`;
  const events = `${s}.skein_run_events`;
  const workers = `${s}.skein_workers`;
  const leases = `${s}.skein_leases`; // the store's own (postgres-sql.ts)
  const tables = { runs, events, leases };
  let setup: Promise<void> | undefined;
  const ready = () => {
    setup ??= internals
      .ready()
      .then(() => createTables(pool, internals.schema, [runs, events, workers]))
      .catch((error) => {
        setup = undefined;
        throw error;
      });
    return setup;
  };
  const query = async (text: string, values?: unknown[]) => {
    await ready();
    return pool.query(text, values);
  };
  const listener = sharedListener(pool);
  return {
    store,
    ready,
    async insertRun(run) {
      await query(
        `INSERT INTO ${runs} (run_id, session_id, agent, checkpoint_id, job_id, status)
         VALUES ($1, $2, $3, $4, $5, 'queued') ON CONFLICT (run_id) DO NOTHING`,
        [run.runId, run.sessionId, run.agent, run.checkpointId ?? null, run.jobId ?? null],
      );
    },
    async appendAlso(sessionId, seq, entries, also) {
      await ready();
      await internals.appendAlso(sessionId, seq, entries, also);
    },
    insertRunAlso: (run) => ({
      ctes: `queued AS (
        INSERT INTO ${runs} (run_id, session_id, agent, checkpoint_id, job_id, status)
        SELECT $6, claim.session_id, $7, $8, $9, 'queued' FROM claim
        ON CONFLICT (run_id) DO NOTHING RETURNING 1)`,
      values: [run.runId, run.agent, run.checkpointId, run.jobId],
    }),
    eventsAlso: (runId, batch) => ({
      ctes: `events AS (
        INSERT INTO ${events} (run_id, n, data)
        SELECT $6, $7::int + event.ordinality - 1, event.data
        FROM unnest($8::text[]) WITH ORDINALITY AS event (data, ordinality)
        ON CONFLICT (run_id, n) DO NOTHING
        RETURNING 1)`,
      select: `(SELECT pg_notify('${CHANNEL.events}', $6) WHERE EXISTS (SELECT 1 FROM events)) AS told`,
      values: [runId, batch.first, batch.list],
    }),
    async setJob(runId, jobId) {
      await query(`UPDATE ${runs} SET job_id = $2 WHERE run_id = $1`, [runId, jobId]);
    },
    async getRun(runId) {
      const { rows } = await query(`SELECT * FROM ${runs} WHERE run_id = $1`, [runId]);
      return rows[0] ? recordOf(rows[0]) : undefined;
    },
    async latestRun(sessionId, options) {
      const unfinished = options?.unfinished ? "AND status IN ('queued', 'running', 'paused')" : "";
      const { rows } = await query(
        `SELECT * FROM ${runs} WHERE session_id = $1 ${unfinished} ORDER BY enqueued DESC LIMIT 1`,
        [sessionId],
      );
      return rows[0] ? recordOf(rows[0]) : undefined;
    },
    async startRun(run) {
      // One round trip: the record's update, and the number after the run's last event (events
      // are not written by this statement, so its snapshot holds them all).
      const { rows } = await query(
        `WITH started AS (
           INSERT INTO ${runs} (run_id, session_id, agent, checkpoint_id, job_id, status, worker, started_at)
           VALUES ($1, $2, $3, $4, $6, 'running', $5, clock_timestamp())
           ON CONFLICT (run_id) DO UPDATE SET status = 'running', checkpoint_id = $4, worker = $5,
             job_id = COALESCE($6, ${runs}.job_id), started_at = clock_timestamp()
           WHERE ${runs}.status IN ('queued', 'running')
           RETURNING 1)
         SELECT COALESCE(MAX(n), 0) + 1 AS next FROM ${events} WHERE run_id = $1`,
        [run.runId, run.sessionId, run.agent, run.checkpointId, run.worker, run.jobId ?? null],
      );
      return Number(rows[0].next);
    },
    async orphanedRuns(olderThanMs) {
      const { rows } = await query(
        `SELECT r.run_id, r.agent, r.job_id FROM ${runs} r
         LEFT JOIN ${leases} l ON l.session_id = r.session_id
         WHERE r.status = 'running' AND r.job_id IS NOT NULL
           AND r.started_at < clock_timestamp() - $1 * interval '1 millisecond'
           AND (l.session_id IS NULL OR l.expires_at < clock_timestamp() - $1 * interval '1 millisecond')
         LIMIT 50`,
        [olderThanMs],
      );
      return rows.map((row) => ({ runId: row.run_id, agent: row.agent, jobId: row.job_id }));
    },
    async pickUp(run) {
      const { rows } = await query(pickUpSql(tables), [
        run.runId,
        run.sessionId,
        run.owner,
        run.ttlMs,
        run.worker,
        run.jobId,
      ]);
      const row = rows[0];
      return {
        record: row.run ? recordOf(row.run) : undefined,
        foreign: row.foreign === true,
        acquired: row.acquired === true,
        expiresInMs: Number(row.expires_in ?? 0),
        started: row.started === true,
        nextEvent: Number(row.next_event),
      };
    },
    async finishRun(runId, status, result, also) {
      // The events first (the same statement: watchers never see the end without them), the
      // lease released with the end.
      await query(finishSql(tables), [
        runId,
        status,
        result,
        also?.events?.first ?? 1,
        also?.events?.list ?? [],
        also?.release?.sessionId ?? null,
        also?.release?.owner ?? null,
      ]);
    },
    async requestCancel(runId) {
      await query(
        `WITH asked AS (
           UPDATE ${runs} SET cancel_requested = true WHERE run_id = $1 RETURNING run_id)
         SELECT pg_notify('${CHANNEL.cancel}', run_id) FROM asked`,
        [runId],
      );
    },
    async appendEvents(runId, first, list) {
      await query(
        `WITH added AS (
           INSERT INTO ${events} (run_id, n, data)
           SELECT $1, $2::int + event.ordinality - 1, event.data
           FROM unnest($3::text[]) WITH ORDINALITY AS event (data, ordinality)
           ON CONFLICT (run_id, n) DO NOTHING
           RETURNING 1)
         SELECT pg_notify('${CHANNEL.events}', $1) WHERE EXISTS (SELECT 1 FROM added)`,
        [runId, first, list],
      );
    },
    async readEvents(runId, after) {
      const { rows } = await query(
        `SELECT n, data FROM ${events} WHERE run_id = $1 AND n > $2 ORDER BY n`,
        [runId, after],
      );
      return rows.map((row) => ({ n: Number(row.n), data: row.data as string }));
    },
    async heartbeat(worker, agents) {
      await query(
        `INSERT INTO ${workers} (worker_id, agent, seen_at)
         SELECT $1, agent, clock_timestamp() FROM unnest($2::text[]) AS agent
         ON CONFLICT (worker_id, agent) DO UPDATE SET seen_at = EXCLUDED.seen_at`,
        [worker, agents],
      );
    },
    async forgetWorker(worker) {
      await query(`DELETE FROM ${workers} WHERE worker_id = $1`, [worker]);
    },
    async servedAgents(withinMs) {
      const { rows } = await query(
        `SELECT DISTINCT agent FROM ${workers}
         WHERE seen_at > clock_timestamp() - $1 * interval '1 millisecond'`,
        [withinMs],
      );
      return new Set(rows.map((row) => row.agent as string));
    },
    async notify(channel, payload) {
      await query("SELECT pg_notify($1, $2)", [channel, payload]);
    },
    listen: (channel, callback) => listener.add(channel, callback),
    async listRuns(limit) {
      const { rows } = await query(`SELECT * FROM ${runs} ORDER BY enqueued DESC LIMIT $1`, [
        limit,
      ]);
      return rows.map(recordOf);
    },
  };
}

function recordOf(row: Record<string, unknown>): RunRecord {
  return {
    runId: row.run_id as string,
    sessionId: row.session_id as string,
    agent: row.agent as string,
    checkpointId: (row.checkpoint_id as string | null) ?? undefined,
    jobId: (row.job_id as string | null) ?? undefined,
    status: row.status as RunStatus,
    cancelRequested: row.cancel_requested === true,
    result: (row.result as string | null) ?? undefined,
  };
}
