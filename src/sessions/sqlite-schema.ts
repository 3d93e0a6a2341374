// The layout of sqliteStore's file (sqlite.ts): its tables and the trigger that checks each
// append's seq, and the moves from older layouts, made once on open.

import type BetterSqlite3 from "better-sqlite3";
import { SessionStoreError } from "../core/errors.ts";

/**
 * Layout 3 (`PRAGMA user_version`): an entry's row id is its session's number (`skein_sessions.n`)
 * in the high bits and its seq in the low 32, so a session's entries are one range of the table's
 * own B-tree: an append writes its row's page and nothing else (no second index); with the
 * trigger below, about 10-25 µs less a one-tool turn inside runs (three appends) than layout 2. The expected-seq check is in the table:
 * a trigger refuses an id that is not its session's last + 1 (exactly: a hole left by hand is not
 * filled) or whose session has no row, so an append of one entry is one INSERT statement (which
 * takes the write lock before it reads, as `BEGIN IMMEDIATE` does). The same trigger keeps list()'s
 * order: a session's `touched` becomes the store-wide newest when an append lands in a session
 * that was not the newest (two pages more then, none when a session goes on appending).
 * Session numbers are never reused (AUTOINCREMENT), so a store object's cached number of a session
 * deleted elsewhere matches no row: an append under it is refused, then looked up afresh and
 * checked again, never written under another session's number.
 * Older layouts are moved over once, on open, under the write lock: layout 2 and 1 (one table keyed
 * by a store-wide counter, a unique index on (session_id, seq); 2 had the trigger), layout 0 (a
 * `skein_sessions` table and an index on its counter, rewritten by every append).
 */
export const SCHEMA_VERSION = 3;
/** The largest seq an entry id holds (its low 32 bits). */
export const MAX_SEQ = 2 ** 32 - 1;
const SEQ_GAP = "skein: seq does not follow the last seq of its session";
const TABLES = `
CREATE TABLE skein_sessions (
  n INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL UNIQUE,
  touched INTEGER NOT NULL
);
CREATE INDEX skein_sessions_touched ON skein_sessions (touched);
CREATE TABLE skein_entries (
  id INTEGER PRIMARY KEY,
  at INTEGER NOT NULL,
  data TEXT NOT NULL
);
`;
// One trigger, so one sub-program a row: the check (a seek of the row's range and of its
// session), then the list order (a seek of the session and of the newest; no write when the
// session is the newest already).
const APPEND_TRIGGER = `
CREATE TRIGGER skein_entries_append BEFORE INSERT ON skein_entries
BEGIN
  SELECT RAISE(ABORT, '${SEQ_GAP}')
  WHERE NEW.id IS NOT coalesce(
      (SELECT max(id) FROM skein_entries
       WHERE id > (NEW.id >> 32) << 32 AND id <= NEW.id | ${MAX_SEQ}),
      (NEW.id >> 32) << 32) + 1
    OR NOT EXISTS (SELECT 1 FROM skein_sessions WHERE n = NEW.id >> 32);
  UPDATE skein_sessions SET touched = (SELECT max(touched) FROM skein_sessions) + 1
  WHERE n = NEW.id >> 32 AND touched < (SELECT max(touched) FROM skein_sessions);
END;
`;
const SCHEMA = TABLES + APPEND_TRIGGER;
/** Layouts 1 and 2 (the same table; 2 with a trigger), as layout 0 is moved into first. */
const LAYOUT_2_TABLE = `
CREATE TABLE skein_entries (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  at INTEGER NOT NULL,
  data TEXT NOT NULL
);
CREATE UNIQUE INDEX skein_entries_seq ON skein_entries (session_id, seq);
`;
/** The first layout's rows, in their list() order, into layout 2's table. */
const MIGRATE_FROM_0 = `
ALTER TABLE skein_entries RENAME TO skein_entries_0;
${LAYOUT_2_TABLE}
INSERT INTO skein_entries (session_id, seq, at, data)
  SELECT e.session_id, e.seq,
         coalesce(CASE WHEN e.seq = 1 THEN s.created_at ELSE s.updated_at END, 0), e.data
  FROM skein_entries_0 AS e LEFT JOIN skein_sessions AS s ON s.session_id = e.session_id
  ORDER BY coalesce(s.touched, 0), e.session_id, e.seq;
DROP TABLE skein_entries_0;
DROP TABLE skein_sessions;
`;
/**
 * Layout 2's rows into layout 3: sessions numbered in list() order, each touched at its last row's
 * counter; seqs kept as they are (a hole left by hand stays a hole), the check created after them.
 */
const MIGRATE_FROM_2 = `
DROP TRIGGER IF EXISTS skein_entries_seq_follows;
ALTER TABLE skein_entries RENAME TO skein_entries_2;
${TABLES}
INSERT INTO skein_sessions (session_id, touched)
  SELECT session_id, max(id) FROM skein_entries_2 GROUP BY session_id ORDER BY max(id);
INSERT INTO skein_entries (id, at, data)
  SELECT (s.n << 32) | e.seq, e.at, e.data
  FROM skein_entries_2 AS e JOIN skein_sessions AS s ON s.session_id = e.session_id
  ORDER BY 1;
DROP TABLE skein_entries_2;
${APPEND_TRIGGER}
`;

/** A session store in a SQLite file: each append one write transaction, WAL journal. */

export const schemaVersion = (db: BetterSqlite3.Database) =>
  db.pragma("user_version", { simple: true }) as number;

/** Creates the tables, or moves an older layout over; under the write lock, so once. */
export function prepareSchema(db: BetterSqlite3.Database): void {
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
  if (!hasTable("skein_entries")) db.exec(SCHEMA);
  else {
    if (version === 0 && hasTable("skein_sessions")) db.exec(MIGRATE_FROM_0);
    // A seq outside an id's 32 bits would land in another session's range: refused, not moved.
    const outside = db
      .prepare("SELECT session_id, seq FROM skein_entries WHERE seq < 1 OR seq > ? LIMIT 1")
      .get(MAX_SEQ) as { session_id: string; seq: number } | undefined;
    if (outside) {
      throw new SessionStoreError(
        `session "${outside.session_id}" has an entry at seq ${outside.seq}, outside 1-${MAX_SEQ}: this skein cannot move it to its layout ${SCHEMA_VERSION}. Fix or remove that row, or keep the file with the skein that wrote it.`,
      );
    }
    db.exec(MIGRATE_FROM_2);
  }
  db.pragma(`user_version = ${SCHEMA_VERSION}`);
}

/** The trigger (a gap, or no such session row) or the primary key (a seq already there) refused it. */
export function refusedSeq(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return (
    code === "SQLITE_CONSTRAINT_PRIMARYKEY" ||
    (code === "SQLITE_CONSTRAINT_TRIGGER" && String(error).includes(SEQ_GAP))
  );
}
