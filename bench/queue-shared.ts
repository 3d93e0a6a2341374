/**
 * What the queue benchmark's parent (queue.ts) and its processes (queue-child.ts) share: the
 * agent's name, the prompt that tags a run for the mock server, a clock, the messages on the
 * child's stdin and stdout, and a pg pool that counts the store's round trips.
 */
import pg from "pg";
import { PROMPT } from "./http-workload.ts";

export const AGENT = "bench";
/** Each run's prompt names it, so the mock server knows which run a model call belongs to. */
export const promptOf = (tag: string) => `run ${tag}: ${PROMPT}`;
export const tagOf = (prompt: string) => /^run (\S+):/.exec(prompt)?.[1];
/** A clock every process of the machine shares: ms since the epoch, sub-ms. */
export const epoch = () => performance.timeOrigin + performance.now();

export interface QueueTask {
  mode: "worker" | "plain";
  url: string;
  bossSchema: string;
  storeSchema: string;
  modelUrl: string;
  concurrency: number;
  /** dist/'s URL, ending in "/". */
  dist: string;
}

/** A child's figures, cumulative since it started. */
export interface QueueStats {
  /** Executions running now (a worker's; 0 in the baseline). */
  running: number;
  cpuMs: number;
  queries: number;
  queryMs: number;
  waitMs: number;
}

/**
 * Baseline runs, one per tag, `concurrency` at a time: all handed over at once when
 * `concurrency` > 1 (the batch), one after the other otherwise (runs into an idle process).
 */
export interface Batch {
  tags: string[];
  concurrency: number;
}

export interface BatchDone {
  /** When each run was handed over (`epoch()`): the baseline's "enqueued". */
  starts: number[];
  /** When the last run ended. */
  end: number;
}

// ---------------------------------------------------------------- the counting pool

/**
 * `postgresStore({ pool })` gets the wrapper: every query of the store, and of skein/pgboss's
 * tables beside it (runs, events, workers, leases), goes through it and is counted.
 */

export interface PoolCounts {
  /** Round trips: queries, on the pool or on a client taken from it (a transaction's each). */
  queries: number;
  /** Their wall time, ms: from sending to the answer, on a connection already held. */
  ms: number;
  /** Time spent waiting for a connection of the pool (10, pg's default), ms. */
  waitMs: number;
}

type Query = (text: string, values?: unknown[]) => Promise<any>;

export function countingPool(url: string): {
  pool: { query: Query; connect(): Promise<any> };
  counts: PoolCounts;
  end(): Promise<void>;
} {
  const real = new pg.Pool({ connectionString: url });
  // A connection the server drops (the bench stops it) must not crash the process.
  real.on("error", () => {});
  const counts: PoolCounts = { queries: 0, ms: 0, waitMs: 0 };
  const timed = async <T>(query: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await query();
    } finally {
      counts.queries++;
      counts.ms += performance.now() - started;
    }
  };
  const connection = async () => {
    const started = performance.now();
    const client = await real.connect();
    counts.waitMs += performance.now() - started;
    return client;
  };
  const clients = new WeakMap<object, object>();
  return {
    pool: {
      // As pg's pool.query does it: a connection, the query, the connection back.
      async query(text, values) {
        const client = await connection();
        try {
          const result = await timed(() => client.query(text, values));
          client.release();
          return result;
        } catch (error) {
          client.release(error as Error);
          throw error;
        }
      },
      async connect() {
        const client = await connection();
        // The client's own methods (release, on("notification"), ...) bound to it; query counted.
        let wrapped = clients.get(client);
        if (!wrapped) {
          const query: Query = (text, values) => timed(() => client.query(text, values));
          wrapped = new Proxy(client, {
            get(target, key) {
              if (key === "query") return query;
              const value = Reflect.get(target, key, target);
              return typeof value === "function" ? value.bind(target) : value;
            },
          });
          clients.set(client, wrapped);
        }
        return wrapped;
      },
    },
    counts,
    end: () => real.end(),
  };
}
