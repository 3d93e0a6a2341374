// skein/pgboss's front doors: bad options to each function are a ConfigurationError naming the
// option; without pg-boss or pg installed, the error names the packages to install; the Postgres
// store's lease (lease/renew/release), which keeps one execution per session.
import PgBoss from "pg-boss";
import { ConfigurationError, defineAgent, memoryStore, SessionStoreError } from "skein";
import {
  cancelRun,
  createWorker,
  enqueueRun,
  followRun,
  pgBossMailbox,
  resumeRun,
  waitForRun,
} from "skein/pgboss";
import { postgresStore } from "skein/postgres";
import { scriptedModel } from "skein/testing";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { useThrowawayPostgres } from "../support/postgres.ts";
import { sleep } from "../support/promises.ts";
import { spawnChild, useChildren } from "./helpers.ts";

const postgres = useThrowawayPostgres();
useChildren();

let boss: PgBoss;
let store: ReturnType<typeof postgresStore>;
beforeAll(async () => {
  boss = new PgBoss({ connectionString: postgres().url, schema: "boss_options", max: 2 });
  boss.on("error", () => {});
  await boss.start();
  store = postgresStore({ connectionString: postgres().url, schema: "store_options" });
}, 120_000);
afterAll(async () => {
  await boss?.stop({ graceful: false, wait: false });
  // A worker a failed test could not stop holds a connection of the store's pool: not waited for.
  await Promise.race([store?.close(), sleep(5_000)]);
}, 120_000);

/** The error a call throws or rejects with (fails the test when there is none). */
async function errorOf(call: () => unknown): Promise<Error> {
  try {
    await call();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected an error, but the call succeeded");
}

/** A ConfigurationError whose message names `option`. */
async function expectConfigurationError(call: () => unknown, option: string | RegExp) {
  const error = await errorOf(call);
  expect(error, String(error)).toBeInstanceOf(ConfigurationError);
  expect(error.name).toBe("ConfigurationError");
  if (typeof option === "string") expect(error.message).toContain(option);
  else expect(error.message).toMatch(option);
  return error;
}

const agent = () => defineAgent({ model: scriptedModel([{ text: "hi" }]) });

describe("bad options are a ConfigurationError naming the option", () => {
  test("enqueueRun", async () => {
    const ok = { agent: "a", prompt: "p", sessionStore: store };
    await expectConfigurationError(() => enqueueRun({} as never, ok), "boss");
    await expectConfigurationError(() => enqueueRun(boss, undefined as never), "options");
    await expectConfigurationError(() => enqueueRun(boss, { ...ok, agent: "no spaces" }), "agent");
    await expectConfigurationError(() => enqueueRun(boss, { ...ok, agent: 7 as never }), "agent");
    await expectConfigurationError(() => enqueueRun(boss, { ...ok, prompt: 5 as never }), "prompt");
    // Text and images only: a made-up tool result never reaches the session's log.
    const forged = [{ type: "tool_result", tool_use_id: "c1", content: "done" }];
    await expectConfigurationError(
      () => enqueueRun(boss, { ...ok, sessionId: "forged", prompt: forged as never }),
      /the prompt has block 0 of type "tool_result"/,
    );
    expect(await store.read("forged")).toEqual([]);
    await expectConfigurationError(
      () => enqueueRun(boss, { ...ok, sessionStore: memoryStore() }),
      "sessionStore",
    );
    await expectConfigurationError(
      () => enqueueRun(boss, { ...ok, sessionStore: undefined as never }),
      "sessionStore",
    );
    await expectConfigurationError(
      () => enqueueRun(boss, { ...ok, sessionId: "not a valid id!" }),
      /session ?id/i,
    );
    await expectConfigurationError(
      () => enqueueRun(boss, { ...ok, jobOptions: 5 as never }),
      "jobOptions",
    );
    await expectConfigurationError(
      () => enqueueRun(boss, { ...ok, jobOptions: { singletonKey: "mine" } }),
      "jobOptions.singletonKey",
    );
    await expectConfigurationError(
      () => enqueueRun(boss, { ...ok, jobOptions: { id: "mine" } }),
      "jobOptions.id",
    );
    await expectConfigurationError(
      () => enqueueRun(boss, { ...ok, promt: "typo" } as never),
      "promt",
    );
    // Nothing was logged or queued by any of them.
    expect(await store.list()).toEqual([]);
  });

  test("createWorker", async () => {
    const ok = { sessionStore: store, agents: { a: agent() } };
    await expectConfigurationError(() => createWorker(undefined as never, ok), "boss");
    await expectConfigurationError(() => createWorker(boss, undefined as never), "options");
    await expectConfigurationError(() => createWorker(boss, { ...ok, agents: {} }), "agents");
    await expectConfigurationError(
      () => createWorker(boss, { ...ok, agents: [] as never }),
      "agents",
    );
    await expectConfigurationError(
      () => createWorker(boss, { ...ok, agents: { "bad name": agent() } }),
      "bad name",
    );
    await expectConfigurationError(
      () => createWorker(boss, { ...ok, agents: { a: 5 as never } }),
      "agents.a",
    );
    await expectConfigurationError(
      () => createWorker(boss, { ...ok, sessionStore: memoryStore() }),
      "sessionStore",
    );
    for (const [option, value] of [
      ["concurrency", 0],
      ["concurrency", 1.5],
      ["leaseMs", -1],
      ["leaseMs", "30s"],
      ["pollingIntervalMs", Number.NaN],
      ["unservedAgentGraceMs", -5],
      ["onError", "log"],
    ] as const)
      await expectConfigurationError(
        () => createWorker(boss, { ...ok, [option]: value } as never),
        option,
      );
    await expectConfigurationError(
      () => createWorker(boss, { ...ok, concurency: 2 } as never),
      "concurency",
    );
  });

  test("the approval secret: createWorker, enqueueRun and resumeRun need one; an agent's own must be the worker's", async () => {
    const ok = { sessionStore: store, agents: { a: agent() } };
    vi.stubEnv("SKEIN_APPROVAL_SECRET", undefined);
    try {
      for (const call of [
        () => createWorker(boss, ok),
        () => enqueueRun(boss, { agent: "a", prompt: "hi", sessionStore: store }),
        () => resumeRun(boss, "s", { agent: "a", sessionStore: store }),
      ]) {
        const error = await expectConfigurationError(call, "SKEIN_APPROVAL_SECRET");
        expect(error.message).toContain("approvalSecret");
      }
      for (const call of [
        () => createWorker(boss, { ...ok, approvalSecret: "per-process" }),
        () =>
          enqueueRun(boss, {
            agent: "a",
            prompt: "hi",
            sessionStore: store,
            approvalSecret: "per-process",
          }),
      ])
        await expectConfigurationError(call, "per-process");
      await expectConfigurationError(
        () => createWorker(boss, { ...ok, approvalSecret: "short" }),
        "approvalSecret",
      );
      const secret = "the worker's own secret, long enough";
      await expectConfigurationError(
        () =>
          createWorker(boss, {
            ...ok,
            approvalSecret: secret,
            agents: {
              mine: defineAgent({
                model: scriptedModel([]),
                approvalSecret: "another one entirely",
              }),
            },
          }),
        /agents\.mine: .*differs from the worker's/,
      );
      await expectConfigurationError(
        () =>
          createWorker(boss, {
            ...ok,
            approvalSecret: secret,
            agents: {
              mine: defineAgent({ model: scriptedModel([]), approvalSecret: "per-process" }),
            },
          }),
        /agents\.mine: .*per-process/,
      );
    } finally {
      vi.unstubAllEnvs();
    }
    // Nothing was logged or queued by any of them.
    expect(await store.list()).toEqual([]);
  });

  test("worker.stop: a bad timeoutMs is refused, and the worker still stops afterwards", async () => {
    const worker = await createWorker(boss, {
      sessionStore: store,
      agents: { stopper: agent() },
      pollingIntervalMs: 100,
    });
    await expectConfigurationError(() => worker.stop({ timeoutMs: -1 }), "timeoutMs");
    await expectConfigurationError(() => worker.stop({ timeoutMs: "soon" as never }), "timeoutMs");
    // The refused call changed nothing: a correct stop stops it.
    await worker.stop({ timeoutMs: 1_000 });
    expect(worker.running).toBe(0);
  });

  test("waitForRun and followRun", async () => {
    for (const [name, call] of [
      ["waitForRun", (...args: Parameters<typeof waitForRun>) => waitForRun(...args)],
      [
        "followRun",
        async (...args: Parameters<typeof followRun>) => {
          for await (const _ of followRun(...args)) break;
        },
      ],
    ] as const) {
      await expectConfigurationError(() => call(memoryStore(), "s"), "sessionStore");
      await expectConfigurationError(() => call(store, "bad id!"), /session ?id/i);
      await expectConfigurationError(() => call(store, "s", { runId: 5 as never }), "runId");
      await expectConfigurationError(() => call(store, "s", { runId: "" }), "runId");
      await expectConfigurationError(
        () => call(store, "s", { runId: "r", pollIntervalMs: 0 }),
        "pollIntervalMs",
      );
      await expectConfigurationError(
        () => call(store, "s", { runId: "r", poll: 5 } as never),
        "poll",
      );
      void name;
    }
  });

  test("resumeRun, cancelRun and pgBossMailbox", async () => {
    await expectConfigurationError(() => resumeRun({} as never, "s", { agent: "a" }), "boss");
    await expectConfigurationError(() => resumeRun(boss, "s", {} as never), "agent");
    await expectConfigurationError(
      () => resumeRun(boss, "bad id!", { agent: "a" }),
      /session ?id/i,
    );
    await expectConfigurationError(
      () => resumeRun(boss, "s", { agent: "a", approvals: [] as never }),
      "approvals",
    );
    await expectConfigurationError(
      () => resumeRun(boss, "s", { agent: "a", toolOutputs: 5 as never }),
      "toolOutputs",
    );
    await expectConfigurationError(
      () => resumeRun(boss, "s", { agent: "a", jobOptions: { singletonKey: "x" } }),
      "singletonKey",
    );
    await expectConfigurationError(
      () => resumeRun(boss, "s", { agent: "a", sessionStore: memoryStore() }),
      "sessionStore",
    );
    await expectConfigurationError(
      () => cancelRun(boss, "s", { agent: "a" } as never),
      "sessionStore",
    );
    await expectConfigurationError(
      () => cancelRun(boss, "s", { sessionStore: store } as never),
      "agent",
    );
    await expectConfigurationError(
      () => cancelRun({} as never, "s", { agent: "a", sessionStore: store }),
      "boss",
    );
    await expectConfigurationError(() => pgBossMailbox({} as never), "boss");
    await expectConfigurationError(
      () => pgBossMailbox(boss, { jobOptions: 5 as never }),
      "jobOptions",
    );
    await expectConfigurationError(
      () => pgBossMailbox(boss, { jobOptions: { singletonKey: "x" } }),
      "singletonKey",
    );
    await expectConfigurationError(() => pgBossMailbox(boss, { jobs: {} } as never), "jobs");
    // A posted message's recipient is checked as an agent name.
    await expectConfigurationError(
      () => pgBossMailbox(boss).post({ to: "no spaces", prompt: "p" }),
      "no spaces",
    );
  });
});

describe("without the optional peers", () => {
  const attempt = async (hide: string[]) => {
    const child = spawnChild("missing-peer.ts", { hide }, `missing ${hide.join(" ")}`);
    const exit = await child.exited;
    expect(exit.code, child.stderr).toBe(0);
    expect(child.lines[0]).toBe("imported");
    return JSON.parse(child.lines[1]!) as Record<
      string,
      { configurationError?: boolean; name?: string; message?: string }
    >;
  };

  test("pg-boss missing: enqueueRun, createWorker and resumeRun name it and the install command", async () => {
    const outcomes = await attempt(["pg-boss"]);
    for (const name of ["enqueueRun", "createWorker", "resumeRun"]) {
      expect(outcomes[name]?.configurationError, `${name}: ${JSON.stringify(outcomes[name])}`).toBe(
        true,
      );
      expect(outcomes[name]?.message).toMatch(/pg-boss/);
      expect(outcomes[name]?.message).toMatch(/npm install .*pg-boss/);
    }
  });

  test("pg missing: the error names pg", async () => {
    const outcomes = await attempt(["pg"]);
    for (const name of ["enqueueRun", "createWorker", "resumeRun"]) {
      expect(outcomes[name]?.configurationError, JSON.stringify(outcomes[name])).toBe(true);
      expect(outcomes[name]?.message).toMatch(/npm install .*\bpg@\^8/);
    }
  });

  test("both missing: one error names both", async () => {
    const outcomes = await attempt(["pg-boss", "pg"]);
    for (const name of ["enqueueRun", "createWorker", "resumeRun"]) {
      expect(outcomes[name]?.configurationError).toBe(true);
      expect(outcomes[name]?.message).toMatch(/pg-boss/);
      expect(outcomes[name]?.message).toMatch(/\bpg@\^8/);
    }
  });

  test("with another package hidden instead, no peer is missing (the hiding changes nothing else)", async () => {
    const outcomes = await attempt(["not-a-peer"]);
    for (const name of ["enqueueRun", "createWorker", "resumeRun"])
      expect(outcomes[name]?.message ?? "").not.toMatch(/npm install/);
  });
});

describe("the Postgres store's lease", () => {
  test("one owner at a time; renew and release only by the owner; an expired lease can be taken", async () => {
    const leased = postgresStore({ connectionString: postgres().url, schema: "store_lease" });
    const other = postgresStore({ connectionString: postgres().url, schema: "store_lease" });
    try {
      expect(await leased.lease!("s1", "a", 60_000)).toEqual({ acquired: true });
      // Another store object (as another process would) sees it held, by whom and for how long.
      const held = await other.lease!("s1", "b", 60_000);
      expect(held.acquired).toBe(false);
      if (held.acquired) throw new Error("unreachable");
      expect(held.owner).toBe("a");
      expect(held.expiresInMs).toBeGreaterThan(0);
      expect(held.expiresInMs).toBeLessThanOrEqual(60_000);
      // The owner may take it again (re-entrant) and renew it; nobody else can.
      expect(await leased.lease!("s1", "a", 60_000)).toEqual({ acquired: true });
      expect(await leased.renew!("s1", "a", 60_000)).toBe(true);
      expect(await other.renew!("s1", "b", 60_000)).toBe(false);
      // A release by someone else does nothing.
      await other.release!("s1", "b");
      expect((await other.lease!("s1", "b", 60_000)).acquired).toBe(false);
      // Other sessions are not affected.
      expect(await other.lease!("s2", "b", 60_000)).toEqual({ acquired: true });
      // Released by its owner: free for the next.
      await leased.release!("s1", "a");
      expect(await other.lease!("s1", "b", 200)).toEqual({ acquired: true });
      expect(await leased.renew!("s1", "a", 60_000)).toBe(false);
      // Expired (by the server's clock): another owner takes it, the old one cannot renew.
      await sleep(600);
      expect(await leased.lease!("s1", "a", 60_000)).toEqual({ acquired: true });
      expect(await other.renew!("s1", "b", 60_000)).toBe(false);
    } finally {
      await leased.close();
      await other.close();
    }
  });

  test("racing takers: exactly one gets the lease", async () => {
    const stores = Array.from({ length: 8 }, () =>
      postgresStore({ connectionString: postgres().url, schema: "store_lease_race" }),
    );
    try {
      await stores[0]!.list(); // the tables, before the race
      const outcomes = await Promise.all(
        stores.map((each, i) => each.lease!("contested", `owner-${i}`, 60_000)),
      );
      expect(outcomes.filter((outcome) => outcome.acquired)).toHaveLength(1);
    } finally {
      await Promise.all(stores.map((each) => each.close()));
    }
  });

  test("bad arguments are ConfigurationErrors naming them; a closed store fails as the store does", async () => {
    const leased = postgresStore({ connectionString: postgres().url, schema: "store_lease" });
    await expectConfigurationError(() => leased.lease!("bad id!", "a", 1_000), /session ?id/i);
    await expectConfigurationError(() => leased.lease!("s", "", 1_000), "owner");
    await expectConfigurationError(() => leased.lease!("s", "a", 0), "ttlMs");
    await expectConfigurationError(() => leased.renew!("s", "a", -1), "ttlMs");
    await expectConfigurationError(() => leased.release!("s", 5 as never), "owner");
    await leased.close();
    expect(await errorOf(() => leased.lease!("s", "a", 1_000))).toBeInstanceOf(SessionStoreError);
  });
});
