// enqueueRun when the queue refuses the job: the prompt it logged does not leave the session
// waiting for a job that does not exist.
import PgBoss from "pg-boss";
import { loadSession } from "skein";
import { enqueueRun, type PgBossLike, waitForRun } from "skein/pgboss";
import { postgresStore } from "skein/postgres";
import { expect, test } from "vitest";
import { useThrowawayPostgres } from "../support/postgres.ts";

const postgres = useThrowawayPostgres();

test("a job pg-boss refuses: enqueueRun rejects, the logged run is ended, the session takes the next run", async () => {
  const url = postgres().url;
  const boss = new PgBoss({ connectionString: url });
  boss.on("error", () => {});
  await boss.start();
  const sessionStore = postgresStore({ connectionString: url });
  let refuse = true;
  const flaky = new Proxy(boss, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      if (key === "send" && refuse)
        return async () => {
          throw new Error("the queue is full");
        };
      return value.bind(target);
    },
  }) as unknown as PgBossLike;
  try {
    await expect(
      enqueueRun(flaky, { agent: "echo", prompt: "first", sessionStore, sessionId: "s-refused" }),
    ).rejects.toThrow("the queue is full");
    const session = await loadSession(sessionStore, "s-refused");
    expect(session?.status).toBe("idle");
    refuse = false;
    const next = await enqueueRun(flaky, {
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
  } finally {
    await boss.stop({ graceful: false, wait: false });
    await sessionStore.close();
  }
}, 60_000);
