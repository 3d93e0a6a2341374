// A paused run on the queue resumes on any worker that shares the approval secret, including the
// worker that paused it, restarted; a worker started without a secret refuses to start; a job
// whose paused state fails its seal check (or that was put on the queue under another secret)
// ends once with a stored error naming SKEIN_APPROVAL_SECRET, is never retried, and waitForRun
// rejects with it instead of hanging. Real worker PROCESSES on a real Postgres.
import { loadSession, ResumeError } from "skein";
import { enqueueRun, resumeRun, waitForRun } from "skein/pgboss";
import { describe, expect, test } from "vitest";
import { LIVENESS_MS } from "../support/liveness.ts";
import { rejectionOf, sleep } from "../support/promises.ts";
import type { WorkerTask } from "./children/worker-child.ts";
import {
  answersTo,
  callId,
  JOB_OPTIONS,
  oneChargePlan,
  type Scenario,
  spawnWorker,
  startWorker,
  useWorkerTests,
} from "./helpers.ts";

const { setUpScenario } = useWorkerTests();
const within = (ms = LIVENESS_MS) => AbortSignal.timeout(ms);
const ENV = "SKEIN_APPROVAL_SECRET";
const OTHER = "a secret that only one worker has, not shared";

async function setUp(name: string) {
  const { scenario, model, workerBase } = await setUpScenario(name);
  model.define(/./, oneChargePlan);
  const approver = (extra: Partial<WorkerTask> = {}): Omit<WorkerTask, "name"> => ({
    ...workerBase,
    agents: { approver: { kind: "approver" } },
    ...extra,
  });
  return { scenario, model, approver };
}

/** Runs "run <tag>" on the queue until it pauses on its charge; returns the run and the call. */
async function pausedRun(scenario: Scenario, tag: string, approvalSecret?: string) {
  const run = await enqueueRun(scenario.boss, {
    agent: "approver",
    prompt: `run ${tag}`,
    sessionStore: scenario.store,
    jobOptions: JOB_OPTIONS,
    ...(approvalSecret ? { approvalSecret } : {}),
  });
  const paused = await waitForRun(scenario.store, run.sessionId, {
    runId: run.runId,
    signal: within(),
  });
  expect(paused.subtype, JSON.stringify(paused.error)).toBe("paused");
  return { run, charge: callId(tag, 0, "charge") };
}

/** pg-boss's jobs of a session, with their states and retries. */
async function jobsOf(scenario: Scenario, sessionId: string) {
  const pg = (await import("pg")).default;
  const pool = new pg.Pool({ connectionString: scenario.url, max: 1 });
  try {
    const { rows } = await pool.query(
      `SELECT id, state, retry_count AS "retryCount" FROM "${scenario.bossSchema}".job WHERE data->>'sessionId' = $1 ORDER BY created_on`,
      [sessionId],
    );
    return rows as { id: string; state: string; retryCount: number }[];
  } finally {
    await pool.end();
  }
}

/** Waits until every job of the session is completed (none left to retry). */
async function settledJobs(scenario: Scenario, sessionId: string) {
  const deadline = Date.now() + LIVENESS_MS;
  for (;;) {
    const jobs = await jobsOf(scenario, sessionId);
    if (jobs.length > 0 && jobs.every((job) => job.state === "completed")) return jobs;
    if (Date.now() > deadline)
      throw new Error(`the session's jobs did not settle: ${JSON.stringify(jobs)}`);
    await sleep(200);
  }
}

describe("a paused run resumes on another worker process", () => {
  test("paused on one worker, which is killed; the same worker restarted resumes it with the approval", async () => {
    const { scenario, approver } = await setUp("restart");
    const first = await startWorker({ ...approver(), name: "W1" });
    const { run, charge } = await pausedRun(scenario, "r1");
    await first.kill();

    await startWorker({ ...approver(), name: "W1-restarted" });
    const resumed = await resumeRun(scenario.boss, run.sessionId, {
      agent: "approver",
      sessionStore: scenario.store,
      approvals: { [charge]: true },
      jobOptions: JOB_OPTIONS,
    });
    const result = await waitForRun(scenario.store, run.sessionId, {
      runId: resumed.runId,
      signal: within(),
    });
    expect(result.subtype, JSON.stringify(result.error)).toBe("success");
    expect(answersTo(result.messages, charge)).toEqual([{ text: "charged r1-a", isError: false }]);
    expect(await scenario.effects()).toEqual([charge]);
  }, 120_000);

  test("a worker without a secret refuses to start, saying so", async () => {
    const { approver } = await setUp("nosecret");
    const { worker, ready } = spawnWorker({ ...approver({ approvalSecret: null }), name: "W" });
    const error = await rejectionOf(ready);
    const failed = worker.lines.find((line) => line.startsWith("failed ")) ?? "";
    expect(failed, error.message).toContain("ConfigurationError");
    expect(failed).toContain(ENV);
    expect(failed).toContain("approvalSecret");
  }, 90_000);

  test("a seal made under another secret: the resume's job ends once with a ResumeError naming the secret; the run stays paused and a worker with the right secret resumes it", async () => {
    const { scenario, approver } = await setUp("seal");
    // Paused by a worker (and enqueued by a process) sharing another secret.
    const first = await startWorker({ ...approver({ approvalSecret: OTHER }), name: "W-other" });
    const { run, charge } = await pausedRun(scenario, "s1", OTHER);
    await first.kill();

    // Resumed through a worker with the suite's secret: its seal check fails.
    const suite = await startWorker({ ...approver(), name: "W-suite" });
    const log = (await scenario.store.read(run.sessionId)).length;
    const refused = await resumeRun(scenario.boss, run.sessionId, {
      agent: "approver",
      sessionStore: scenario.store,
      approvals: { [charge]: true },
      jobOptions: JOB_OPTIONS,
    });
    const error = await rejectionOf(
      waitForRun(scenario.store, run.sessionId, { runId: refused.runId, signal: within() }),
    );
    expect(error).toBeInstanceOf(ResumeError);
    expect(error.message).toContain("does not match its seal");
    expect(error.message).toContain(ENV);
    // Ended once: its job completed without a retry, the log untouched, nothing charged.
    const jobs = await settledJobs(scenario, run.sessionId);
    const resumeJob = jobs.find((job) => job.id === refused.jobId);
    expect(resumeJob).toMatchObject({ state: "completed", retryCount: 0 });
    expect((await scenario.store.read(run.sessionId)).length).toBe(log);
    expect((await loadSession(scenario.store, run.sessionId))?.status).toBe("paused");
    expect(await scenario.effects()).toEqual([]);

    // A worker with the secret it was paused under resumes it (the other one gone, so that it
    // cannot take the job: it would refuse it, as the next test shows).
    await suite.kill();
    await startWorker({ ...approver({ approvalSecret: OTHER }), name: "W-other-again" });
    const resumed = await resumeRun(scenario.boss, run.sessionId, {
      agent: "approver",
      sessionStore: scenario.store,
      approvals: { [charge]: true },
      jobOptions: JOB_OPTIONS,
      approvalSecret: OTHER,
    });
    const result = await waitForRun(scenario.store, run.sessionId, {
      runId: resumed.runId,
      signal: within(),
    });
    expect(result.subtype, JSON.stringify(result.error)).toBe("success");
    expect(await scenario.effects()).toEqual([charge]);
  }, 150_000);

  test("a run put on the queue under another secret is refused before it runs: ended once, in the log too, waitForRun answers", async () => {
    const { scenario, model, approver } = await setUp("mismatch");
    await startWorker({ ...approver(), name: "W" });
    const run = await enqueueRun(scenario.boss, {
      agent: "approver",
      prompt: "run m1",
      sessionStore: scenario.store,
      jobOptions: JOB_OPTIONS,
      approvalSecret: OTHER,
    });
    const result = await waitForRun(scenario.store, run.sessionId, {
      runId: run.runId,
      signal: within(),
    });
    expect(result.subtype).toBe("error_during_execution");
    expect(result.result).toBe("");
    expect(result.error?.message).toContain(ENV);
    expect(model.requests).toEqual([]);
    const jobs = await settledJobs(scenario, run.sessionId);
    expect(jobs).toEqual([{ id: run.jobId, state: "completed", retryCount: 0 }]);
    // The session is not left waiting for a run that never comes: a new run may follow.
    expect((await loadSession(scenario.store, run.sessionId))?.status).toBe("idle");
  }, 90_000);
});
