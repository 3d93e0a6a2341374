// sqliteStore() beyond the shared contract: its file, WAL, sharing one file, a locked database, the
// pages an append writes, the limits of its entry ids, and files of older layouts.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { SessionStoreError } from "skein";
import { sqliteStore } from "skein/sqlite";
import { expect, test } from "vitest";
import { useTempDir } from "../support/temp.ts";
import { SQLITE_ROW } from "./agent-helpers.ts";

const dir = useTempDir("skein-sqlite-");

test("the file's directory is created, and the file is left in WAL mode", async () => {
  const path = join(dir, "a/b/c/sessions.db");
  const store = sqliteStore({ path });
  await store.append("s", 1, ["a"]);
  await store.close();
  const raw = new Database(path, { readonly: true });
  try {
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(raw.prepare(`${SQLITE_ROW.replace("e.id,", "")}`).get(1, "s")).toEqual({ data: "a" });
  } finally {
    raw.close();
  }
});

test("entries survive closing and reopening, with either synchronous setting", async () => {
  const path = join(dir, "reopen.db");
  const full = sqliteStore({ path, synchronous: "full" });
  await full.append("s", 1, ["one", "two"]);
  await full.close();
  const normal = sqliteStore({ path, synchronous: "normal" });
  await normal.append("s", 3, ["three"]);
  await normal.close();
  const again = sqliteStore({ path });
  expect((await again.read("s")).map((entry) => entry.data)).toEqual(["one", "two", "three"]);
  expect((await again.list()).map((info) => [info.sessionId, info.lastSeq])).toEqual([["s", 3]]);
  await again.close();
});

test("two store objects on one file see each other's appends and conflict on one seq", async () => {
  const path = join(dir, "shared.db");
  const first = sqliteStore({ path });
  const second = sqliteStore({ path });
  try {
    await first.append("s", 1, ["from first"]);
    await expect(second.append("s", 1, ["from second"])).rejects.toMatchObject({
      name: "SessionConflictError",
      sessionId: "s",
      seq: 1,
      lastSeq: 1,
    });
    await second.append("s", 2, ["from second"]);
    expect((await first.read("s")).map((entry) => entry.data)).toEqual([
      "from first",
      "from second",
    ]);
  } finally {
    await first.close();
    await second.close();
  }
});

test("each store on ':memory:' is its own database", async () => {
  const first = sqliteStore({ path: ":memory:" });
  const second = sqliteStore({ path: ":memory:" });
  await first.append("s", 1, ["a"]);
  await second.append("s", 1, ["b"]);
  expect(await first.read("s")).toEqual([{ seq: 1, data: "a" }]);
  expect(await second.read("s")).toEqual([{ seq: 1, data: "b" }]);
  await first.close();
  await second.close();
});

test("a path that cannot be opened is a SessionStoreError naming it", () => {
  const directory = join(dir, "a-directory");
  mkdirSync(directory);
  expect(() => sqliteStore({ path: directory })).toThrow(SessionStoreError);
  expect(() => sqliteStore({ path: directory })).toThrow(
    /sqliteStore\(\): opening ".*a-directory" failed/,
  );
});

test("a database held locked by another writer past busy_timeout: SessionStoreError, nothing written", async () => {
  const path = join(dir, "locked.db");
  const store = sqliteStore({ path });
  await store.append("s", 1, ["a"]);
  const other = new Database(path);
  other.exec("BEGIN IMMEDIATE");
  try {
    // busy_timeout makes the append wait (5 s) for the lock, then give up.
    await expect(store.append("s", 2, ["b"])).rejects.toSatisfy(
      (error: unknown) =>
        error instanceof SessionStoreError &&
        /append\(\) failed: database is locked/.test(error.message),
    );
  } finally {
    other.exec("ROLLBACK");
    other.close();
  }
  expect(await store.read("s")).toEqual([{ seq: 1, data: "a" }]);
  await store.append("s", 2, ["b"]);
  await store.close();
}, 120_000);

/** Frames in a WAL file: a 32-byte header (its page size at byte 8), then a 24-byte header a page. */
function walFrames(path: string): number {
  const wal = readFileSync(`${path}-wal`);
  return (wal.length - 32) / (wal.readUInt32BE(8) + 24);
}

const pageSizeOf = (path: string) => {
  const raw = new Database(path, { readonly: true });
  try {
    return raw.pragma("page_size", { simple: true });
  } finally {
    raw.close();
  }
};

test("a new file has 2 KiB pages; a file made with 4 KiB pages keeps them and works", async () => {
  const fresh = join(dir, "fresh-pages.db");
  const store = sqliteStore({ path: fresh });
  await store.append("s", 1, ["a"]);
  expect(pageSizeOf(fresh)).toBe(2048);
  await store.close();

  const old = join(dir, "old-pages.db");
  const raw = new Database(old);
  raw.pragma("journal_mode = WAL");
  raw.exec("CREATE TABLE app_data (x)");
  raw.close();
  expect(pageSizeOf(old)).toBe(4096);
  const reopened = sqliteStore({ path: old });
  await reopened.append("s", 1, ["a", "b"]);
  await reopened.append("s", 3, ["c".repeat(10_000)]);
  expect((await reopened.read("s")).map((row) => row.data.length)).toEqual([1, 1, 10_000]);
  await reopened.close();
  expect(pageSizeOf(old)).toBe(4096);
});

test("an append of a small entry writes one page, its row's; one that changes the list order three", async () => {
  const path = join(dir, "pages.db");
  const store = sqliteStore({ path });
  await store.append("s", 1, ["first"]);
  await store.append("t", 1, ["first"]);
  // No checkpoint runs below 2048 frames, so the WAL only grows: one frame a page written.
  let before = walFrames(path);
  // "s" becomes the newest session: its row, its session's row, the list order's index.
  await store.append("s", 2, ["second"]);
  expect(walFrames(path) - before).toBe(3);
  before = walFrames(path);
  for (let seq = 3; seq <= 12; seq++) {
    await store.append("s", seq, [`{"type":"started","seq":${seq}}`]);
  }
  expect(walFrames(path) - before).toBe(10);
  await store.close();
});

test("the WAL is checkpointed at 4 MiB of pages, as SQLite's default is with 4 KiB pages", async () => {
  const path = join(dir, "checkpoint.db");
  const store = sqliteStore({ path });
  // 1200 small appends, a 2 KiB page each (and a leaf split now and then): past SQLite's default
  // of 1000 frames, under 2048.
  for (let seq = 1; seq <= 1200; seq++) await store.append("s", seq, [`{"seq":${seq}}`]);
  const raw = new Database(path);
  try {
    const { log } = (raw.pragma("wal_checkpoint(PASSIVE)") as { log: number }[])[0]!;
    expect(log).toBeGreaterThan(1100);
    expect(log).toBeLessThanOrEqual(2048);
  } finally {
    raw.close();
  }
  await store.close();
});

/** Layouts 1 and 2: one table keyed by a store-wide counter, a unique index on session and seq. */
const LAYOUT_1_TABLE = `CREATE TABLE skein_entries (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL,
      seq INTEGER NOT NULL, at INTEGER NOT NULL, data TEXT NOT NULL);
    CREATE UNIQUE INDEX skein_entries_seq ON skein_entries (session_id, seq);`;

/** A file as the first sqliteStore wrote it: a sessions table with a counter, entries beside it. */
function firstLayout(path: string): void {
  const raw = new Database(path);
  raw.pragma("journal_mode = WAL");
  raw.exec(`
    CREATE TABLE skein_sessions (
      session_id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
      last_seq INTEGER NOT NULL, touched INTEGER NOT NULL);
    CREATE INDEX skein_sessions_touched ON skein_sessions (touched);
    CREATE TABLE skein_entries (
      session_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL,
      PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
    INSERT INTO skein_sessions VALUES ('old', 1000, 3000, 3, 2), ('new', 2000, 2000, 1, 3),
      ('older', 500, 4000, 2, 1);
    INSERT INTO skein_entries VALUES ('old', 1, 'o1'), ('old', 2, 'o2'), ('old', 3, 'o3'),
      ('new', 1, 'n1'), ('older', 1, 'x1'), ('older', 2, 'x2');
  `);
  raw.close();
}

test("a file of the first layout is moved over on open: entries, list order and times kept", async () => {
  const path = join(dir, "first-layout.db");
  firstLayout(path);
  const store = sqliteStore({ path });
  expect(await store.list()).toEqual([
    { sessionId: "new", createdAt: 2000, updatedAt: 2000, lastSeq: 1 },
    { sessionId: "old", createdAt: 1000, updatedAt: 3000, lastSeq: 3 },
    { sessionId: "older", createdAt: 500, updatedAt: 4000, lastSeq: 2 },
  ]);
  expect(await store.read("old")).toEqual([
    { seq: 1, data: "o1" },
    { seq: 2, data: "o2" },
    { seq: 3, data: "o3" },
  ]);
  await expect(store.append("old", 3, ["again"])).rejects.toMatchObject({
    name: "SessionConflictError",
    lastSeq: 3,
  });
  await store.append("old", 4, ["o4"]);
  expect((await store.list())[0]).toMatchObject({ sessionId: "old", lastSeq: 4 });
  await store.close();
  expectLayout3(path);
  // Opening it again changes nothing.
  const again = sqliteStore({ path });
  expect((await again.read("old")).map((row) => row.data)).toEqual(["o1", "o2", "o3", "o4"]);
  await again.close();
});

test("a file of layout 1 (the seq checked by a query, not the table) is moved over on open, and the table checks the seq", async () => {
  const path = join(dir, "layout-1.db");
  const raw = new Database(path);
  raw.pragma("journal_mode = WAL");
  raw.exec(`
    ${LAYOUT_1_TABLE}
    INSERT INTO skein_entries (session_id, seq, at, data)
      VALUES ('a', 1, 1000, 'a1'), ('b', 1, 2000, 'b1'), ('a', 2, 3000, 'a2');
  `);
  raw.pragma("user_version = 1");
  raw.close();

  const store = sqliteStore({ path });
  expect(await store.list()).toEqual([
    { sessionId: "a", createdAt: 1000, updatedAt: 3000, lastSeq: 2 },
    { sessionId: "b", createdAt: 2000, updatedAt: 2000, lastSeq: 1 },
  ]);
  // A gap and a repeat are refused, one entry or several, and write nothing.
  for (const [seq, entries] of [
    [4, ["gap"]],
    [2, ["again"]],
    [4, ["gap", "more"]],
    [1, ["first", "again"]],
  ] as const)
    await expect(store.append("a", seq, [...entries])).rejects.toMatchObject({
      name: "SessionConflictError",
      lastSeq: 2,
    });
  await store.append("a", 3, ["a3", "a4"]);
  expect((await store.read("a")).map((row) => row.data)).toEqual(["a1", "a2", "a3", "a4"]);
  await store.close();
  expectLayout3(path);
});

test("a session with a row deleted by hand takes only its last seq + 1, not the hole", async () => {
  const path = join(dir, "hole.db");
  const store = sqliteStore({ path });
  await store.append("s", 1, ["a", "b", "c", "d"]);
  const raw = new Database(path);
  raw
    .prepare(`DELETE FROM skein_entries WHERE id = (${SQLITE_ROW.replace("e.id, e.data", "e.id")})`)
    .run(2, "s");
  raw.close();
  for (const seq of [2, 4, 6])
    await expect(store.append("s", seq, ["x"])).rejects.toMatchObject({
      name: "SessionConflictError",
      lastSeq: 4,
    });
  await store.append("s", 5, ["e"]);
  expect((await store.read("s")).map((row) => row.seq)).toEqual([1, 3, 4, 5]);
  await store.close();
});

test("a file of the first layout with a hole in a session still moves over", async () => {
  const path = join(dir, "first-layout-hole.db");
  firstLayout(path);
  const raw = new Database(path);
  raw.prepare("DELETE FROM skein_entries WHERE session_id = 'old' AND seq = 2").run();
  raw.close();
  const store = sqliteStore({ path });
  expect((await store.read("old")).map((row) => row.data)).toEqual(["o1", "o3"]);
  await store.append("old", 4, ["o4"]);
  await store.close();
});

test("a file of a newer layout is refused, not changed", async () => {
  const path = join(dir, "newer.db");
  const raw = new Database(path);
  raw.pragma("user_version = 4");
  raw.close();
  expect(() => sqliteStore({ path })).toThrow(SessionStoreError);
  expect(() => sqliteStore({ path })).toThrow(/newer skein \(layout 4; this one reads 3\)/);
  const check = new Database(path, { readonly: true });
  try {
    expect(check.prepare("SELECT count(*) FROM sqlite_master").pluck().get()).toBe(0);
  } finally {
    check.close();
  }
});

/** A file's tables, indexes and triggers, as `type name` lines. */
function objectsOf(db: Database.Database): string[] {
  return db
    .prepare("SELECT type || ' ' || name FROM sqlite_master ORDER BY type, name")
    .pluck()
    .all() as string[];
}

/** The file is of layout 3: its version, and its tables, indexes and trigger, nothing else. */
function expectLayout3(path: string): void {
  const raw = new Database(path, { readonly: true });
  try {
    expect(raw.pragma("user_version", { simple: true })).toBe(3);
    expect(objectsOf(raw)).toEqual(LAYOUT_3);
  } finally {
    raw.close();
  }
}

const LAYOUT_3 = [
  "index skein_sessions_touched",
  "index sqlite_autoindex_skein_sessions_1",
  "table skein_entries",
  "table skein_sessions",
  "table sqlite_sequence",
  "trigger skein_entries_append",
];

test("a file of layout 2 is moved over on open: entries, holes, list order and times kept", async () => {
  const path = join(dir, "layout-2.db");
  const raw = new Database(path);
  raw.pragma("journal_mode = WAL");
  // The rowid is layout 2's store-wide counter: "b" was appended to last, then "a".
  raw.exec(`
    ${LAYOUT_1_TABLE}
    CREATE TRIGGER skein_entries_seq_follows BEFORE INSERT ON skein_entries
    WHEN NEW.seq IS NOT coalesce(
      (SELECT max(seq) FROM skein_entries WHERE session_id = NEW.session_id), 0) + 1
    BEGIN SELECT RAISE(ABORT, 'gap'); END;
    INSERT INTO skein_entries (session_id, seq, at, data) VALUES
      ('b', 1, 1000, 'b1'), ('a', 1, 2000, 'a1'), ('c', 1, 2500, 'c1'), ('a', 2, 3000, 'a2'),
      ('a', 3, 3500, 'a3'), ('b', 2, 4000, 'b2');
    DELETE FROM skein_entries WHERE session_id = 'a' AND seq = 2;
  `);
  raw.pragma("user_version = 2");
  raw.close();

  const store = sqliteStore({ path });
  expect(await store.list()).toEqual([
    { sessionId: "b", createdAt: 1000, updatedAt: 4000, lastSeq: 2 },
    { sessionId: "a", createdAt: 2000, updatedAt: 3500, lastSeq: 3 },
    { sessionId: "c", createdAt: 2500, updatedAt: 2500, lastSeq: 1 },
  ]);
  expect(await store.read("a")).toEqual([
    { seq: 1, data: "a1" },
    { seq: 3, data: "a3" },
  ]);
  for (const seq of [1, 2, 3, 5])
    await expect(store.append("a", seq, ["x"])).rejects.toMatchObject({
      name: "SessionConflictError",
      lastSeq: 3,
    });
  await store.append("c", 2, ["c2"]);
  await store.append("d", 1, ["d1"]);
  expect((await store.list()).map((info) => info.sessionId)).toEqual(["d", "c", "b", "a"]);
  await store.close();
  expectLayout3(path);
});

test("an older file with a seq an entry id cannot hold is refused on open, not changed", async () => {
  const path = join(dir, "layout-2-huge-seq.db");
  const raw = new Database(path);
  raw.exec(`
    ${LAYOUT_1_TABLE}
    INSERT INTO skein_entries (session_id, seq, at, data)
      VALUES ('a', 1, 1000, 'a1'), ('a', 4294967296, 2000, 'a2');
  `);
  raw.pragma("user_version = 2");
  raw.close();
  expect(() => sqliteStore({ path })).toThrow(SessionStoreError);
  expect(() => sqliteStore({ path })).toThrow(
    /session "a" has an entry at seq 4294967296, outside 1-4294967295/,
  );
  const check = new Database(path, { readonly: true });
  try {
    expect(check.pragma("user_version", { simple: true })).toBe(2);
    expect(check.prepare("SELECT count(*) FROM skein_entries").pluck().get()).toBe(2);
  } finally {
    check.close();
  }
});

test("a session deleted and begun again through another store object: the first one's appends follow the new session, never the old number", async () => {
  const path = join(dir, "renumbered.db");
  const first = sqliteStore({ path });
  const second = sqliteStore({ path });
  try {
    await first.append("s", 1, ["old 1", "old 2", "old 3"]);
    await first.append("s", 4, ["old 4"]); // first now knows the session's number
    expect(await second.delete("s")).toBe(true);
    await second.append("s", 1, ["new 1", "new 2"]);
    // seq 5 followed the old session, not the new one: refused, nothing written.
    await expect(first.append("s", 5, ["stale"])).rejects.toMatchObject({
      name: "SessionConflictError",
      lastSeq: 2,
    });
    // seq 3 follows the new session: written there, though first's number was the old one's.
    await first.append("s", 3, ["new 3"]);
    await second.append("s", 4, ["new 4"]);
    expect((await second.read("s")).map((row) => row.data)).toEqual([
      "new 1",
      "new 2",
      "new 3",
      "new 4",
    ]);
    // Deleted and begun again once more, with first's number cached: a one-entry append and a
    // batch both land in the new session.
    expect(await second.delete("s")).toBe(true);
    await second.append("s", 1, ["again 1"]);
    await first.append("s", 2, ["again 2", "again 3"]);
    expect(await second.read("s")).toEqual([
      { seq: 1, data: "again 1" },
      { seq: 2, data: "again 2" },
      { seq: 3, data: "again 3" },
    ]);
    // Deleted through first itself, the id begins again from seq 1 there too.
    expect(await first.delete("s")).toBe(true);
    await expect(first.append("s", 6, ["x"])).rejects.toMatchObject({ lastSeq: 0 });
    await first.append("s", 1, ["fresh"]);
    expect(await second.read("s")).toEqual([{ seq: 1, data: "fresh" }]);
    expect((await second.list()).map((info) => [info.sessionId, info.lastSeq])).toEqual([["s", 1]]);
  } finally {
    await first.close();
    await second.close();
  }
});

test("a session number is spent only on a new session: reopening and appending to one spends none", async () => {
  const path = join(dir, "spent.db");
  const sequence = () => {
    const raw = new Database(path, { readonly: true });
    try {
      return raw
        .prepare("SELECT seq FROM sqlite_sequence WHERE name = 'skein_sessions'")
        .pluck()
        .get();
    } finally {
      raw.close();
    }
  };
  let store = sqliteStore({ path });
  await store.append("s", 1, ["a"]);
  await store.close();
  expect(sequence()).toBe(1);
  for (let seq = 2; seq <= 6; seq++) {
    store = sqliteStore({ path });
    await store.append("s", seq, ["more"]); // a store object's first append to the session
    await expect(store.append("s", 1, ["x"])).rejects.toMatchObject({ lastSeq: seq });
    await expect(store.append("t", 2, ["x"])).rejects.toMatchObject({ lastSeq: 0 });
    await store.close();
  }
  expect(sequence()).toBe(1);
  store = sqliteStore({ path });
  await store.append("t", 1, ["t"]);
  await store.close();
  expect(sequence()).toBe(2);
});

test("a seq past what an entry id holds is a conflict, nothing written", async () => {
  const store = sqliteStore({ path: join(dir, "huge-seq.db") });
  await store.append("s", 1, ["a"]);
  for (const [seq, entries] of [
    [2 ** 32, ["x"]],
    [2 ** 32 - 1, ["x", "y"]],
    [2 ** 40, ["x"]],
  ] as const)
    await expect(store.append("s", seq, [...entries])).rejects.toMatchObject({
      name: "SessionConflictError",
      seq,
      lastSeq: 1,
    });
  expect(await store.read("s", { after: 2 ** 40 })).toEqual([]);
  expect(await store.read("s")).toEqual([{ seq: 1, data: "a" }]);
  await store.close();
});

test("a session at the last seq an entry id holds: the append that follows it is a SessionStoreError naming the limit", async () => {
  const path = join(dir, "full-session.db");
  const store = sqliteStore({ path });
  await store.append("s", 1, ["a"]);
  const raw = new Database(path);
  // Past the table's own check (which refuses a jump), then the check put back as it was.
  const check = raw
    .prepare("SELECT sql FROM sqlite_master WHERE name = 'skein_entries_append'")
    .pluck()
    .get() as string;
  raw.exec(`DROP TRIGGER skein_entries_append;
    INSERT INTO skein_entries (id, at, data) VALUES ((1 << 32) | 4294967295, 0, 'last');
    ${check};`);
  raw.close();
  await expect(store.append("s", 2 ** 32, ["x"])).rejects.toSatisfy(
    (error: unknown) =>
      error instanceof SessionStoreError &&
      /session "s" holds at most 4294967295 entries/.test(error.message),
  );
  // Any other seq is still a conflict naming the last.
  await expect(store.append("s", 2, ["x"])).rejects.toMatchObject({
    name: "SessionConflictError",
    lastSeq: 2 ** 32 - 1,
  });
  expect(await store.read("s", { after: 2 ** 32 - 2 })).toEqual([
    { seq: 2 ** 32 - 1, data: "last" },
  ]);
  await store.close();
});

test("session numbers up to the last an id holds work; past it a new session is refused, nothing written", async () => {
  const path = join(dir, "numbers.db");
  const store = sqliteStore({ path });
  await store.append("first", 1, ["f"]);
  const raw = new Database(path);
  // The next session takes number 2^31 - 1: its ids are the top of SQLite's 64 bits.
  raw.prepare("UPDATE sqlite_sequence SET seq = ? WHERE name = 'skein_sessions'").run(2 ** 31 - 2);
  raw.close();
  await store.append("top", 1, ["t1", "t2"]);
  await store.append("top", 3, ["t3"]);
  expect(await store.read("top", { after: 1 })).toEqual([
    { seq: 2, data: "t2" },
    { seq: 3, data: "t3" },
  ]);
  expect(await store.list()).toMatchObject([
    { sessionId: "top", lastSeq: 3 },
    { sessionId: "first", lastSeq: 1 },
  ]);
  await expect(store.append("past", 1, ["p"])).rejects.toSatisfy(
    (error: unknown) =>
      error instanceof SessionStoreError && /numbered 2147483647 sessions/.test(error.message),
  );
  expect(await store.read("past")).toEqual([]);
  expect((await store.list()).map((info) => info.sessionId)).toEqual(["top", "first"]);
  await store.append("first", 2, ["f2"]);
  expect(await store.delete("top")).toBe(true);
  expect((await store.list()).map((info) => [info.sessionId, info.lastSeq])).toEqual([
    ["first", 2],
  ]);
  await store.close();
});

test("an append under a session number whose session row was deleted by hand is refused", async () => {
  const path = join(dir, "no-session-row.db");
  const store = sqliteStore({ path });
  await store.append("s", 1, ["a", "b"]);
  await store.append("s", 3, ["c"]); // the store object now knows the session's number
  const raw = new Database(path);
  raw.prepare("DELETE FROM skein_sessions WHERE session_id = 's'").run();
  raw.close();
  // Its rows run 1-3, so seq 4 follows them: only the missing session row refuses it.
  await expect(store.append("s", 4, ["d"])).rejects.toMatchObject({
    name: "SessionConflictError",
    lastSeq: 0,
  });
  const check = new Database(path, { readonly: true });
  try {
    expect(check.prepare("SELECT count(*) FROM skein_entries").pluck().get()).toBe(3);
  } finally {
    check.close();
  }
  await store.close();
});

test("a store object keeps the numbers of its 1024 latest sessions: an append to an older one looks it up again", async () => {
  // Counts the lookups of a session's number, through the statement the store prepares for them.
  let lookups = 0;
  const prepare = Database.prototype.prepare;
  Database.prototype.prepare = function (this: Database.Database, source: string) {
    const statement = prepare.call(this, source);
    if (!source.includes("SELECT n FROM skein_sessions WHERE session_id")) return statement;
    const get = statement.get.bind(statement) as (...args: unknown[]) => unknown;
    return Object.assign(statement, {
      get: (...args: unknown[]) => {
        lookups++;
        return get(...args);
      },
    });
  } as typeof prepare;
  let store: ReturnType<typeof sqliteStore>;
  try {
    store = sqliteStore({ path: join(dir, "cached-numbers.db") });
  } finally {
    Database.prototype.prepare = prepare;
  }
  const ids = Array.from({ length: 1100 }, (_, index) => `s${index}`);
  for (const id of ids) await store.append(id, 1, ["first"]);
  expect(lookups).toBe(1100);
  lookups = 0;
  for (const id of ids.slice(-1024)) await store.append(id, 2, ["second"]);
  expect(lookups).toBe(0);
  await store.append("s0", 2, ["second"]);
  expect(lookups).toBe(1);
  // "s0" is cached again now, and the longest-cached ("s76") was let go for it.
  await store.append("s0", 3, ["third"]);
  await store.append("s76", 3, ["third"]);
  expect(lookups).toBe(2);
  expect((await store.read("s0")).map((row) => row.data)).toEqual(["first", "second", "third"]);
  await store.close();
});
