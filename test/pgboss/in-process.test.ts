// skein/pgboss in this process, with pg-boss seen through a wrapper: what the worker's fetch loop
// does while idle, and what enqueueRun leaves behind when pg-boss refuses a job.
import PgBoss from "pg-boss";
import { defineAgent, loadSession, type SessionStore } from "skein";
import { createWorker, enqueueRun, type PgBossLike, waitForRun } from "skein/pgboss";
import { postgresStore } from "skein/postgres";
import { scriptedModel } from "skein/testing";
import { expect, test } from "vitest";
import { useThrowawayPostgres } from "../support/postgres.ts";
import { sleep } from "../support/promises.ts";

const postgres = useThrowawayPostgres();

/**
 * A started pg-boss and a store on the throwaway server, and the boss behind `wrap(method, call)`:
 * each method call of the boss goes through it. Both are stopped after `body`.
 */
async function withBoss(
  wrap: (
    method: string,
    call: (...args: unknown[]) => Promise<unknown>,
  ) => (...args: unknown[]) => Promise<unknown>,
  body: (boss: PgBossLike, sessionStore: SessionStore) => Promise<void>,
): Promise<void> {
  const url = postgres().url;
  const boss = new PgBoss({ connectionString: url });
  boss.on("error", () => {});
  await boss.start();
  const sessionStore = postgresStore({ connectionString: url });
  const wrapped = new Proxy(boss, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== "function" || typeof key !== "string") return value;
      return wrap(key, value.bind(target));
    },
  }) as unknown as PgBossLike;
  try {
    await body(wrapped, sessionStore);
  } finally {
    await boss.stop({ graceful: false, wait: false });
    await sessionStore.close();
  }
}

// A woken wait once left its poll timer behind, which fired later as an extra fetch and kept
// itself going: 80 fetches in these 4 s.
test("after 20 runs, each waking it, an idle worker fetches at its polling interval", async () => {
  let fetches = 0;
  const counting = (method: string, call: (...args: unknown[]) => Promise<unknown>) =>
    method === "fetch"
      ? (...args: unknown[]) => {
          fetches++;
          return call(...args);
        }
      : call;
  await withBoss(counting, async (boss, sessionStore) => {
    const echo = defineAgent({ model: scriptedModel(() => ({ text: "ok" })) });
    const worker = await createWorker(boss, {
      sessionStore,
      agents: { echo },
      pollingIntervalMs: 1_000,
    });
    try {
      // One at a time: each enqueue wakes the waiting worker early, and so does each finished run.
      for (let i = 0; i < 20; i++) {
        const { sessionId, runId } = await enqueueRun(boss, {
          agent: "echo",
          prompt: `p${i}`,
          sessionStore,
        });
        expect((await waitForRun(sessionStore, sessionId, { runId })).result).toBe("ok");
      }
      await sleep(500);
      const before = fetches;
      await sleep(4_000);
      // One queue, a poll a second: about 4 (a few more if a sweep or a late wake lands in between).
      expect(fetches - before).toBeLessThanOrEqual(8);
      expect(fetches - before).toBeGreaterThanOrEqual(1); // it does poll (a busy machine may delay one)
    } finally {
      await worker.stop();
    }
  });
}, 120_000);

test("a job pg-boss refuses: enqueueRun rejects, the logged run is ended, the session takes the next run", async () => {
  let refuse = true;
  const refusing = (method: string, call: (...args: unknown[]) => Promise<unknown>) =>
    method === "send"
      ? (...args: unknown[]) =>
          refuse ? Promise.reject(new Error("the queue is full")) : call(...args)
      : call;
  await withBoss(refusing, async (boss, sessionStore) => {
    await expect(
      enqueueRun(boss, { agent: "echo", prompt: "first", sessionStore, sessionId: "s-refused" }),
    ).rejects.toThrow("the queue is full");
    expect((await loadSession(sessionStore, "s-refused"))?.status).toBe("idle");
    refuse = false;
    const next = await enqueueRun(boss, {
      agent: "echo",
      prompt: "second",
      sessionStore,
      sessionId: "s-refused",
    });
    expect(next.jobId).toBeTruthy();
    // The refused run's watchers are not left waiting: its record says why it ended.
    const first = (await loadSession(sessionStore, "s-refused"))!.checkpoints[0]!.id;
    const refused = await waitForRun(sessionStore, "s-refused", { runId: first });
    expect(refused.error?.message).toMatch(/could not be enqueued: the queue is full/);
  });
}, 120_000);
