// skein/sqlite: sqliteStore(), a session store in one SQLite file (better-sqlite3, WAL).
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { ConfigurationError, SessionConflictError, SessionStoreError } from "../errors.ts";
import { assertKnownOptions, assertOneOf, describeValue } from "../options.ts";
import { loadPeer, type Peer, peerError } from "./peer.ts";
import type { SessionInfo, SessionStore } from "./types.ts";
import { assertSeq, assertSessionId, checkEntries, readAfter, storeFailure } from "./validate.ts";

export type { SessionInfo, SessionStore } from "./types.ts";

export interface SqliteStoreOptions {
  /** The database file (its directory is created), or `":memory:"` for one in this process only. */
  path: string;
  /**
   * `"normal"` (default): every resolved append survives a crash of the process; the last ones
   * may roll back on power loss. `"full"`: also survives power loss, at an fsync per append.
   */
  synchronous?: "normal" | "full";
}

const PEER: Peer = { entry: "skein/sqlite", name: "better-sqlite3", range: "^12" };
const OPTION_KEYS: ReadonlySet<string> = new Set(["path", "synchronous"]);
const BUSY_TIMEOUT_MS = 5000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS skein_sessions (
  session_id TEXT PRIMARY KEY,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  touched INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS skein_sessions_touched ON skein_sessions (touched);
CREATE TABLE IF NOT EXISTS skein_entries (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
`;

/** A session store in a SQLite file: each append one `BEGIN IMMEDIATE` transaction, WAL journal. */
export function sqliteStore(options: SqliteStoreOptions): SessionStore {
  const prefix = "sqliteStore()";
  if (options === undefined) {
    throw new ConfigurationError(`${prefix}: options are required: { path }.`);
  }
  assertKnownOptions(prefix, options, OPTION_KEYS);
  const { path, synchronous = "normal" } = options;
  if (typeof path !== "string" || path === "") {
    throw new ConfigurationError(
      `${prefix}: path must be a file path or ":memory:", received ${describeValue(path)}.`,
    );
  }
  assertOneOf(prefix, "synchronous", synchronous, ["normal", "full"]);
  const Database = loadPeer<typeof BetterSqlite3>(PEER);
  const db = openDatabase(Database, path, synchronous);
  return sqliteSessions(db);
}

function openDatabase(
  Database: typeof BetterSqlite3,
  path: string,
  synchronous: "normal" | "full",
): BetterSqlite3.Database {
  let db: BetterSqlite3.Database;
  try {
    if (path !== ":memory:") mkdirSync(dirname(resolve(path)), { recursive: true });
    db = new Database(path, { timeout: BUSY_TIMEOUT_MS });
  } catch (error) {
    // A native module that was never built fails here, not at require time.
    if (!(error instanceof Database.SqliteError) && /bindings|\.node\b/.test(String(error))) {
      throw peerError(PEER, error);
    }
    throw storeFailure(`sqliteStore(): opening "${path}"`, error);
  }
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // Persistent in the file: readers never block the writer, and a commit is one WAL write.
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}`);
    db.exec(SCHEMA);
  } catch (error) {
    db.close();
    throw storeFailure(`sqliteStore(): preparing "${path}"`, error);
  }
  return db;
}

interface SessionRow {
  session_id: string;
  created_at: number;
  updated_at: number;
  last_seq: number;
}

function sqliteSessions(db: BetterSqlite3.Database): SessionStore {
  const lastSeqOf = db
    .prepare<[string], number>("SELECT last_seq FROM skein_sessions WHERE session_id = ?")
    .pluck();
  const insertEntry = db.prepare<[string, number, string]>(
    "INSERT INTO skein_entries (session_id, seq, data) VALUES (?, ?, ?)",
  );
  // `touched` is the store-wide counter that orders list(); the transaction holds the write lock.
  const touchSession = db.prepare<{ id: string; now: number; last: number }>(
    `INSERT INTO skein_sessions (session_id, created_at, updated_at, last_seq, touched)
     VALUES (@id, @now, @now, @last, (SELECT coalesce(max(touched), 0) + 1 FROM skein_sessions))
     ON CONFLICT (session_id) DO UPDATE SET
       updated_at = excluded.updated_at, last_seq = excluded.last_seq, touched = excluded.touched`,
  );
  const selectEntries = db.prepare<[string, number], { seq: number; data: string }>(
    "SELECT seq, data FROM skein_entries WHERE session_id = ? AND seq > ? ORDER BY seq",
  );
  const selectSessions = db.prepare<[], SessionRow>(
    "SELECT session_id, created_at, updated_at, last_seq FROM skein_sessions ORDER BY touched DESC",
  );
  const deleteEntries = db.prepare<[string]>("DELETE FROM skein_entries WHERE session_id = ?");
  const deleteSession = db.prepare<[string]>("DELETE FROM skein_sessions WHERE session_id = ?");

  const append = db.transaction((sessionId: string, seq: number, entries: string[]) => {
    const lastSeq = lastSeqOf.get(sessionId) ?? 0;
    if (seq !== lastSeq + 1) throw new SessionConflictError({ sessionId, seq, lastSeq });
    for (const [index, data] of entries.entries()) insertEntry.run(sessionId, seq + index, data);
    touchSession.run({ id: sessionId, now: Date.now(), last: seq + entries.length - 1 });
  });
  const remove = db.transaction((sessionId: string) => {
    deleteEntries.run(sessionId);
    return deleteSession.run(sessionId).changes > 0;
  });

  /** Runs a method's body, turning a closed database or a SQLite failure into a SessionStoreError. */
  const attempt = <T>(method: string, body: (prefix: string) => T): Promise<T> => {
    const prefix = `sqliteStore.${method}()`;
    try {
      if (!db.open) throw new SessionStoreError(`${prefix}: the store is closed.`);
      return Promise.resolve(body(prefix));
    } catch (error) {
      return Promise.reject(storeFailure(prefix, error));
    }
  };

  return {
    append: (sessionId, seq, entries) =>
      attempt("append", (prefix) => {
        assertSessionId(prefix, sessionId);
        assertSeq(prefix, seq);
        const batch = checkEntries(prefix, entries);
        // IMMEDIATE takes the write lock first: two processes never both pass the seq check.
        append.immediate(sessionId, seq, batch);
      }),
    read: (sessionId, options) =>
      attempt("read", (prefix) => {
        assertSessionId(prefix, sessionId);
        return selectEntries.all(sessionId, readAfter(prefix, options));
      }),
    list: () =>
      attempt("list", () =>
        selectSessions.all().map(
          (row): SessionInfo => ({
            sessionId: row.session_id,
            createdAt: row.created_at,
            updatedAt: row.updated_at,
            lastSeq: row.last_seq,
          }),
        ),
      ),
    delete: (sessionId) =>
      attempt("delete", (prefix) => {
        assertSessionId(prefix, sessionId);
        return remove.immediate(sessionId);
      }),
    close: async () => {
      if (db.open) db.close();
    },
  };
}
