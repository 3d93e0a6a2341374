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
/**
 * Pages of 2 KiB, not SQLite's 4 KiB: a commit copies, checksums and writes every page it touched
 * whole to the WAL, and an append touches two (its row's and its index entry's). Most entries are
 * well under a page (started markers, small results, replies): half the bytes took 1.5-2 µs off an
 * append at the median inside runs, and more off the mean (checkpoints copy fewer bytes); entries
 * over ~8 KiB, which span more pages, pay about a tenth more.
 */
const PAGE_SIZE = 2048;
/**
 * A commit that takes the WAL past its checkpoint size copies the frames into the database first
 * (an fsync each of WAL and database). SQLite's default is 1000 frames, 4 MiB of 4 KiB pages; the
 * same 4 MiB of this file's pages keeps checkpoints as rare per byte logged with 2 KiB pages.
 */
const AUTOCHECKPOINT_BYTES = 4 * 1024 * 1024;

/**
 * Layout 2 (`PRAGMA user_version`): one table, so an append writes only its rows and their index
 * entries (two pages for a small entry; a commit costs about its page writes and locks). The
 * rowid is the store-wide append counter that orders list(), `at` the append's time; list() reads
 * each session's first and last rows. The expected-seq check is in the table (a trigger refuses a
 * seq that is not the session's last + 1; the unique index stands behind it), so an append of one
 * entry is one INSERT statement (which takes the write lock before it reads, as `BEGIN IMMEDIATE`
 * does).
 * Layout 1 is the same without the trigger; layout 0 (a `skein_sessions` table and an index on its
 * counter, rewritten by every append) is moved over once. Both on open, under the write lock.
 */
const SCHEMA_VERSION = 2;
const SEQ_GAP = "skein: seq does not follow the last seq of its session";
// The session's last seq + 1, exactly (one seek of the index, as the insert makes anyway).
const SEQ_TRIGGER = `
CREATE TRIGGER skein_entries_seq_follows BEFORE INSERT ON skein_entries
WHEN NEW.seq IS NOT coalesce(
  (SELECT max(seq) FROM skein_entries WHERE session_id = NEW.session_id), 0) + 1
BEGIN SELECT RAISE(ABORT, '${SEQ_GAP}'); END;
`;
const TABLE = `
CREATE TABLE skein_entries (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  at INTEGER NOT NULL,
  data TEXT NOT NULL
);
CREATE UNIQUE INDEX skein_entries_seq ON skein_entries (session_id, seq);
`;
const SCHEMA = TABLE + SEQ_TRIGGER;
/** The first layout's rows, in their list() order, into the table above (the check after them). */
const MIGRATE_FROM_0 = `
ALTER TABLE skein_entries RENAME TO skein_entries_0;
${TABLE}
INSERT INTO skein_entries (session_id, seq, at, data)
  SELECT e.session_id, e.seq,
         coalesce(CASE WHEN e.seq = 1 THEN s.created_at ELSE s.updated_at END, 0), e.data
  FROM skein_entries_0 AS e LEFT JOIN skein_sessions AS s ON s.session_id = e.session_id
  ORDER BY coalesce(s.touched, 0), e.session_id, e.seq;
DROP TABLE skein_entries_0;
DROP TABLE skein_sessions;
${SEQ_TRIGGER}
`;

/** A session store in a SQLite file: each append one write transaction, WAL journal. */
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
    // A new file only (SQLite keeps an existing file's size): see PAGE_SIZE.
    db.pragma(`page_size = ${PAGE_SIZE}`);
    // Persistent in the file: readers never block the writer, and a commit is one WAL write.
    enterWal(db);
    db.pragma(`synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}`);
    const pageSize = db.pragma("page_size", { simple: true }) as number;
    db.pragma(`wal_autocheckpoint = ${Math.ceil(AUTOCHECKPOINT_BYTES / pageSize)}`);
    if (schemaVersion(db) !== SCHEMA_VERSION) db.transaction(() => prepareSchema(db)).immediate();
  } catch (error) {
    db.close();
    throw storeFailure(`sqliteStore(): preparing "${path}"`, error);
  }
  return db;
}

/**
 * `journal_mode = WAL`, once the file is in it (a file already in WAL mode is left as it is). Two
 * processes opening a new file at once both switch it, and SQLite answers the loser SQLITE_BUSY at
 * once, without its busy handler (waiting could deadlock): the loser waits a moment and looks
 * again, up to the busy timeout.
 */
function enterWal(db: BetterSqlite3.Database): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (let pause = 5; ; pause = Math.min(pause * 2, 100)) {
    try {
      if (db.pragma("journal_mode", { simple: true }) === "wal") return;
      db.pragma("journal_mode = WAL");
      return;
    } catch (error) {
      const busy = (error as { code?: unknown }).code === "SQLITE_BUSY";
      if (!busy || Date.now() >= deadline) throw error;
      // The store opens synchronously: a short synchronous pause.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pause);
    }
  }
}

const schemaVersion = (db: BetterSqlite3.Database) =>
  db.pragma("user_version", { simple: true }) as number;

/** Creates the tables, or moves the first layout over; under the write lock, so once. */
function prepareSchema(db: BetterSqlite3.Database): void {
  const version = schemaVersion(db);
  if (version === SCHEMA_VERSION) return;
  if (version > SCHEMA_VERSION) {
    throw new SessionStoreError(
      `its sessions were written by a newer skein (layout ${version}; this one reads ${SCHEMA_VERSION}). Upgrade skein to open it.`,
    );
  }
  const hasTable = (name: string) =>
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !==
    undefined;
  if (hasTable("skein_sessions")) db.exec(MIGRATE_FROM_0);
  else db.exec(version === 1 ? SEQ_TRIGGER : SCHEMA);
  db.pragma(`user_version = ${SCHEMA_VERSION}`);
}

/** The unique index (a seq already there) or the trigger (a gap) refused the append. */
function refusedSeq(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return (
    code === "SQLITE_CONSTRAINT_UNIQUE" ||
    (code === "SQLITE_CONSTRAINT_TRIGGER" && String(error).includes(SEQ_GAP))
  );
}

interface SessionRow {
  session_id: string;
  created_at: number;
  updated_at: number;
  last_seq: number;
}

function sqliteSessions(db: BetterSqlite3.Database): SessionStore {
  const lastSeqOf = db
    .prepare<[string], number>("SELECT max(seq) FROM skein_entries WHERE session_id = ?")
    .pluck();
  const insertEntry = db.prepare<[string, number, number, string]>(
    "INSERT INTO skein_entries (session_id, seq, at, data) VALUES (?, ?, ?, ?)",
  );
  const selectEntries = db.prepare<[string, number], { seq: number; data: string }>(
    "SELECT seq, data FROM skein_entries WHERE session_id = ? AND seq > ? ORDER BY seq",
  );
  // Each session by index seeks (the distinct ids, then each one's first and last rows), newest
  // append first: the rowid is the store-wide counter.
  const selectSessions = db.prepare<[], SessionRow>(
    `WITH RECURSIVE ids (session_id) AS (
       SELECT min(session_id) FROM skein_entries
       UNION ALL
       SELECT (SELECT min(session_id) FROM skein_entries WHERE session_id > ids.session_id)
       FROM ids WHERE ids.session_id IS NOT NULL
     )
     SELECT last.session_id, coalesce(first.at, last.at) AS created_at, last.at AS updated_at,
            last.seq AS last_seq
     FROM ids
     JOIN skein_entries AS last ON last.id = (
       SELECT id FROM skein_entries WHERE session_id = ids.session_id ORDER BY seq DESC LIMIT 1)
     LEFT JOIN skein_entries AS first ON first.session_id = ids.session_id AND first.seq = 1
     ORDER BY last.id DESC`,
  );
  const deleteSession = db.prepare<[string]>("DELETE FROM skein_entries WHERE session_id = ?");

  // An append writes only its rows; the table checks the seq (SCHEMA). Entries after the first go
  // in the same transaction, each checked against the one before.
  const appendMany = db.transaction((sessionId: string, seq: number, entries: string[]) => {
    const now = Date.now();
    for (let index = 0; index < entries.length; index++)
      insertEntry.run(sessionId, seq + index, now, entries[index]!);
  });
  const append = (sessionId: string, seq: number, entries: string[]) => {
    try {
      if (entries.length === 1) insertEntry.run(sessionId, seq, Date.now(), entries[0]!);
      else appendMany.immediate(sessionId, seq, entries);
    } catch (error) {
      if (!refusedSeq(error)) throw error;
      throw new SessionConflictError({ sessionId, seq, lastSeq: lastSeqOf.get(sessionId) ?? 0 });
    }
  };
  const remove = db.transaction((sessionId: string) => deleteSession.run(sessionId).changes > 0);

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
        append(sessionId, seq, checkEntries(prefix, entries));
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
