// A throwaway Postgres server for the tests of a file (design/sessions.md, "Throwaway Postgres for
// tests"); the server itself is ./postgres-cluster.ts.
import { afterAll, beforeAll } from "vitest";
import { startPostgres, type ThrowawayPostgres } from "./postgres-cluster.ts";

export { postgresBin, startPostgres, type ThrowawayPostgres } from "./postgres-cluster.ts";

/**
 * A throwaway Postgres for the tests of a file (or a describe block): started before them (its
 * start-up times printed), stopped after them. Returns the running server, for use in tests.
 */
export function useThrowawayPostgres(
  options: { maxConnections?: number } = {},
): () => ThrowawayPostgres {
  let server: ThrowawayPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres(options);
    const { initdbMs, startMs } = server.timings;
    console.log(`throwaway Postgres: initdb ${initdbMs} ms, start ${startMs} ms`);
  }, 120_000);
  afterAll(() => server?.stop(), 60_000);
  return () => {
    if (!server) throw new Error("the throwaway Postgres is not running (use it inside a test)");
    return server;
  };
}
