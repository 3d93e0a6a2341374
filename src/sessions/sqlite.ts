/** sqliteStore(): a session store in one SQLite file (better-sqlite3, WAL). @module skein/sqlite */
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { ConfigurationError, SessionConflictError, SessionStoreError } from "../core/errors.ts";
import { assertKnownOptions, assertOneOf, describeValue } from "../core/options.ts";
import type { SessionInfo, SessionStore } from "../core/session-store.ts";
import { loadPeer, type Peer, peerError } from "./peer.ts";
import {
  MAX_SEQ,
  prepareSchema,
  refusedSeq,
  SCHEMA_VERSION,
  schemaVersion,
} from "./sqlite-schema.ts";
import { assertSeq, assertSessionId, checkEntries, readAfter, storeFailure } from "./validate.ts";

export type { SessionInfo, SessionStore } from "../core/session-store.ts";

export interface SqliteStoreOptions {
  /** The database file (its directory is created), or `":memory:"` for one in this process only. */
  path: string;
  /**
   * `"normal"` (default): every resolved append survives a crash of the process; the last ones
   * may roll back on power loss. `"full"`: also survives power loss, at an fsync per append.
   */
  synchronous?: "normal" | "full" | undefined;
}

const PEER: Peer = { entry: "skein/sqlite", name: "better-sqlite3", range: "^12" };
const OPTION_KEYS: ReadonlySet<string> = new Set(["path", "synchronous"]);
const BUSY_TIMEOUT_MS = 5000;
/**
 * Pages of 2 KiB, not SQLite's 4 KiB: a commit copies, checksums and writes every page it touched
 * whole to the WAL (an append: its row's). Most entries are well under a page (started markers,
 * small results, replies): half the bytes took 1.5-2 µs off an append of two pages at the median
 * inside runs, and more off the mean (checkpoints copy fewer bytes); entries over ~8 KiB, which
 * span more pages, pay about a tenth more.
 */
const PAGE_SIZE = 2048;
/**
 * A commit that takes the WAL past its checkpoint size copies the frames into the database first
 * (an fsync each of WAL and database). SQLite's default is 1000 frames, 4 MiB of 4 KiB pages; the
 * same 4 MiB of this file's pages keeps checkpoints as rare per byte logged with 2 KiB pages.
 */
const AUTOCHECKPOINT_BYTES = 4 * 1024 * 1024;

/** The largest session number whose ids stay in SQLite's signed 64 bits. */
const MAX_SESSION_NUMBER = 2 ** 31 - 1;
/** Session numbers a store object keeps; one past them costs a lookup in its next append. */
const CACHED_NUMBERS = 1024;

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

interface SessionRow {
  session_id: string;
  created_at: number;
  updated_at: number;
  last_seq: number;
}

function sqliteSessions(db: BetterSqlite3.Database): SessionStore {
  /**
   * Session numbers this store object has used: an append after the first skips the lookup. A
   * number cached for a session deleted elsewhere matches no row (numbers are never reused), so
   * the trigger refuses the append, and it is looked up afresh. At most CACHED_NUMBERS are kept
   * (a server may append to millions of sessions over its life): the longest-cached goes first.
   */
  const numbers = new Map<string, number>();
  const remember = (sessionId: string, n: number) => {
    numbers.delete(sessionId);
    numbers.set(sessionId, n);
    if (numbers.size > CACHED_NUMBERS) numbers.delete(numbers.keys().next().value!);
  };
  const numberOf = db
    .prepare<[string], number>("SELECT n FROM skein_sessions WHERE session_id = ?")
    .pluck();
  // A new session is the newest; the trigger moves an existing one when an append lands in it.
  // Only for a session that has no row: AUTOINCREMENT would spend a number on a conflict too.
  const addSession = db.prepare<[string]>(
    `INSERT INTO skein_sessions (session_id, touched)
     VALUES (?, coalesce((SELECT max(touched) FROM skein_sessions), 0) + 1)`,
  );
  // `|`, not `+`: better-sqlite3 binds numbers as REAL, and a REAL sum would round past 2^53.
  const insertEntry = db.prepare<[number, number, number, string]>(
    "INSERT INTO skein_entries (id, at, data) VALUES ((? << 32) | ?, ?, ?)",
  );
  const lastSeqOf = db
    .prepare<[string], number | null>(
      `SELECT max(e.id) & ${MAX_SEQ} FROM skein_sessions AS s JOIN skein_entries AS e
         ON e.id > s.n << 32 AND e.id <= (s.n << 32) | ${MAX_SEQ}
       WHERE s.session_id = ?`,
    )
    .pluck();
  const selectEntries = db.prepare<[number, string], { seq: number; data: string }>(
    `SELECT e.id & ${MAX_SEQ} AS seq, e.data FROM skein_sessions AS s JOIN skein_entries AS e
       ON e.id > (s.n << 32) | ? AND e.id <= (s.n << 32) | ${MAX_SEQ}
     WHERE s.session_id = ? ORDER BY e.id`,
  );
  // Each session's last row (one seek of its range) and first row, newest first.
  const selectSessions = db.prepare<[], SessionRow>(
    `SELECT s.session_id, last.id & ${MAX_SEQ} AS last_seq, last.at AS updated_at,
            coalesce((SELECT at FROM skein_entries WHERE id = (s.n << 32) | 1), last.at)
              AS created_at
     FROM skein_sessions AS s
     JOIN skein_entries AS last ON last.id = (
       SELECT max(id) FROM skein_entries WHERE id > s.n << 32 AND id <= (s.n << 32) | ${MAX_SEQ})
     ORDER BY s.touched DESC`,
  );
  const deleteEntries = db.prepare<[number, number]>(
    `DELETE FROM skein_entries WHERE id > ? << 32 AND id <= (? << 32) | ${MAX_SEQ}`,
  );
  const deleteSession = db.prepare<[number]>("DELETE FROM skein_sessions WHERE n = ?");

  const insertAll = (n: number, seq: number, entries: string[]) => {
    const now = Date.now();
    for (let index = 0; index < entries.length; index++)
      insertEntry.run(n, seq + index, now, entries[index]!);
  };
  // A session this object has no number for (or whose number was refused): its row (made when
  // missing), then the entries, in one transaction (a refused append leaves no session row
  // behind). Seq 1 always comes here, so a session deleted and begun again elsewhere is written
  // under its new number.
  const appendLookingUp = db.transaction((sessionId: string, seq: number, entries: string[]) => {
    const n = numberOf.get(sessionId) ?? Number(addSession.run(sessionId).lastInsertRowid);
    if (n > MAX_SESSION_NUMBER) {
      throw new SessionStoreError(
        `the file has numbered ${MAX_SESSION_NUMBER} sessions, as many as its entry ids hold: start a new file.`,
      );
    }
    insertAll(n, seq, entries);
    return n;
  });
  const appendMany = db.transaction(insertAll);
  const conflict = (sessionId: string, seq: number) =>
    new SessionConflictError({ sessionId, seq, lastSeq: lastSeqOf.get(sessionId) ?? 0 });
  const append = (sessionId: string, seq: number, entries: string[]) => {
    if (seq + entries.length - 1 > MAX_SEQ) throw pastLastSeq(sessionId, seq);
    const n = seq === 1 ? undefined : numbers.get(sessionId);
    try {
      if (n !== undefined) {
        try {
          if (entries.length === 1) insertEntry.run(n, seq, Date.now(), entries[0]!);
          else appendMany.immediate(n, seq, entries);
          return;
        } catch (error) {
          if (!refusedSeq(error)) throw error;
          // Refused under the cached number, nothing written: the session may have been deleted
          // and begun again elsewhere under a new one. Looked up afresh, it is checked again.
          numbers.delete(sessionId);
        }
      }
      remember(sessionId, appendLookingUp.immediate(sessionId, seq, entries));
    } catch (error) {
      if (!refusedSeq(error)) throw error;
      throw conflict(sessionId, seq);
    }
  };
  /** A conflict, unless the seq does follow the session's last: then the limit is the answer. */
  const pastLastSeq = (sessionId: string, seq: number) => {
    const refusal = conflict(sessionId, seq);
    if (refusal.lastSeq !== seq - 1) return refusal;
    return new SessionStoreError(
      `session "${sessionId}" holds at most ${MAX_SEQ} entries in this store, and an append at seq ${seq} would pass that: start a new session.`,
    );
  };
  const remove = db.transaction((sessionId: string) => {
    const n = numberOf.get(sessionId);
    if (n === undefined) return false;
    const removed = deleteEntries.run(n, n).changes > 0;
    deleteSession.run(n);
    return removed;
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
        append(sessionId, seq, checkEntries(prefix, entries));
      }),
    read: (sessionId, options) =>
      attempt("read", (prefix) => {
        assertSessionId(prefix, sessionId);
        return selectEntries.all(Math.min(readAfter(prefix, options), MAX_SEQ), sessionId);
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
        numbers.delete(sessionId);
        return remove.immediate(sessionId);
      }),
    close: async () => {
      if (db.open) db.close();
    },
  };
}
