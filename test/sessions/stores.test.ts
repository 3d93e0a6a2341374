// The session store contract, run against all three stores: memory, SQLite files, a real Postgres.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { memoryStore } from "skein";
import { postgresStore } from "skein/postgres";
import { sqliteStore } from "skein/sqlite";
import { sessionStoreConformance } from "skein/testing";
import { afterAll, beforeAll, describe, test } from "vitest";
import { startPostgres, type ThrowawayPostgres } from "../support/postgres.ts";
import { openOn } from "./helpers.ts";

// The 16 MiB case moves the entry through a driver and back: give it room on a busy machine.
const CASE_TIMEOUT_MS = 60_000;

describe("memoryStore() passes sessionStoreConformance", () => {
  // One memory store cannot have a second object: the race runs on one object.
  const cases = sessionStoreConformance((options) => options?.sameAs ?? memoryStore());
  for (const c of cases) test(c.name, c.run, CASE_TIMEOUT_MS);
});

describe("sqliteStore() on real files passes sessionStoreConformance", () => {
  const dir = mkdtempSync(join(tmpdir(), "skein-sqlite-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
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
  let server: ThrowawayPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres();
    console.log(
      `throwaway Postgres: initdb ${server.timings.initdbMs} ms, start ${server.timings.startMs} ms`,
    );
  }, 120_000);
  afterAll(() => server?.stop(), 60_000);
  let schemas = 0;
  // Each store gets its own schema (created by the store on first use); sameAs shares it.
  const open = openOn(
    () => `conformance_${++schemas}`,
    (schema) => postgresStore({ connectionString: server!.url, schema }),
  );
  for (const c of sessionStoreConformance(open)) test(c.name, c.run, CASE_TIMEOUT_MS);
});
