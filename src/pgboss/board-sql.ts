// The queue's tables beside the session log (board.ts), created on first use, once per schema,
// and the board's longer statements.

import type { PostgresPool } from "../sessions/postgres.ts";
import type { ListeningClient } from "./listener.ts";

/** Quoted, schema-qualified names of the tables a statement uses. */
interface Tables {
  runs: string;
  events: string;
  leases: string;
}

/**
 * Notification channels (payloads: a queue name, or a run id): a run's end (`run`) and its new
 * events (`events`) apart, so that waiting for a result is not woken by every batch of events.
 */
export const CHANNEL = {
  wake: "skein_wake",
  run: "skein_run",
  events: "skein_events",
  cancel: "skein_cancel",
} as const;

/**
 * A job's pick-up (`Board.pickUp`): $1 run, $2 session, $3 owner, $4 lease ms, $5 worker, $6 job.
 * Nothing is taken when the run's record names another session; the run is marked running only
 * when the lease was taken and its record names its session run.
 */
export const pickUpSql = ({ runs, events, leases }: Tables) =>
  `WITH run AS (SELECT * FROM ${runs} WHERE run_id = $1),
         taken AS (
           INSERT INTO ${leases} AS lease (session_id, owner, expires_at)
           SELECT $2, $3, clock_timestamp() + $4 * interval '1 millisecond'
           WHERE NOT EXISTS (SELECT 1 FROM run WHERE session_id <> $2)
           ON CONFLICT (session_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
           WHERE lease.owner = EXCLUDED.owner OR lease.expires_at <= clock_timestamp()
           RETURNING owner),
         started AS (
           UPDATE ${runs} SET status = 'running', worker = $5, job_id = $6, started_at = clock_timestamp()
           WHERE run_id = $1 AND session_id = $2 AND status IN ('queued', 'running')
             AND checkpoint_id IS NOT NULL AND EXISTS (SELECT 1 FROM taken)
           RETURNING 1)
         SELECT (SELECT row_to_json(run) FROM run) AS run,
           EXISTS (SELECT 1 FROM run WHERE session_id <> $2) AS foreign,
           EXISTS (SELECT 1 FROM taken) AS acquired,
           EXISTS (SELECT 1 FROM started) AS started,
           (SELECT GREATEST(0, CEIL(EXTRACT(EPOCH FROM (expires_at - clock_timestamp())) * 1000))::bigint
            FROM ${leases} WHERE session_id = $2) AS expires_in,
           (SELECT COALESCE(MAX(n), 0) + 1 FROM ${events} WHERE run_id = $1) AS next_event`;

/**
 * A run's end (`Board.finishRun`): $1 run, $2 status, $3 result, its last events ($4 the first
 * number, $5 the list) and the lease released ($6 session, $7 owner; null: none) in the same
 * statement, so watchers never see the end without its events.
 */
export const finishSql = ({ runs, events, leases }: Tables) =>
  `WITH added AS (
           INSERT INTO ${events} (run_id, n, data)
           SELECT $1, $4::int + event.ordinality - 1, event.data
           FROM unnest($5::text[]) WITH ORDINALITY AS event (data, ordinality)
           ON CONFLICT (run_id, n) DO NOTHING
           RETURNING 1),
         freed AS (DELETE FROM ${leases} WHERE session_id = $6 AND owner = $7),
         done AS (
           UPDATE ${runs} SET status = $2, result = $3, ended_at = clock_timestamp()
           WHERE run_id = $1
             AND (status IN ('queued', 'running') OR (status = 'paused' AND $2 = 'cancelled'))
           RETURNING run_id)
         SELECT pg_notify('${CHANNEL.run}', run_id),
           (SELECT pg_notify('${CHANNEL.events}', $1) WHERE EXISTS (SELECT 1 FROM added))
         FROM done`;

export async function createTables(pool: PostgresPool, schema: string, relations: string[]) {
  const [runs, events, workers] = relations as [string, string, string];
  const check = `SELECT ${relations.map((_, i) => `to_regclass($${i + 1}) IS NOT NULL`).join(" AND ")} AS ready`;
  if ((await pool.query(check, relations)).rows[0]?.ready === true) return;
  const client = await pool.connect();
  let broken = false;
  // A connection lost while checked out is an "error" event: unheard, it would end the process.
  const lost = () => {
    broken = true;
  };
  (client as unknown as ListeningClient).on("error", lost);
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [
      `skein queue setup ${schema}`,
    ]);
    await client.query(`CREATE TABLE IF NOT EXISTS ${runs} (
      run_id text PRIMARY KEY,
      session_id text NOT NULL,
      agent text NOT NULL,
      checkpoint_id text,
      job_id text,
      status text NOT NULL,
      cancel_requested boolean NOT NULL DEFAULT false,
      result text,
      worker text,
      enqueued bigserial,
      enqueued_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      started_at timestamptz,
      ended_at timestamptz
    )`);
    await client.query(
      `CREATE INDEX IF NOT EXISTS skein_runs_session_index ON ${runs} (session_id, enqueued)`,
    );
    await client.query(`CREATE TABLE IF NOT EXISTS ${events} (
      run_id text NOT NULL,
      n integer NOT NULL,
      data text NOT NULL,
      PRIMARY KEY (run_id, n)
    )`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${workers} (
      worker_id text NOT NULL,
      agent text NOT NULL,
      seen_at timestamptz NOT NULL,
      PRIMARY KEY (worker_id, agent)
    )`);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {
      broken = true;
    });
    throw error;
  } finally {
    (
      client as unknown as { removeListener(event: string, listener: () => void): void }
    ).removeListener("error", lost);
    client.release(broken);
  }
}
