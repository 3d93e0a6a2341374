// The session store contract, run against all three stores: memory, SQLite files, a real Postgres.
import { join } from "node:path";
import { memoryStore } from "skein";
import { postgresStore } from "skein/postgres";
import { sqliteStore } from "skein/sqlite";
import { sessionStoreConformance } from "skein/testing";
import { describe, test } from "vitest";
import { useThrowawayPostgres } from "../support/postgres.ts";
import { useTempDir } from "../support/temp.ts";
import { openOn } from "./helpers.ts";

// The 16 MiB case moves the entry through a driver and back: give it room on a busy machine.
const CASE_TIMEOUT_MS = 60_000;

describe("memoryStore() passes sessionStoreConformance", () => {
  // One memory store cannot have a second object: the race runs on one object.
  const cases = sessionStoreConformance((options) => options?.sameAs ?? memoryStore(), {
    leases: true,
  });
  for (const c of cases) test(c.name, c.run, CASE_TIMEOUT_MS);
});

describe("sqliteStore() on real files passes sessionStoreConformance", () => {
  const dir = useTempDir("skein-sqlite-");
  let files = 0;
  const open = openOn(
    () => join(dir, `nested/dirs/store-${++files}.db`),
    (path) => sqliteStore({ path }),
  );
  for (const c of sessionStoreConformance(open)) test(c.name, c.run, CASE_TIMEOUT_MS);
});

describe('sqliteStore({ path: ":memory:" }) passes sessionStoreConformance', () => {
  const open = (options?: { sameAs?: ReturnType<typeof sqliteStore> }) =>
    options?.sameAs ?? sqliteStore({ path: ":memory:" });
  for (const c of sessionStoreConformance(open)) test(c.name, c.run, CASE_TIMEOUT_MS);
});

describe("postgresStore() on a real server passes sessionStoreConformance", () => {
  const postgres = useThrowawayPostgres();
  let schemas = 0;
  // Each store gets its own schema (created by the store on first use); sameAs shares it.
  const open = openOn(
    () => `conformance_${++schemas}`,
    (schema) => postgresStore({ connectionString: postgres().url, schema }),
  );
  for (const c of sessionStoreConformance(open, { leases: true }))
    test(c.name, c.run, CASE_TIMEOUT_MS);
});
