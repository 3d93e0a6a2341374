// The worker's fetch loop, in this process: an idle worker polls at its interval, however many
// times enqueues and finished runs woke it before (a woken wait once left its poll timer behind,
// which fired later as an extra fetch and kept itself going).
import PgBoss from "pg-boss";
import { defineAgent } from "skein";
import { createWorker, enqueueRun, type PgBossLike, waitForRun } from "skein/pgboss";
import { postgresStore } from "skein/postgres";
import { scriptedModel } from "skein/testing";
import { expect, test } from "vitest";
import { useThrowawayPostgres } from "../support/postgres.ts";
import { sleep } from "../support/promises.ts";

const postgres = useThrowawayPostgres();

test("after 20 runs, each waking it, an idle worker fetches at its polling interval", async () => {
  const url = postgres().url;
  const boss = new PgBoss({ connectionString: url });
  boss.on("error", () => {});
  await boss.start();
  const sessionStore = postgresStore({ connectionString: url });
  let fetches = 0;
  const counted = new Proxy(boss, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key !== "fetch" || typeof value !== "function") return value;
      return (...args: unknown[]) => {
        fetches++;
        return value.apply(target, args);
      };
    },
  }) as unknown as PgBossLike;
  const echo = defineAgent({ model: scriptedModel(() => ({ text: "ok" })) });
  const worker = await createWorker(counted, {
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
    expect(fetches - before).toBeGreaterThanOrEqual(2);
  } finally {
    await worker.stop();
    await boss.stop({ graceful: false, wait: false });
    await sessionStore.close();
  }
}, 60_000);
