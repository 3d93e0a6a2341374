// The SQL of postgresStore(), for one schema: setup on first use, and the statements it runs.

/** A quoted identifier ("my schema" -> "\"my schema\""). */
function identifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** The entries of an append, numbered after $2, for the session the `claim` CTE returned. */
const insertEntries = (entries: string) => `INSERT INTO ${entries} (session_id, seq, data)
      SELECT claim.session_id, $2::bigint + entry.ordinality, entry.data
      FROM claim, unnest($5::text[]) WITH ORDINALITY AS entry (data, ordinality)`;

export interface PostgresSql {
  schema: string;
  /** The relations setup creates, as `to_regclass` reads them. */
  relations: string[];
  /** Serialises setup between processes (CREATE ... IF NOT EXISTS can race). */
  lockKey: string;
  /** Whether the schema exists (`$1` its name): CREATE SCHEMA needs a privilege even when it does. */
  schemaExists: string;
  createSchema: string;
  createObjects: string[];
  appendFirst: string;
  appendNext: string;
  /**
   * An append (as `appendFirst` / `appendNext`, the same $1-$5) whose statement also runs the
   * caller's data-modifying `ctes` (which may read `claim`; their parameters from $6) and adds
   * `select` to its one row, whose `added` is the number of entries inserted.
   */
  appendAlso(first: boolean, ctes: string, select: string): string;
  lastSeq: string;
  selectEntries: string;
  selectSessions: string;
  deleteSession: string;
  takeLease: string;
  leaseHolder: string;
  renewLease: string;
  releaseLease: string;
}

export function postgresSql(schema: string): PostgresSql {
  const s = identifier(schema);
  const sessions = `${s}.skein_sessions`;
  const entries = `${s}.skein_entries`;
  const counter = `${s}.skein_sessions_touched`;
  const leases = `${s}.skein_leases`;
  const claimFirst = `
        INSERT INTO ${sessions} AS session (session_id, created_at, updated_at, last_seq, touched)
        VALUES ($1, $4, $4, $3, nextval(${literal(counter)}))
        ON CONFLICT (session_id) DO UPDATE
        SET last_seq = EXCLUDED.last_seq, updated_at = EXCLUDED.updated_at, touched = EXCLUDED.touched
        WHERE session.last_seq = $2
        RETURNING session.session_id`;
  const claimNext = `
        UPDATE ${sessions}
        SET last_seq = $3, updated_at = $4, touched = nextval(${literal(counter)})
        WHERE session_id = $1 AND last_seq = $2
        RETURNING session_id`;
  return {
    schema,
    relations: [sessions, entries, counter, leases],
    lockKey: `skein sessions setup ${schema}`,
    schemaExists: "SELECT 1 FROM pg_namespace WHERE nspname = $1",
    createSchema: `CREATE SCHEMA IF NOT EXISTS ${s}`,
    createObjects: [
      // The store-wide counter that orders list(): never the clock.
      `CREATE SEQUENCE IF NOT EXISTS ${counter}`,
      `CREATE TABLE IF NOT EXISTS ${sessions} (
        session_id text PRIMARY KEY,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        last_seq bigint NOT NULL,
        touched bigint NOT NULL
      )`,
      `CREATE INDEX IF NOT EXISTS skein_sessions_touched_index ON ${sessions} (touched)`,
      `CREATE TABLE IF NOT EXISTS ${entries} (
        session_id text NOT NULL REFERENCES ${sessions} (session_id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        data text NOT NULL,
        PRIMARY KEY (session_id, seq)
      )`,
      // One row per leased session; expiry by the server's clock, so machines' clocks never matter.
      `CREATE TABLE IF NOT EXISTS ${leases} (
        session_id text PRIMARY KEY,
        owner text NOT NULL,
        expires_at timestamptz NOT NULL
      )`,
    ],
    // An append is one statement (one round trip, its own transaction): the expected-seq claim of
    // the session row in a CTE, and the entries inserted only when the claim matched, so a
    // mismatch writes nothing and inserts no row. $1 session, $2 the expected last_seq, $3 the new
    // last_seq, $4 the time, $5 the entries. A racing writer blocks on the row (or, for a new
    // session, on the key), then sees the committed last_seq and matches nothing. The foreign key
    // is checked at the statement's end, where the new session row is visible.
    appendFirst: `WITH claim AS (${claimFirst})
      ${insertEntries(entries)}`,
    appendNext: `WITH claim AS (${claimNext})
      ${insertEntries(entries)}`,
    appendAlso: (first, ctes, select) => `WITH claim AS (${first ? claimFirst : claimNext}),
      added AS (${insertEntries(entries)} RETURNING 1),
      ${ctes}
      SELECT (SELECT count(*) FROM added)::int AS added${select ? `, ${select}` : ""}`,
    lastSeq: `SELECT last_seq FROM ${sessions} WHERE session_id = $1`,
    selectEntries: `SELECT seq, data FROM ${entries} WHERE session_id = $1 AND seq > $2 ORDER BY seq`,
    selectSessions: `SELECT session_id, created_at, updated_at, last_seq FROM ${sessions}
      WHERE last_seq > 0 ORDER BY touched DESC`,
    deleteSession: `DELETE FROM ${sessions} WHERE session_id = $1`,
    // Taken when free, expired, or already the owner's: one statement, so two takers never both win.
    takeLease: `INSERT INTO ${leases} AS lease (session_id, owner, expires_at)
      VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond')
      ON CONFLICT (session_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
      WHERE lease.owner = EXCLUDED.owner OR lease.expires_at <= clock_timestamp()
      RETURNING owner`,
    leaseHolder: `SELECT owner,
      GREATEST(0, CEIL(EXTRACT(EPOCH FROM (expires_at - clock_timestamp())) * 1000))::bigint AS expires_in
      FROM ${leases} WHERE session_id = $1`,
    renewLease: `UPDATE ${leases} SET expires_at = clock_timestamp() + $3 * interval '1 millisecond'
      WHERE session_id = $1 AND owner = $2`,
    releaseLease: `DELETE FROM ${leases} WHERE session_id = $1 AND owner = $2`,
  };
}
