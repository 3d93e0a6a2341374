// sqliteStore() beyond the shared contract: its file, WAL, sharing one file, a locked database, the
// pages an append writes, and files of the first layout.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { SessionStoreError } from "skein";
import { sqliteStore } from "skein/sqlite";
import { expect, test } from "vitest";
import { useTempDir } from "../support/temp.ts";

const dir = useTempDir("skein-sqlite-");

test("the file's directory is created, and the file is left in WAL mode", async () => {
  const path = join(dir, "a/b/c/sessions.db");
  const store = sqliteStore({ path });
  await store.append("s", 1, ["a"]);
  await store.close();
  const raw = new Database(path, { readonly: true });
  try {
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(raw.prepare("SELECT seq, data FROM skein_entries").all()).toEqual([
      { seq: 1, data: "a" },
    ]);
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
}, 30_000);

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

test("an append of a small entry writes two pages: its row and its index entry, nothing else", async () => {
  const path = join(dir, "pages.db");
  const store = sqliteStore({ path });
  await store.append("s", 1, ["first"]);
  await store.append("t", 1, ["first"]);
  const before = walFrames(path);
  for (let seq = 2; seq <= 11; seq++) {
    await store.append("s", seq, [`{"type":"started","seq":${seq}}`]);
  }
  // No checkpoint runs below 2000 frames, so the WAL only grows: one frame a page written.
  expect(walFrames(path) - before).toBe(20);
  await store.close();
});

test("the WAL is checkpointed at 4 MiB of pages, as SQLite's default is with 4 KiB pages", async () => {
  const path = join(dir, "checkpoint.db");
  const store = sqliteStore({ path });
  // 600 small appends, two 2 KiB pages each: past SQLite's default of 1000 frames, under 2048.
  for (let seq = 1; seq <= 600; seq++) await store.append("s", seq, [`{"seq":${seq}}`]);
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
  const raw = new Database(path, { readonly: true });
  try {
    expect(raw.pragma("user_version", { simple: true })).toBe(2);
    const tables = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck();
    expect(tables.all()).toEqual(["skein_entries"]);
  } finally {
    raw.close();
  }
  // Opening it again changes nothing.
  const again = sqliteStore({ path });
  expect((await again.read("old")).map((row) => row.data)).toEqual(["o1", "o2", "o3", "o4"]);
  await again.close();
});

test("a file of layout 1 (the seq checked by a query, not the table) gets the check on open", async () => {
  const path = join(dir, "layout-1.db");
  const raw = new Database(path);
  raw.pragma("journal_mode = WAL");
  raw.exec(`
    CREATE TABLE skein_entries (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL,
      seq INTEGER NOT NULL, at INTEGER NOT NULL, data TEXT NOT NULL);
    CREATE UNIQUE INDEX skein_entries_seq ON skein_entries (session_id, seq);
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
  const check = new Database(path, { readonly: true });
  try {
    expect(check.pragma("user_version", { simple: true })).toBe(2);
    const triggers = check.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'");
    expect(triggers.pluck().all()).toEqual(["skein_entries_seq_follows"]);
  } finally {
    check.close();
  }
});

test("a session with a row deleted by hand takes only its last seq + 1, not the hole", async () => {
  const path = join(dir, "hole.db");
  const store = sqliteStore({ path });
  await store.append("s", 1, ["a", "b", "c", "d"]);
  const raw = new Database(path);
  raw.prepare("DELETE FROM skein_entries WHERE session_id = 's' AND seq = 2").run();
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
  raw.pragma("user_version = 3");
  raw.close();
  expect(() => sqliteStore({ path })).toThrow(SessionStoreError);
  expect(() => sqliteStore({ path })).toThrow(/newer skein \(layout 3; this one reads 2\)/);
  const check = new Database(path, { readonly: true });
  try {
    expect(check.prepare("SELECT count(*) FROM sqlite_master").pluck().get()).toBe(0);
  } finally {
    check.close();
  }
});
