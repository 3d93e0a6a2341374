// The queue's LISTEN connection (board.ts): one per pool, shared by every watcher of the process.

import type { PostgresPool } from "../sessions/postgres.ts";

/** A connection that receives notifications (a pool's client: a `pg.Client`). */
export interface ListeningClient {
  query(text: string): Promise<unknown>;
  on(
    event: "notification",
    listener: (message: { channel: string; payload?: string }) => void,
  ): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
  release(destroy?: boolean): void;
}

/**
 * One LISTEN connection per pool, shared by every listener of the process, opened on first use
 * and closed when the last listener leaves. A broken connection is reopened after a pause;
 * listeners also poll, so a notification missed meanwhile only delays them.
 */
export function sharedListener(pool: PostgresPool) {
  const listeners = new Map<string, Set<(payload: string) => void>>();
  let client: ListeningClient | undefined;
  let opening: Promise<void> | undefined;
  let retry: NodeJS.Timeout | undefined;

  const open = () => {
    if (client || opening || listeners.size === 0) return;
    opening = (async () => {
      const connected = (await pool.connect()) as unknown as ListeningClient;
      connected.on("error", () => drop(connected));
      connected.on("notification", ({ channel, payload }) => {
        for (const callback of listeners.get(channel) ?? [])
          try {
            callback(payload ?? "");
          } catch {
            // a listener's failure must not reach the connection's emitter (and end the process)
          }
      });
      try {
        for (const channel of listeners.keys()) await connected.query(`LISTEN ${channel}`);
      } catch (error) {
        // Lost while opening (drop() ignores a connection not yet ours): destroy it, or the pool
        // keeps it checked out for ever and the store's close() never ends.
        connected.release(true);
        throw error;
      }
      client = connected;
    })()
      .catch(() => {
        retry ??= setTimeout(() => {
          retry = undefined;
          open();
        }, 1_000);
        retry.unref();
      })
      .finally(() => {
        opening = undefined;
        if (client && listeners.size === 0) close();
      });
  };
  const drop = (broken: ListeningClient) => {
    if (client !== broken) return;
    client = undefined;
    broken.release(true);
    open();
  };
  const close = () => {
    const open = client;
    client = undefined;
    open?.release(true);
  };
  return {
    add(channel: string, callback: (payload: string) => void): () => void {
      let set = listeners.get(channel);
      if (!set) {
        set = new Set();
        listeners.set(channel, set);
        const current = client;
        current?.query(`LISTEN ${channel}`).catch(() => drop(current));
      }
      set.add(callback);
      open();
      return () => {
        set.delete(callback);
        if (set.size === 0) listeners.delete(channel);
        if (listeners.size === 0) close();
      };
    },
  };
}
