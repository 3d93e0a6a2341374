// Bad arguments to every store: clear ConfigurationErrors as rejections, and nothing written.
import { join } from "node:path";
import { ConfigurationError, memoryStore, type SessionStore, SessionStoreError } from "skein";
import { postgresStore } from "skein/postgres";
import { sqliteStore } from "skein/sqlite";
import { describe, expect, test } from "vitest";
import { useThrowawayPostgres } from "../support/postgres.ts";
import { useTempDir } from "../support/temp.ts";

const dir = useTempDir("skein-sqlite-arguments-");
const postgres = useThrowawayPostgres();

let opened = 0;
const kinds: [string, () => SessionStore][] = [
  ["memoryStore", () => memoryStore()],
  ["sqliteStore", () => sqliteStore({ path: join(dir, `store-${++opened}.db`) })],
  [
    "postgresStore",
    () => postgresStore({ connectionString: postgres().url, schema: `arguments_${++opened}` }),
  ],
];

const BAD_IDS: unknown[] = [
  "",
  "has space",
  "x".repeat(129),
  "caf\u00e9",
  "a/b",
  "../up",
  "a\0b",
  "tab\there",
  "new\nline",
  5,
  undefined,
  null,
  { id: "s" },
];

describe.each(kinds)("%s refuses bad arguments", (kind, open) => {
  const withStore = async (body: (store: SessionStore) => Promise<void>) => {
    const store = open();
    try {
      await body(store);
    } finally {
      await store.close();
    }
  };
  const refused = (promise: Promise<unknown>, message: RegExp) =>
    expect(promise).rejects.toSatisfy(
      (error: unknown) => error instanceof ConfigurationError && message.test(error.message),
    );

  test("a session id outside 1-128 characters of [A-Za-z0-9._:-], for every method", async () => {
    await withStore(async (store) => {
      for (const id of BAD_IDS) {
        const bad = id as string;
        const message = /session id .* is not valid\. Use 1-128 characters from A-Z, a-z, 0-9/;
        await refused(store.append(bad, 1, ["a"]), message);
        await refused(store.read(bad), message);
        await refused(store.delete(bad), message);
      }
      expect(await store.list()).toEqual([]);
      const longest = `${"A.b_c:d-9".repeat(14)}xx`;
      expect(longest).toHaveLength(128);
      await store.append(longest, 1, ["ok"]);
      await store.append("1", 1, ["ok"]);
      expect(await store.read(longest)).toEqual([{ seq: 1, data: "ok" }]);
    });
  });

  test("a seq that is not a positive integer, with nothing written", async () => {
    await withStore(async (store) => {
      for (const seq of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, "1", null]) {
        await refused(store.append("s", seq as number, ["a"]), /seq must be a positive integer/);
      }
      expect(await store.list()).toEqual([]);
    });
  });

  test("entries that are not a non-empty array of strings, with nothing written", async () => {
    await withStore(async (store) => {
      for (const entries of [[], "a", undefined, { 0: "a" }]) {
        await refused(
          store.append("s", 1, entries as string[]),
          /entries must be a non-empty array of strings/,
        );
      }
      for (const entries of [[1], ["a", null], ["a", { data: "b" }]]) {
        await refused(store.append("s", 1, entries as string[]), /entries\[\d\] must be a string/);
      }
      expect(await store.read("s")).toEqual([]);
    });
  });

  test("an entry holding NUL or a lone surrogate is refused whole, in every store alike", async () => {
    await withStore(async (store) => {
      await store.append("s", 1, ["first"]);
      await refused(
        store.append("s", 2, ["fine", "nul \u0000 inside"]),
        /entries\[1\] contains a NUL character .* Escape it/,
      );
      await refused(
        store.append("s", 2, ["lone \ud800 surrogate"]),
        /entries\[0\] contains a lone surrogate/,
      );
      await refused(store.append("s", 2, ["\udc00"]), /lone surrogate/);
      expect(await store.read("s")).toEqual([{ seq: 1, data: "first" }]);
      expect((await store.list())[0]!.lastSeq).toBe(1);
      // Escaped as JSON text does, the same characters are kept.
      const escaped = JSON.stringify("nul \u0000 and \ud800");
      await store.append("s", 2, [escaped]);
      expect((await store.read("s", { after: 1 }))[0]!.data).toBe(escaped);
    });
  });

  test("read options are checked strictly", async () => {
    await withStore(async (store) => {
      await refused(
        store.read("s", { bogus: 1 } as never),
        new RegExp(
          `^${kind}\\.read\\(\\): unknown option "bogus"\\. Check for a typo, or upgrade the SDK if this option was added in a newer version\\.$`,
        ),
      );
      for (const after of [-1, 1.5, "1", null]) {
        await refused(
          store.read("s", { after: after as number }),
          /after must be a non-negative integer/,
        );
      }
      await refused(store.read("s", "after" as never), /options must be an object/);
    });
  });

  test("a closed store rejects every method with SessionStoreError; closing twice is fine", async () => {
    const store = open();
    await store.append("s", 1, ["a"]);
    await store.close();
    await store.close();
    for (const call of [
      () => store.append("s", 2, ["b"]),
      () => store.read("s"),
      () => store.list(),
      () => store.delete("s"),
    ]) {
      await expect(call()).rejects.toSatisfy(
        (error: unknown) =>
          error instanceof SessionStoreError && /store is closed/.test(String(error)),
      );
    }
  });
});

describe("store factories check their options strictly", () => {
  const typo = (prefix: string) =>
    `${prefix}: unknown option "x". Check for a typo, or upgrade the SDK if this option was added in a newer version.`;

  test("sqliteStore()", () => {
    const path = join(dir, "options.db");
    expect(() => sqliteStore({ path, x: 1 } as never)).toThrow(typo("sqliteStore()"));
    expect(() => sqliteStore(undefined as never)).toThrow(/sqliteStore\(\): options are required/);
    expect(() => sqliteStore({} as never)).toThrow(/path must be a file path or ":memory:"/);
    expect(() => sqliteStore({ path: "" })).toThrow(/path must be a file path/);
    expect(() => sqliteStore({ path: 5 } as never)).toThrow(/path must be a file path/);
    expect(() => sqliteStore({ path, synchronous: "off" } as never)).toThrow(
      /synchronous must be one of "normal", "full", received "off"/,
    );
    expect(() => sqliteStore("file.db" as never)).toThrow(/options must be an object/);
    expect(() => sqliteStore({ path, x: 1 } as never)).toThrow(ConfigurationError);
  });

  test("postgresStore()", () => {
    const url = "postgres://postgres@127.0.0.1:1/postgres";
    expect(() => postgresStore({ connectionString: url, x: 1 } as never)).toThrow(
      typo("postgresStore()"),
    );
    expect(() => postgresStore(undefined as never)).toThrow(/options are required/);
    expect(() => postgresStore({})).toThrow(
      /exactly one of connectionString and pool, received neither/,
    );
    const pool = { query: async () => ({ rows: [], rowCount: 0 }), connect: async () => ({}) };
    expect(() => postgresStore({ connectionString: url, pool: pool as never })).toThrow(
      /exactly one of connectionString and pool, received both/,
    );
    expect(() => postgresStore({ connectionString: "" })).toThrow(
      /connectionString must be a non-empty string/,
    );
    expect(() => postgresStore({ pool: {} as never })).toThrow(/pool must be a pg\.Pool/);
    for (const schema of ["", "s".repeat(64), "nul\u0000", 5]) {
      expect(() => postgresStore({ connectionString: url, schema: schema as string })).toThrow(
        /schema must be a schema name of 1-63 characters/,
      );
    }
  });
});
