// `skein sessions --database-url URL`: the sessions of a Postgres store (the one `skein worker`
// and `skein enqueue` use), each with its state: idle, paused or interrupted as its log says, or
// queued or running while its latest run is on the queue (the skein_runs board, when present).

import type { SessionStore } from "../core/session-store.ts";
import { boardOf, type RunRecord } from "../pgboss/board.ts";
import { POSTGRES_STORE, type PostgresStoreInternals } from "../sessions/postgres.ts";
import { connectionError, databaseUrl, openStore } from "./database.ts";
import { printSessions, type QueueState } from "./sessions.ts";
import type { Terminal } from "./terminal.ts";

export async function listPostgresSessions(options: {
  json: boolean;
  terminal: Terminal;
  databaseUrl: string;
}): Promise<number> {
  // DATABASE_URL is not read here: without --database-url, `skein sessions` lists the workspace's.
  const url = databaseUrl(options.databaseUrl, "sessions");
  const store = await openStore(url);
  try {
    const queueState = await boardState(store);
    await printSessions(store, options, queueState);
    return 0;
  } catch (error) {
    throw connectionError(url, error, { env: false });
  } finally {
    await store.close().catch(() => {});
  }
}

/**
 * The state of each session's latest run on the queue, or undefined when no queue was ever used
 * on this database (the board's table is not created by a listing).
 */
async function boardState(store: SessionStore): Promise<QueueState | undefined> {
  const internals = (store as { [POSTGRES_STORE]?: PostgresStoreInternals })[POSTGRES_STORE]!;
  const table = `"${internals.schema.replaceAll('"', '""')}".skein_runs`;
  const { rows } = await internals.pool.query("SELECT to_regclass($1) IS NOT NULL AS present", [
    table,
  ]);
  if (rows[0]?.present !== true) return undefined;
  const board = boardOf("skein sessions", store);
  return async (sessionId) => {
    const latest = await board.latestRun(sessionId);
    if (!latest) return undefined;
    const active = latest.status === "queued" || latest.status === "running";
    return { ...(active ? { status: latest.status } : {}), run: runFields(latest) };
  };
}

function runFields(record: RunRecord): Record<string, unknown> {
  return { runId: record.runId, agent: record.agent, status: record.status };
}
