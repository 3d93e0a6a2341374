// Helpers of the in-process session tests: a store that fails on demand, entries, counting tools.
import Database from "better-sqlite3";
import { memoryStore, type SessionStore } from "skein";

export async function lastSeqOf(store: SessionStore, sessionId: string): Promise<number> {
  return (await store.read(sessionId)).length;
}

/** An entry's `type`, `?` for one that is not JSON. */
export function entryType(data: string): string {
  try {
    return String(JSON.parse(data).type);
  } catch {
    return "?";
  }
}

/** Whether an append's entries (by `entryType`) log a batch's results message. */
export const logsResults = (types: string[]) =>
  types.some((type) => type === "results" || type === "results_reply");

/** The type of each stored entry (see `entryType`). */
export async function entryTypes(store: SessionStore, sessionId: string): Promise<string[]> {
  return (await store.read(sessionId)).map((row) => entryType(row.data));
}

/** Decides, for each append attempt, whether it fails (and how). */
export type FailWhen = (attempt: {
  entries: string[];
  types: string[];
  call: number;
}) => Error | undefined;

/**
 * A memoryStore whose `append` throws when `failWhen` says so (before writing anything), and
 * which counts attempts: a disk that is full, a database that is gone.
 */
export function failingStore(failWhen: FailWhen): SessionStore & {
  attempts: string[][];
  inner: SessionStore;
} {
  const inner = memoryStore();
  const attempts: string[][] = [];
  return {
    attempts,
    inner,
    async append(sessionId, seq, entries) {
      const types = entries.map(entryType);
      attempts.push(types);
      const failure = failWhen({ entries: [...entries], types, call: attempts.length });
      if (failure) throw failure;
      return inner.append(sessionId, seq, entries);
    },
    read: (sessionId, options) => inner.read(sessionId, options),
    list: () => inner.list(),
    delete: (sessionId) => inner.delete(sessionId),
    close: () => inner.close(),
  };
}

/** One entry's row of a SQLite session file (its id: the session's number, then the seq in 32 bits). */
export const SQLITE_ROW = `SELECT e.id, e.data FROM skein_sessions AS s JOIN skein_entries AS e
  ON e.id = (s.n << 32) | ? WHERE s.session_id = ?`;

/** Edits one stored entry of a SQLite session file in place, as someone with the file could. */
export function editSqliteRow(
  path: string,
  sessionId: string,
  seq: number,
  edit: (data: string) => string,
): void {
  const db = new Database(path);
  try {
    const row = db.prepare(SQLITE_ROW).safeIntegers().get(seq, sessionId) as
      | { id: bigint; data: string }
      | undefined;
    if (!row) throw new Error(`no entry at seq ${seq} of session "${sessionId}"`);
    db.prepare("UPDATE skein_entries SET data = ? WHERE id = ?").run(edit(row.data), row.id);
  } finally {
    db.close();
  }
}
