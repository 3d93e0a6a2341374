// The session store contract (design/sessions.md): an append-only log of opaque strings per session.

/**
 * An append-only log of opaque strings per session, with an expected-seq check on every append.
 * Entries are kept byte for byte (any Unicode but NUL, at least 16 MiB each) and never parsed.
 */
export interface SessionStore {
  /**
   * Writes `entries` numbered `seq, seq+1, ...` only when `seq` is the session's last seq + 1
   * (1 for a session not yet stored); otherwise rejects with `SessionConflictError` and writes
   * nothing. All-or-nothing, and durable once it resolves.
   */
  append(sessionId: string, seq: number, entries: readonly string[]): Promise<void>;
  /** The entries with `seq > after` (default 0) in seq order; `[]` for an unknown session. */
  read(sessionId: string, options?: { after?: number }): Promise<{ seq: number; data: string }[]>;
  /** Every session, by latest append, newest first (ties broken by a store-wide counter). */
  list(): Promise<SessionInfo[]>;
  /** Removes the session and its entries; `false` when there was none. The id can be reused from seq 1. */
  delete(sessionId: string): Promise<boolean>;
  /** Releases what the store opened (never a pool the app passed in). */
  close(): Promise<void>;
  /**
   * Optional (the Postgres store has them): a lease that lets one owner at a time work on a
   * session, across processes. skein/pgboss takes one per job execution.
   */
  lease?(sessionId: string, owner: string, ttlMs: number): Promise<LeaseOutcome>;
  /** Extends `owner`'s lease by `ttlMs` from now; `false` when it is no longer `owner`'s. */
  renew?(sessionId: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Ends `owner`'s lease (nothing when another owner holds it). */
  release?(sessionId: string, owner: string): Promise<void>;
}

/**
 * `lease()`: taken (the session was free, its lease expired, or `owner` held it already), or held
 * by another owner for `expiresInMs` more (by the store's clock).
 */
export type LeaseOutcome =
  | { acquired: true }
  | { acquired: false; owner: string; expiresInMs: number };

/** One stored session, as `list()` reports it. Times are epoch milliseconds. */
export interface SessionInfo {
  sessionId: string;
  createdAt: number;
  updatedAt: number;
  lastSeq: number;
}
