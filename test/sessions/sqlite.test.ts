// sqliteStore() beyond the shared contract: its file, WAL, sharing one file, and a locked database.
import { mkdirSync } from "node:fs";
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
