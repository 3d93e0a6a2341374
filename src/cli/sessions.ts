// The command's session store (.skein/sessions.db of the workspace), and `skein sessions`.

import path from "node:path";
import { ConfigurationError, loadSession, type SessionStore } from "../index.ts";
import { CliError } from "./failure.ts";
import { oneLine, printable, truncate } from "./format.ts";
import type { PausedSession } from "./paused-session.ts";
import { ensureProjectDir, PROJECT_DIR } from "./project-dir.ts";
import type { Terminal } from "./terminal.ts";

/** Where the command logs its runs, relative to the working directory. */
export const STORE_PATH = path.join(PROJECT_DIR, "sessions.db");

export interface CliStore {
  store: SessionStore;
  /** The database file, for messages. */
  path: string;
}

/**
 * The workspace's SQLite store; undefined (with the reason) when better-sqlite3 is not
 * installed, so plain runs go on without a log.
 */
export async function openCliStore(
  cwd: string,
): Promise<{ store: CliStore } | { missing: string }> {
  const file = path.join(cwd, STORE_PATH);
  try {
    const { sqliteStore } = await import("../sessions/sqlite.ts");
    ensureProjectDir(cwd);
    return { store: { store: sqliteStore({ path: file }), path: file } };
  } catch (error) {
    // Only a missing or unloadable driver is tolerated; any other failure is the user's to see.
    if (error instanceof ConfigurationError && /npm install/.test(error.message))
      return { missing: oneLine(error.message) };
    throw error;
  }
}

/** The store, or the error `--continue`, `--resume` and `sessions` give without one. */
export async function requireCliStore(cwd: string): Promise<CliStore> {
  const opened = await openCliStore(cwd);
  if ("missing" in opened)
    throw new CliError(
      `sessions need the SQLite driver, which is not installed (${opened.missing}).`,
    );
  return opened.store;
}

/** The session `--continue` (the most recently updated) or `--resume <id>` names. */
export async function pickSession(
  cli: CliStore,
  choice: { continue?: boolean; resume?: string },
): Promise<{
  id: string;
  status: "idle" | "paused" | "interrupted";
  paused?: PausedSession;
}> {
  const id = choice.resume ?? (await cli.store.list())[0]?.sessionId;
  if (id === undefined) throw new CliError(`no session to continue in ${cli.path}.`);
  const session = await loadSession(cli.store, id);
  if (!session)
    throw new CliError(`no session "${id}" in ${cli.path}; list them with skein sessions.`);
  const paused =
    session.status === "paused" && session.pending
      ? { paused: { id, pending: session.pending, messages: session.messages } }
      : {};
  return { id, status: session.status, ...paused };
}

/**
 * `skein sessions`: one line per session, newest first (`<id>  <updated>  <status>  <first
 * prompt>`), or with `--json` one object per line (loadSession's fields without messages). With
 * a database URL, the sessions of that Postgres store instead (sessions-postgres.ts).
 */
export async function listSessions(options: {
  json: boolean;
  terminal: Terminal;
  databaseUrl?: string;
}): Promise<number> {
  if (options.databaseUrl !== undefined) {
    const { listPostgresSessions } = await import("./sessions-postgres.ts");
    return listPostgresSessions({ ...options, databaseUrl: options.databaseUrl });
  }
  const cli = await requireCliStore(process.cwd());
  try {
    await printSessions(cli.store, options);
    return 0;
  } finally {
    await cli.store.close();
  }
}

/** What a listing adds to a session's own status: the state of its latest run on a queue. */
export type QueueState = (
  sessionId: string,
) => Promise<{ status?: string; run?: Record<string, unknown> } | undefined>;

/** The listing of `store`'s sessions; `queueState` may replace a status and add a `run` field. */
export async function printSessions(
  store: SessionStore,
  options: { json: boolean; terminal: Terminal },
  queueState?: QueueState,
): Promise<void> {
  for (const info of await store.list()) {
    const session = await loadSession(store, info.sessionId);
    if (!session) continue;
    const { messages: _messages, ...fields } = session;
    const queued = await queueState?.(info.sessionId);
    const status = queued?.status ?? session.status;
    // Every field is escaped: a session log is data anyone could have written (a planted
    // .skein/sessions.db), and its text must not reach the terminal as control sequences.
    if (options.json) {
      options.terminal.stdout.write(
        `${printable({
          ...fields,
          status,
          createdAt: info.createdAt,
          updatedAt: info.updatedAt,
          ...(queued?.run ? { run: queued.run } : {}),
        })}\n`,
      );
      continue;
    }
    const prompt = printable(truncate(oneLine(session.checkpoints[0]?.prompt ?? ""), 60));
    options.terminal.stdout.write(
      `${printable(info.sessionId)}  ${timestamp(info.updatedAt)}  ${printable(status)}  ${prompt}\n`,
    );
  }
}

/** An ISO time; what a store gave as it is (escaped) when it is not a time. */
function timestamp(value: unknown): string {
  const date = new Date(
    typeof value === "number" || typeof value === "string" ? value : Number.NaN,
  );
  return Number.isNaN(date.getTime()) ? printable(String(value)) : date.toISOString();
}
