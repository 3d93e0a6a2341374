/** postgresStore(): a session store in Postgres (pg), safe across processes. @module skein/postgres */
import { ConfigurationError, SessionConflictError, SessionStoreError } from "../core/errors.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";
import type { LeaseOutcome, SessionInfo, SessionStore } from "../core/session-store.ts";
import { loadPeer, type Peer } from "./peer.ts";
import { type PostgresSql, postgresSql } from "./postgres-sql.ts";
import {
  assertLease,
  assertSeq,
  assertSessionId,
  checkEntries,
  readAfter,
  storeFailure,
} from "./validate.ts";

export type { LeaseOutcome, SessionInfo, SessionStore } from "../core/session-store.ts";

/**
 * What skein/pgboss reads from a Postgres store: its pool and schema, so the queue's tables (runs,
 * events, workers) live beside the sessions. A registered symbol: each entry is its own bundle.
 */
export const POSTGRES_STORE: unique symbol = Symbol.for("skein.postgresStore") as never;

export interface PostgresStoreInternals {
  pool: PostgresPool;
  schema: string;
  /** Resolves once the store's own tables exist. */
  ready(): Promise<void>;
  /**
   * `append`, checked and typed as it is, whose one statement also runs the caller's
   * data-modifying CTEs (skein/pgboss: the run's record, its events), parameters from $6.
   */
  appendAlso(
    sessionId: string,
    seq: number,
    entries: readonly string[],
    also: AppendAlso,
  ): Promise<void>;
}

/** What rides in an append's statement: CTEs, a column of its result, their parameters ($6 on). */
export interface AppendAlso {
  ctes: string;
  select?: string;
  values: unknown[];
}

/** What postgresStore() uses of a `pg.Pool` (a `pg.Pool` fits; so does any pool with this shape). */
export interface PostgresPool {
  query(text: string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
  connect(): Promise<PostgresPoolClient>;
}

export interface PostgresPoolClient {
  query(text: string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
  /** `release(true)` destroys the connection instead of returning it to the pool. */
  release(destroy?: boolean): void;
  /** A `pg` client's events: a lost connection is an "error" event while the client is checked out. */
  on?(event: "error", listener: (error: Error) => void): unknown;
  removeListener?(event: "error", listener: (error: Error) => void): unknown;
}

export interface PostgresStoreOptions {
  /** `postgres://user@host:port/database`; the store opens (and `close` ends) its own pool. */
  connectionString?: string | undefined;
  /** A `pg.Pool` of the app's; `close` leaves it open. */
  pool?: PostgresPool | undefined;
  /** Where the tables live (created with the schema if missing on first use). Default `public`. */
  schema?: string | undefined;
}

const PEER: Peer = { entry: "skein/postgres", name: "pg", range: "^8" };
const OPTION_KEYS: ReadonlySet<string> = new Set(["connectionString", "pool", "schema"]);

interface OwnPool extends PostgresPool {
  end(): Promise<void>;
  on(event: "error", listener: (error: Error) => void): unknown;
}

/** A session store in Postgres: each append one transaction, the seq check a conditional update. */
export function postgresStore(options: PostgresStoreOptions): SessionStore {
  const prefix = "postgresStore()";
  if (options === undefined) {
    throw new ConfigurationError(
      `${prefix}: options are required: { connectionString } or { pool }.`,
    );
  }
  assertKnownOptions(prefix, options, OPTION_KEYS);
  const { connectionString, pool, schema = "public" } = options;
  if ((connectionString === undefined) === (pool === undefined)) {
    throw new ConfigurationError(
      `${prefix}: give exactly one of connectionString and pool, received ${connectionString === undefined ? "neither" : "both"}.`,
    );
  }
  if (
    connectionString !== undefined &&
    (typeof connectionString !== "string" || !connectionString)
  ) {
    throw new ConfigurationError(
      `${prefix}: connectionString must be a non-empty string, received ${describeValue(connectionString)}.`,
    );
  }
  if (pool !== undefined && !isPool(pool)) {
    throw new ConfigurationError(
      `${prefix}: pool must be a pg.Pool (an object with query() and connect()), received ${describeValue(pool)}.`,
    );
  }
  if (
    typeof schema !== "string" ||
    schema.length < 1 ||
    schema.length > 63 ||
    schema.includes("\0")
  ) {
    throw new ConfigurationError(
      `${prefix}: schema must be a schema name of 1-63 characters, received ${describeValue(schema)}.`,
    );
  }
  let own: OwnPool | undefined;
  if (pool === undefined) {
    const pg = loadPeer<{ Pool: new (config: object) => OwnPool }>(PEER);
    own = new pg.Pool({ connectionString });
    // An idle connection that breaks (a server restart) must not crash the process: the pool
    // drops it, and the next query opens a new one or reports the failure to its caller.
    own.on("error", () => {});
  }
  return postgresSessions({ pool: pool ?? own!, own, sql: postgresSql(schema) });
}

function isPool(value: unknown): value is PostgresPool {
  const candidate = value as Partial<PostgresPool> | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.query === "function" &&
    typeof candidate.connect === "function"
  );
}

function postgresSessions(options: {
  pool: PostgresPool;
  own: OwnPool | undefined;
  sql: PostgresSql;
}): SessionStore {
  const { pool, own, sql } = options;
  let closed = false;
  let setup: Promise<void> | undefined;

  const ready = (): Promise<void> => {
    setup ??= createTables(pool, sql).catch((error) => {
      setup = undefined; // a later call tries again (the server may be back)
      throw error;
    });
    return setup;
  };

  /** Runs a method's body after setup, turning any failure into a typed error. */
  const attempt = async <T>(method: string, body: (prefix: string) => Promise<T>): Promise<T> => {
    const prefix = `postgresStore.${method}()`;
    try {
      if (closed) throw new SessionStoreError(`${prefix}: the store is closed.`);
      return await body(prefix);
    } catch (error) {
      throw storeFailure(prefix, error);
    }
  };

  const appendAlso: PostgresStoreInternals["appendAlso"] = (sessionId, seq, entries, also) =>
    attempt("append", async (prefix) => {
      assertSessionId(prefix, sessionId);
      assertSeq(prefix, seq);
      const batch = checkEntries(prefix, entries);
      await ready();
      await appendBatch({ pool, sql, sessionId, seq, batch, also });
    });
  const store: SessionStore & { [POSTGRES_STORE]: PostgresStoreInternals } = {
    [POSTGRES_STORE]: { pool, schema: sql.schema, ready, appendAlso },
    append: (sessionId, seq, entries) =>
      attempt("append", async (prefix) => {
        assertSessionId(prefix, sessionId);
        assertSeq(prefix, seq);
        const batch = checkEntries(prefix, entries);
        await ready();
        await appendBatch({ pool, sql, sessionId, seq, batch });
      }),
    read: (sessionId, readOptions) =>
      attempt("read", async (prefix) => {
        assertSessionId(prefix, sessionId);
        const after = readAfter(prefix, readOptions);
        await ready();
        const { rows } = await pool.query(sql.selectEntries, [sessionId, after]);
        return rows.map((row) => ({ seq: Number(row.seq), data: row.data as string }));
      }),
    list: () =>
      attempt("list", async () => {
        await ready();
        const { rows } = await pool.query(sql.selectSessions);
        return rows.map(
          (row): SessionInfo => ({
            sessionId: row.session_id,
            createdAt: Number(row.created_at),
            updatedAt: Number(row.updated_at),
            lastSeq: Number(row.last_seq),
          }),
        );
      }),
    delete: (sessionId) =>
      attempt("delete", async (prefix) => {
        assertSessionId(prefix, sessionId);
        await ready();
        const { rowCount } = await pool.query(sql.deleteSession, [sessionId]);
        return (rowCount ?? 0) > 0;
      }),
    lease: (sessionId, owner, ttlMs) =>
      attempt("lease", async (prefix): Promise<LeaseOutcome> => {
        assertLease(prefix, sessionId, owner, ttlMs);
        await ready();
        const taken = await pool.query(sql.takeLease, [sessionId, owner, ttlMs]);
        if (taken.rowCount === 1) return { acquired: true };
        const { rows } = await pool.query(sql.leaseHolder, [sessionId]);
        // Released between the two statements: the caller may simply try again.
        if (rows.length === 0) return { acquired: false, owner: "", expiresInMs: 0 };
        return { acquired: false, owner: rows[0].owner, expiresInMs: Number(rows[0].expires_in) };
      }),
    renew: (sessionId, owner, ttlMs) =>
      attempt("renew", async (prefix) => {
        assertLease(prefix, sessionId, owner, ttlMs);
        await ready();
        const { rowCount } = await pool.query(sql.renewLease, [sessionId, owner, ttlMs]);
        return rowCount === 1;
      }),
    release: (sessionId, owner) =>
      attempt("release", async (prefix) => {
        assertLease(prefix, sessionId, owner);
        await ready();
        await pool.query(sql.releaseLease, [sessionId, owner]);
      }),
    close: async () => {
      if (closed) return;
      closed = true;
      await own?.end();
    },
  };
  return store;
}

async function createTables(pool: PostgresPool, sql: PostgresSql): Promise<void> {
  // Most opens find the tables: then nothing is created and no CREATE privilege is needed.
  const check = `SELECT ${sql.relations.map((_, i) => `to_regclass($${i + 1}) IS NOT NULL`).join(" AND ")} AS ready`;
  if ((await pool.query(check, sql.relations)).rows[0]?.ready === true) return;
  await inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [sql.lockKey]);
    const schema = await client.query(sql.schemaExists, [sql.schema]);
    if (schema.rowCount === 0) await client.query(sql.createSchema);
    for (const statement of sql.createObjects) await client.query(statement);
  });
}

async function appendBatch(options: {
  pool: PostgresPool;
  sql: PostgresSql;
  sessionId: string;
  seq: number;
  batch: string[];
  also?: AppendAlso;
}): Promise<void> {
  const { pool, sql, sessionId, seq, batch, also } = options;
  const now = Date.now();
  const values = [sessionId, seq - 1, seq + batch.length - 1, now, batch];
  let added: number;
  if (also) {
    const text = sql.appendAlso(seq === 1, also.ctes, also.select ?? "");
    const { rows } = await pool.query(text, [...values, ...also.values]);
    added = Number(rows[0]?.added ?? 0);
  } else {
    const statement = seq === 1 ? sql.appendFirst : sql.appendNext;
    added = (await pool.query(statement, values)).rowCount ?? 0;
  }
  // Every entry is inserted, or none (the claim matched nothing: nothing was written).
  const claimed = added === batch.length;
  if (!claimed) {
    const { rows } = await pool.query(sql.lastSeq, [sessionId]);
    throw new SessionConflictError({ sessionId, seq, lastSeq: Number(rows[0]?.last_seq ?? 0) });
  }
}

/** BEGIN, body, then COMMIT when it returns true (or nothing), ROLLBACK when false or on error. */
async function inTransaction<T extends boolean | void>(
  pool: PostgresPool,
  body: (client: PostgresPoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  // A checked-out client is not the pool's to watch: a connection lost now (a server restart)
  // would be an "error" event nobody hears, which ends the process. It fails the transaction.
  const lost = () => {
    broken = true;
  };
  client.on?.("error", lost);
  try {
    await client.query("BEGIN");
    const outcome = await body(client);
    await client.query(outcome === false ? "ROLLBACK" : "COMMIT");
    return outcome;
  } catch (error) {
    try {
      await client.query("ROLLBACK");
    } catch {
      broken = true; // the connection is unusable: destroy it rather than pool it
    }
    throw error;
  } finally {
    client.removeListener?.("error", lost);
    client.release(broken);
  }
}
