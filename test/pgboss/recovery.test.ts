// skein/pgboss, the check of record (design/scale.md, issue 14): runs as jobs worked by real
// worker PROCESSES on a real Postgres; workers SIGKILLed mid-batch and mid-model-call, the
// database restarted under them, a handoff crossing processes. Whatever happens: every run ends,
// every non-idempotent side effect at most once, every tool_use answered exactly once, no reply
// requested again once it was logged.
import { setMaxListeners } from "node:events";
import { loadSession, type SDKResultMessage } from "skein";
import { enqueueRun, followRun, waitForRun } from "skein/pgboss";
import { describe, expect, test } from "vitest";
import { LIVENESS_MS } from "../support/liveness.ts";
import { sleep } from "../support/promises.ts";
import { expectValidTranscript } from "../support/results.ts";
import type { WorkerTask } from "./children/worker-child.ts";
import {
  answersTo,
  callId,
  countsOf,
  expectShopRun,
  handoffPlan,
  JOB_OPTIONS,
  printed,
  type QueueModel,
  type Scenario,
  shopPlan,
  startWorker,
  useWorkerTests,
  type WorkerChild,
} from "./helpers.ts";

const { postgres, setUpScenario } = useWorkerTests();

async function setUp(name: string) {
  const { scenario, model, workerBase } = await setUpScenario(name);
  const base: Omit<WorkerTask, "name"> = {
    ...workerBase,
    agents: { shop: { kind: "shop" } },
    concurrency: 3,
  };
  return { scenario, model, base };
}

async function enqueue(scenario: Scenario, agent: string, tags: string[]) {
  const runs: { tag: string; sessionId: string; runId: string; jobId: string }[] = [];
  for (const tag of tags) {
    const enqueued = await enqueueRun(scenario.boss, {
      agent,
      prompt: `run ${tag}`,
      sessionStore: scenario.store,
      jobOptions: JOB_OPTIONS,
    });
    runs.push({ tag, ...enqueued });
  }
  return runs;
}

/** Waits for every run's result, a liveness bound for all of them together. */
async function resultsOf(
  scenario: Scenario,
  runs: { tag: string; sessionId: string; runId: string }[],
  withinMs: number,
): Promise<Map<string, SDKResultMessage>> {
  const signal = AbortSignal.timeout(withinMs);
  setMaxListeners(0, signal); // one watcher per run listens to it
  const outcomes = await Promise.allSettled(
    runs.map(async (run) => {
      const result = await waitForRun(scenario.store, run.sessionId, { runId: run.runId, signal });
      return [run.tag, result] as const;
    }),
  );
  const failed = outcomes.flatMap((outcome, i) =>
    outcome.status === "rejected" ? [[runs[i]!, outcome.reason as Error] as const] : [],
  );
  if (failed.length > 0) {
    const lines = await Promise.all(
      failed.map(async ([run, error]) => {
        const session = await loadSession(scenario.store, run.sessionId).catch(() => undefined);
        return `${run.tag} (${run.sessionId}): ${error.name}: ${error.message}; session ${session?.status ?? "?"}, ${session?.messages.length ?? "?"} messages`;
      }),
    );
    throw new Error(`${failed.length} of ${runs.length} runs did not end:\n${lines.join("\n")}`);
  }
  return new Map(
    outcomes.map(
      (outcome) => (outcome as PromiseFulfilledResult<readonly [string, SDKResultMessage]>).value,
    ),
  );
}

/** What the workers said that a failing test should show. */
function diagnostics(workers: WorkerChild[]): string {
  return workers
    .map(
      (worker) =>
        `--- ${worker.name} (${worker.running ? "running" : "exited"}):\n${worker.lines
          .filter((line) => /error|failed|violation/.test(line))
          .slice(-30)
          .join("\n")}\nstderr: ${worker.stderr.slice(-1500)}`,
    )
    .join("\n");
}

/**
 * A repeated model request for a conversation's turn is legitimate only when the request before
 * it was cut short by a killed worker: a live worker never asks for the same turn twice.
 */
function expectRepeatsOnlyAfterKills(model: QueueModel, killed: Set<string>) {
  for (const [key, records] of model.counts()) {
    for (const earlier of records.slice(0, -1))
      expect(
        killed.has(earlier.worker),
        `${key} requested again after ${earlier.worker}, which was not killed, asked for it`,
      ).toBe(true);
  }
}

async function waitUntil(check: () => Promise<boolean>, withinMs = LIVENESS_MS) {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not so within ${withinMs} ms`);
    await sleep(100);
  }
}

describe("the check of record", () => {
  test("50 runs; one worker SIGKILLed mid-batch, another mid-model-call: every run ends, each side effect at most once, each call answered once, no reply requested twice", async () => {
    const { scenario, model, base } = await setUp("record");
    const tags = Array.from({ length: 50 }, (_, i) => `r${String(i).padStart(2, "0")}`);
    // Mid-batch: r03's first charge hangs in its handler after its side effect committed; its
    // lookup runs beside it in the same batch.
    const batchVictim = callId("r03", 0, "charge");
    // Mid-model-call: the first request for r35's second reply is held, never answered.
    const held = model.hold("r35", 1);
    const workers: Record<string, WorkerChild> = {};
    const killed = new Set<string>();
    const start = async (name: string) => {
      workers[name] = await startWorker({ ...base, name, hangIn: [batchVictim] });
    };
    await Promise.all([start("A"), start("B")]);
    const runs = await enqueue(scenario, "shop", tags);
    // Someone follows the run whose worker will die in its handler: the events of the execution
    // that died, then those of the one that recovered it, ending after the one result.
    const followed: string[] = [];
    const victimRun = runs.find((run) => run.tag === "r03")!;
    const following = (async () => {
      for await (const event of followRun(scenario.store, victimRun.sessionId, {
        runId: victimRun.runId,
        signal: AbortSignal.timeout(150_000),
      }))
        followed.push(
          event.type === "result" ? `result:${(event as SDKResultMessage).result}` : event.type,
        );
    })();

    // The first kill: whichever worker is inside the hanging handler, as soon as it says so.
    const hanging = await Promise.race(
      Object.values(workers).map((worker) =>
        worker.line(`hanging ${batchVictim}`, LIVENESS_MS * 2).then(() => worker),
      ),
    );
    expect(printed(hanging, "ran")).toContain(batchVictim);
    await hanging.kill();
    killed.add(hanging.name);
    await start("C");

    // The second kill: the worker whose model call is in flight.
    const holder = await held;
    const victim = workers[holder.worker]!;
    expect(victim.killed, `the held request came from ${holder.worker}, already killed`).toBe(
      false,
    );
    await victim.kill();
    killed.add(victim.name);
    await start("D");

    const results = await resultsOf(scenario, runs, 150_000);
    await following;
    expect(followed.at(-1)).toBe("result:done r03");
    expect(followed.filter((type) => type.startsWith("result"))).toHaveLength(1);
    expect(followed).toContain("tool_end");
    const effects = countsOf(await scenario.effects());
    expect(await scenario.violations(), "non-idempotent calls that ran twice").toEqual([]);
    const unknown: string[] = [];
    for (const tag of tags) unknown.push(...expectShopRun(results.get(tag)!, tag, effects).unknown);
    // The call killed inside its handler is answered "outcome unknown", never run again; its
    // idempotent neighbour in the batch is answered normally.
    expect(unknown).toContain(batchVictim);
    expect(effects.get(batchVictim)).toBe(1);
    expect(answersTo(results.get("r03")!.messages, callId("r03", 0, "lookup"))[0]!.isError).toBe(
      false,
    );
    // Every effect belongs to a call of some run; "outcome unknown" only for calls in flight in a
    // killed worker (the hanging one at least).
    const allCharges = tags.flatMap((tag) => [callId(tag, 0, "charge"), callId(tag, 1, "charge")]);
    for (const id of effects.keys()) expect(allCharges).toContain(id);
    expect(unknown.length).toBeLessThanOrEqual(2 * 3 * 2);

    // The model: the held turn was asked twice (the killed worker, then the recoverer), and no
    // turn whose reply was logged was ever asked again; every request was a valid transcript.
    const heldRequests = model.counts().get("r35/1")!;
    expect(heldRequests.map((r) => r.worker)[0]).toBe(victim.name);
    expect(heldRequests).toHaveLength(2);
    expect(model.replayedLoggedReplies).toEqual([]);
    expect(model.refused()).toEqual([]);
    expectRepeatsOnlyAfterKills(model, killed);
    // Each conversation asked for its three turns, and nothing beyond them.
    for (const tag of tags)
      for (const turn of [0, 1, 2])
        expect(model.counts().get(`${tag}/${turn}`)?.length ?? 0, `${tag}/${turn}`).toBeGreaterThan(
          0,
        );
    expect(model.requests.every((r) => r.turn <= 2)).toBe(true);
    // The surviving workers are alive: nothing the kills did crashed them.
    for (const worker of Object.values(workers))
      if (!killed.has(worker.name)) expect(worker.running, worker.stderr.slice(-2000)).toBe(true);
  }, 240_000);

  test("the database restarted while workers run: every run still ends, nothing lost, no worker crashes", async () => {
    const { scenario, model, base } = await setUp("restart");
    const tags = Array.from({ length: 20 }, (_, i) => `d${String(i).padStart(2, "0")}`);
    // Replies take a moment, so the restart finds most of the work still to do.
    model.define(/^d\d+$/, (tag, turn) => ({ ...shopPlan(tag, turn), delayMs: 150 }));
    const [a, b] = await Promise.all([
      startWorker({ ...base, name: "A", concurrency: 2 }),
      startWorker({ ...base, name: "B", concurrency: 2 }),
    ]);
    const runs = await enqueue(scenario, "shop", tags);
    // Watchers started before the restart must live through it (LISTEN/NOTIFY reconnects, or
    // polling takes over).
    const results = resultsOf(scenario, runs, 120_000);
    // Restart once the work is under way: some side effects happened, most runs are unfinished.
    await Promise.race([
      a.until((lines) => lines.filter((l) => l.startsWith("ran ")).length >= 3, "3 effects"),
      b.until((lines) => lines.filter((l) => l.startsWith("ran ")).length >= 3, "3 effects"),
    ]);
    const requestsBefore = model.requests.length;
    await postgres().restart({ mode: "immediate", downMs: 1_500 });
    // The restart came mid-way: most model calls (three per run) were still to be made.
    expect(requestsBefore).toBeLessThan(tags.length * 3 * 0.75);
    // A worker that dies fails the test at once (it must not), rather than at the liveness bound.
    const died = Promise.race([a.exited, b.exited]).then(() => "died" as const);
    const ended = await Promise.race([results, died]).catch((error: Error) => {
      throw new Error(`${error.message}\n${diagnostics([a, b])}`);
    });
    if (ended === "died") throw new Error(`a worker process died:\n${diagnostics([a, b])}`);

    const effects = countsOf(await scenario.effects());
    expect(await scenario.violations(), "non-idempotent calls that ran twice").toEqual([]);
    for (const tag of tags) {
      const result = ended.get(tag)!;
      expect(result.subtype, `${tag}: ${JSON.stringify(result.error)}`).toBe("success");
      expect(result.result).toBe(`done ${tag}`);
      expectValidTranscript(result.messages);
      const ids = [callId(tag, 0, "charge"), callId(tag, 0, "lookup"), callId(tag, 1, "charge")];
      for (const id of ids) {
        const answers = answersTo(result.messages, id);
        expect(answers, `${id} answered once`).toHaveLength(1);
        // A call may have failed while the server was away (an error result); a call answered
        // as done did its side effect, once.
        if (id.endsWith("charge") && !answers[0]!.isError) expect(effects.get(id)).toBe(1);
      }
    }
    expect(model.replayedLoggedReplies).toEqual([]);
    expect(model.refused()).toEqual([]);
    // Neither worker process died of the lost connections.
    expect(a.running, diagnostics([a])).toBe(true);
    expect(b.running, diagnostics([b])).toBe(true);
  }, 240_000);
});

describe("handoffs", () => {
  test("a handoff posted in one worker process runs in another, which serves the target", async () => {
    const { scenario, model, base } = await setUp("handoff");
    model.define(/^h\d+$/, handoffPlan("receiver"));
    const sender = await startWorker({
      ...base,
      name: "S",
      agents: { sender: { kind: "sender", to: "receiver" } },
      jobOptions: JOB_OPTIONS,
    });
    const receiver = await startWorker({
      ...base,
      name: "R",
      agents: { receiver: { kind: "shop" } },
    });
    const [run] = await enqueue(scenario, "sender", ["h1"]);
    const result = await waitForRun(scenario.store, run!.sessionId, {
      runId: run!.runId,
      signal: AbortSignal.timeout(LIVENESS_MS * 2),
    });
    expect(result.subtype, JSON.stringify(result.error)).toBe("success");
    expect(result.result).toBe("sent h1");
    const [answer] = answersTo(result.messages, callId("h1", 0, "delegate"));
    expect(answer?.isError).toBe(false);
    const messageId = /\(message ([^)]+)\)/.exec(answer!.text)?.[1];
    expect(messageId, answer!.text).toBeTruthy();

    // The handed-off task is a run of its own, in the receiver's process.
    const handed = `handoff-${messageId}`;
    await waitUntil(async () => (await loadSession(scenario.store, handed)) !== undefined);
    const delivered = await waitForRun(scenario.store, handed, {
      signal: AbortSignal.timeout(LIVENESS_MS * 2),
    });
    expect(delivered.subtype, JSON.stringify(delivered.error)).toBe("success");
    expect(delivered.result).toBe("done h1-recv");
    expect(delivered.sessionId).toBe(handed);
    const effects = countsOf(await scenario.effects());
    expectShopRun(delivered, "h1-recv", effects);
    expect(new Set(model.requests.filter((r) => r.tag === "h1-recv").map((r) => r.worker))).toEqual(
      new Set(["R"]),
    );
    expect(new Set(model.requests.filter((r) => r.tag === "h1").map((r) => r.worker))).toEqual(
      new Set(["S"]),
    );
    expect(printed(receiver, "ran").sort()).toEqual(
      [callId("h1-recv", 0, "charge"), callId("h1-recv", 1, "charge")].sort(),
    );
    expect(printed(sender, "ran")).toEqual([]);
    expect(model.refused()).toEqual([]);

    // Delivery is at-least-once: the same handoff delivered again after its run ended does
    // nothing (no model call, no side effect, nothing logged).
    const original = await scenario.boss.getJobById<object>("skein.run.receiver", messageId!);
    expect(original?.data, "the handoff's job, by its message id").toBeTruthy();
    const requestsBefore = model.requests.length;
    const logBefore = (await scenario.store.read(handed)).length;
    const again = await scenario.boss.send("skein.run.receiver", original!.data);
    expect(again).toBeTruthy();
    await waitUntil(
      async () =>
        (await scenario.boss.getJobById("skein.run.receiver", again!))?.state === "completed",
    );
    expect(model.requests.length).toBe(requestsBefore);
    expect((await scenario.store.read(handed)).length).toBe(logBefore);
    expect(countsOf(await scenario.effects())).toEqual(effects);
    expect(
      (await waitForRun(scenario.store, handed, { signal: AbortSignal.timeout(LIVENESS_MS) }))
        .result,
    ).toBe("done h1-recv");
  }, 120_000);
});
