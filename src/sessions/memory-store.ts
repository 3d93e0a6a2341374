// memoryStore(): a session store that lives in the process only (OpenAI's MemorySession).
import { SessionConflictError, SessionStoreError } from "../core/errors.ts";
import type { SessionInfo, SessionStore } from "../core/session-store.ts";
import { assertLease, assertSeq, assertSessionId, checkEntries, readAfter } from "./validate.ts";

interface MemorySession {
  createdAt: number;
  updatedAt: number;
  /** The store-wide counter at its latest append: orders `list()` when the clock ties. */
  touched: number;
  entries: string[];
}

/** Stores whose sessions end with the process: their paused runs cannot outlive its seal key. */
const processLocal = new WeakSet<object>();

/** Whether `store` is a `memoryStore()`, whose runs can only be resumed in this process. */
export function isProcessLocal(store: SessionStore): boolean {
  return processLocal.has(store);
}

/**
 * A session store in memory: every method settles at once, nothing survives the process. Its
 * leases hold within the process only.
 */
export function memoryStore(): SessionStore {
  const sessions = new Map<string, MemorySession>();
  const leases = new Map<string, { owner: string; expiresAt: number }>();
  let counter = 0;
  let closed = false;

  const open = (method: string): string => {
    const prefix = `memoryStore.${method}()`;
    if (closed) throw new SessionStoreError(`${prefix}: the store is closed.`);
    return prefix;
  };

  const store: SessionStore = {
    async append(sessionId, seq, entries) {
      const prefix = open("append");
      assertSessionId(prefix, sessionId);
      assertSeq(prefix, seq);
      const batch = checkEntries(prefix, entries);
      const session = sessions.get(sessionId);
      const lastSeq = session?.entries.length ?? 0;
      if (seq !== lastSeq + 1) throw new SessionConflictError({ sessionId, seq, lastSeq });
      const now = Date.now();
      counter += 1;
      if (session) {
        for (const entry of batch) session.entries.push(entry);
        session.updatedAt = now;
        session.touched = counter;
      } else {
        sessions.set(sessionId, {
          createdAt: now,
          updatedAt: now,
          touched: counter,
          entries: batch,
        });
      }
    },

    async read(sessionId, options) {
      const prefix = open("read");
      assertSessionId(prefix, sessionId);
      const after = readAfter(prefix, options);
      const entries = sessions.get(sessionId)?.entries ?? [];
      // seq n is entries[n - 1]; a fresh array of fresh objects, so the caller owns the result.
      return entries.slice(after).map((data, index) => ({ seq: after + index + 1, data }));
    },

    async list() {
      open("list");
      return [...sessions]
        .sort(([, a], [, b]) => b.touched - a.touched)
        .map(
          ([sessionId, session]): SessionInfo => ({
            sessionId,
            createdAt: session.createdAt,
            updatedAt: session.updatedAt,
            lastSeq: session.entries.length,
          }),
        );
    },

    async delete(sessionId) {
      const prefix = open("delete");
      assertSessionId(prefix, sessionId);
      return sessions.delete(sessionId);
    },

    async lease(sessionId, owner, ttlMs) {
      assertLease(open("lease"), sessionId, owner, ttlMs);
      const now = Date.now();
      const held = leases.get(sessionId);
      if (held && held.owner !== owner && held.expiresAt > now)
        return { acquired: false, owner: held.owner, expiresInMs: held.expiresAt - now };
      leases.set(sessionId, { owner, expiresAt: now + ttlMs });
      return { acquired: true };
    },

    async renew(sessionId, owner, ttlMs) {
      assertLease(open("renew"), sessionId, owner, ttlMs);
      const held = leases.get(sessionId);
      if (held?.owner !== owner) return false;
      held.expiresAt = Date.now() + ttlMs;
      return true;
    },

    async release(sessionId, owner) {
      assertLease(open("release"), sessionId, owner);
      if (leases.get(sessionId)?.owner === owner) leases.delete(sessionId);
    },

    async close() {
      closed = true;
      sessions.clear();
      leases.clear();
    },
  };
  processLocal.add(store);
  return store;
}
