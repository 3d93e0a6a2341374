// postgresStore() beyond the shared contract: schemas, an app's pool, an unreachable server.
import pg from "pg";
import { SessionStoreError } from "skein";
import { postgresStore } from "skein/postgres";
import { afterAll, beforeAll, expect, test } from "vitest";
import { useThrowawayPostgres } from "../support/postgres.ts";
import { closedPort } from "../support/servers.ts";

const postgres = useThrowawayPostgres();
let admin: pg.Pool;
beforeAll(() => {
  admin = new pg.Pool({ connectionString: postgres().url });
});
// After hooks run last registered first: the pool ends before the server stops.
afterAll(() => admin?.end(), 60_000);

const exists = async (relation: string) =>
  (await admin.query("SELECT to_regclass($1) IS NOT NULL AS found", [relation])).rows[0].found;

test("tables are created on first use, in public by default", async () => {
  expect(await exists("public.skein_sessions")).toBe(false);
  const store = postgresStore({ connectionString: postgres().url });
  expect(await exists("public.skein_sessions")).toBe(false); // nothing at construction
  await store.append("s", 1, ["a"]);
  expect(await exists("public.skein_sessions")).toBe(true);
  expect(await exists("public.skein_entries")).toBe(true);
  await store.close();
});

test("a schema that does not exist is created, whatever its name", async () => {
  const schema = 'Mixed Case "quoted" ; DROP';
  const store = postgresStore({ connectionString: postgres().url, schema });
  await store.append("s", 1, ["in the odd schema"]);
  const { rows } = await admin.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
  expect(rows).toHaveLength(1);
  const other = postgresStore({ connectionString: postgres().url, schema: "elsewhere" });
  expect(await other.read("s")).toEqual([]);
  expect(await store.read("s")).toEqual([{ seq: 1, data: "in the odd schema" }]);
  await store.close();
  await other.close();
});

test("close() leaves a pool the app passed open; the store is closed", async () => {
  const pool = new pg.Pool({ connectionString: postgres().url });
  try {
    const store = postgresStore({ pool, schema: "app_pool" });
    await store.append("s", 1, ["a"]);
    await store.close();
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM app_pool.skein_entries")).rows,
    ).toEqual([{ n: 1 }]);
    await expect(store.read("s")).rejects.toBeInstanceOf(SessionStoreError);
    // A second store on the same pool works as the first did.
    const again = postgresStore({ pool, schema: "app_pool" });
    expect(await again.read("s")).toEqual([{ seq: 1, data: "a" }]);
    await again.close();
  } finally {
    await pool.end();
  }
});

test("two stores racing to create one schema's tables both succeed", async () => {
  const stores = Array.from({ length: 4 }, () =>
    postgresStore({ connectionString: postgres().url, schema: "setup_race" }),
  );
  await Promise.all(stores.map((store, index) => store.append(`s${index}`, 1, ["a"])));
  expect((await stores[0]!.list()).map((info) => info.sessionId).sort()).toEqual([
    "s0",
    "s1",
    "s2",
    "s3",
  ]);
  await Promise.all(stores.map((store) => store.close()));
});

test("an unreachable server: SessionStoreError with the cause, every time, and no crash", async () => {
  const port = await closedPort();
  const store = postgresStore({
    connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`,
  });
  for (const call of [
    () => store.append("s", 1, ["a"]),
    () => store.read("s"),
    () => store.list(),
  ]) {
    await expect(call()).rejects.toSatisfy(
      (error: unknown) =>
        error instanceof SessionStoreError &&
        /postgresStore\.\w+\(\) failed: .*ECONNREFUSED/.test(error.message) &&
        error.cause !== undefined,
    );
  }
  await store.close();
});

test("a role that may not create anything uses tables that exist, and is told when they do not", async () => {
  const owner = postgresStore({ connectionString: postgres().url, schema: "shared" });
  await owner.append("by-owner", 1, ["a"]);
  await owner.close();
  await admin.query("CREATE ROLE limited LOGIN");
  await admin.query("GRANT USAGE ON SCHEMA shared TO limited");
  await admin.query(
    "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA shared TO limited",
  );
  await admin.query("GRANT USAGE ON ALL SEQUENCES IN SCHEMA shared TO limited");
  const url = postgres().url.replace("postgres@", "limited@");

  const limited = postgresStore({ connectionString: url, schema: "shared" });
  await limited.append("by-limited", 1, ["b", "c"]);
  expect((await limited.list()).map((info) => info.sessionId)).toEqual(["by-limited", "by-owner"]);
  expect(await limited.delete("by-owner")).toBe(true);
  await limited.close();

  const elsewhere = postgresStore({ connectionString: url, schema: "not_created" });
  await expect(elsewhere.append("s", 1, ["a"])).rejects.toSatisfy(
    (error: unknown) =>
      error instanceof SessionStoreError &&
      /append\(\) failed: permission denied/.test(error.message),
  );
  await elsewhere.close();
});
