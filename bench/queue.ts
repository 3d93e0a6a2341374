/**
 * `npm run bench -- queue` (design/scale.md, "Benchmark"): skein/pgboss against the same runs in
 * one process without a queue. 200 runs of three tool turns and a final answer each (four model
 * calls, four steps) against the mock server (Anthropic's provider), enqueued at once with
 * `enqueueRun` and worked by 1 and by 2 worker processes (queue-child.ts: each its own pg-boss and
 * postgresStore, `createWorker(boss, { concurrency: 8 })`, the default polling interval). The
 * baseline is one process running the same 200 runs with `agent.run` on the same store, as many
 * at a time as the workers take together (8, 16), all handed over at once. Postgres is a
 * throwaway cluster started here (postgres.ts).
 *
 * Reported, each against the baseline in the same repeat (the machine is shared: ratios hold
 * where times wander): runs/s; the time from a run's enqueue (its hand-over, in the baseline) to
 * its first model call at the mock server, median and p95, in the batch and for runs enqueued one
 * at a time (each after the last ended); and the store's cost per step: round trips through the
 * store's pool (the session log and skein/pgboss's tables beside it, the enqueuing process's
 * included), their time, and the CPU time of the Postgres cluster (pg-boss's queries included) and
 * of the working processes. Each sample starts fresh processes, warms them with 16 runs, then
 * measures.
 */
import { type ChildProcess, spawn } from "node:child_process";
import pg from "pg";
import PgBoss from "pg-boss";
import { FINAL_TEXT, toolTurnsScript } from "./http-workload.ts";
import { type BenchPostgres, startPostgres } from "./postgres.ts";
import {
  AGENT,
  type Batch,
  type BatchDone,
  countingPool,
  epoch,
  type PoolCounts,
  promptOf,
  type QueueStats,
  type QueueTask,
  tagOf,
} from "./queue-shared.ts";
import { dist, median, spread, TABLE_HEADER, testing, transpileForChild } from "./support.ts";

const { enqueueRun, waitForRun } = (await import(
  dist("pgboss/index.js")
)) as typeof import("skein/pgboss");
const { postgresStore } = (await import(
  dist("sessions/postgres.js")
)) as typeof import("skein/postgres");

const RUNS = 200;
const TOOL_TURNS = 3;
const STEPS = RUNS * (TOOL_TURNS + 1);
const CONCURRENCY = 8;
const WARMUP_RUNS = 16;
/** Runs enqueued one at a time, each after the last ended: the queue's fixed latency. */
const IDLE_RUNS = 20;
const WORKERS = [1, 2] as const;
const WAIT_MS = 180_000;

const BOSS_SCHEMA = "bench_boss";
const STORE_SCHEMA = "bench_store";

/** A sample's side: N worker processes, or the baseline at the concurrency of N workers. */
type Workers = (typeof WORKERS)[number];
type Side = `plain${Workers}` | `queue${Workers}`;
const SIDES: Side[] = WORKERS.flatMap((n) => [`plain${n}`, `queue${n}`] as const);
const workersOf = (side: Side) => Number(side.slice(5)) as Workers;
const sideName = (side: Side) =>
  side.startsWith("plain")
    ? `plain ${CONCURRENCY * workersOf(side)} at a time`
    : `${workersOf(side)} worker${workersOf(side) > 1 ? "s" : ""}`;

interface Sample {
  /** From the first hand-over to the last run's end. */
  wallMs: number;
  /** Per run of the batch: hand-over to first model call. */
  latencies: number[];
  /** The same for runs handed over one at a time into an idle process. */
  idle: number[];
  /** Over the batch: the store's round trips and their time; below, CPU time (workers, Postgres). */
  queries: number;
  queryMs: number;
  /** Waiting for a connection of the store's pool: the working processes', the enqueuing one's. */
  waitMs: number;
  enqueueWaitMs?: number;
  cpuMs: number;
  pgCpuMs: number;
  /** Queue: until every enqueueRun of the batch resolved; each idle run's enqueueRun. */
  enqueueMs?: number;
  idleEnqueueMs?: number[];
}

export async function queueBench(options = { repeats: 5, warmup: 1 }): Promise<{
  rows: string[][];
  notes: string;
}> {
  const child = transpileForChild([
    "queue-child.ts",
    "queue-shared.ts",
    "http-workload.ts",
    "weather-schema.ts",
  ]);
  const bench = await setUp();
  const out = new Map<Side, Sample[]>();
  try {
    for (let index = 0; index < options.warmup + options.repeats; index++) {
      // Rotating which goes first, so drift hits every side alike.
      for (let k = 0; k < SIDES.length; k++) {
        const side = SIDES[(index + k) % SIDES.length]!;
        const name = `${index}${side}`;
        const workers = workersOf(side);
        const sample = side.startsWith("plain")
          ? await plainSample(bench, child, name, CONCURRENCY * workers)
          : await queueSample(bench, child, workers, name);
        bench.model.forget();
        if (index < options.warmup) continue;
        out.set(side, [...(out.get(side) ?? []), sample]);
      }
    }
  } finally {
    await bench.close();
  }
  return report(out, options.repeats, bench.warnings);
}

// ---------------------------------------------------------------- set-up

interface Bench {
  postgres: BenchPostgres;
  model: { url: string; firstCall(tag: string): number; forget(): void };
  /** This process's pg-boss and store: it enqueues, as an app's web process would. */
  boss: PgBoss;
  store: import("skein").SessionStore;
  storeCounts: PoolCounts;
  /** For the bench's own reads of the runs table (not counted). */
  admin: pg.Pool;
  warnings: Set<string>;
  close(): Promise<void>;
}

async function setUp(): Promise<Bench> {
  const postgres = await startPostgres();
  const closers: (() => Promise<unknown>)[] = [() => postgres.stop()];
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      process.off("SIGINT", interrupted).off("SIGTERM", interrupted);
      await Promise.all([...live].map((child) => child.kill()));
      for (const closer of closers.reverse()) await closer().catch(() => {});
    })();
    return closed;
  };
  // Interrupted: no worker process or Postgres cluster is left running on the machine.
  const interrupted = (signal: NodeJS.Signals) => {
    close().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  };
  process.once("SIGINT", interrupted).once("SIGTERM", interrupted);
  try {
    const script = toolTurnsScript(TOOL_TURNS);
    const first = new Map<string, number>();
    const server = await testing.mockServer({
      script: ({ body, index }) => {
        if (index === 0) {
          const tag = tagOf(textOf(body.messages?.[0]?.content));
          if (tag !== undefined && !first.has(tag)) first.set(tag, epoch());
        }
        return script[index]!;
      },
    });
    closers.push(() => server.close());
    const admin = new pg.Pool({ connectionString: postgres.url, max: 2 });
    admin.on("error", () => {});
    closers.push(() => admin.end());
    const boss = new PgBoss({
      connectionString: postgres.url,
      schema: BOSS_SCHEMA,
      maintenanceIntervalSeconds: 1,
    });
    const warnings = new Set<string>();
    boss.on("error", (error) => warnings.add(`pg-boss in the bench process: ${error.message}`));
    await boss.start();
    // pg-boss keeps sockets open for a while after stop: not waited for (the server stops next).
    closers.push(() => boss.stop({ graceful: false, wait: false, close: true }));
    const counting = countingPool(postgres.url);
    closers.push(() => counting.end());
    const store = postgresStore({ pool: counting.pool, schema: STORE_SCHEMA });
    closers.push(() => store.close());
    return {
      postgres,
      model: {
        url: server.url,
        firstCall: (tag) => {
          const at = first.get(tag);
          if (at === undefined) throw new Error(`bench: run ${tag} made no model call`);
          return at;
        },
        forget: () => {
          server.requests.length = 0;
          first.clear();
        },
      },
      boss,
      store,
      storeCounts: counting.counts,
      admin,
      warnings,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((block: { text?: string }) => block.text ?? "").join("");
}

const tags = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, index) => `${prefix}-${index}`);

// ---------------------------------------------------------------- the child processes

/** Child processes still running, killed if the bench is interrupted. */
const live = new Set<Child>();

interface Child {
  /** The next line starting with `prefix` (consumed); rejects on the child's failure or exit. */
  next(prefix: string): Promise<string>;
  send(line: string): void;
  stats(): Promise<QueueStats>;
  /** SIGTERM, then SIGKILL: pg-boss keeps sockets open, so never waited on to exit by itself. */
  kill(): Promise<void>;
}

async function startChild(bench: Bench, script: string, task: QueueTask): Promise<Child> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const proc: ChildProcess = spawn(process.execPath, [script, JSON.stringify(task)], {
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  const lines: string[] = [];
  let partial = "";
  let stderr = "";
  let exited = false;
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const waiter of [...waiters]) waiter();
  };
  proc.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop()!;
    for (const line of parts) {
      // A worker's recovered errors (onError, pg-boss's error event) are reported, not fatal.
      if (line.startsWith("error worker: ") || line.startsWith("error boss: "))
        bench.warnings.add(`${task.mode} process: ${line.slice(6)}`);
      else lines.push(line);
    }
    wake();
  });
  proc.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  proc.stdin!.on("error", () => {});
  const gone = new Promise<void>((resolve) => {
    proc.on("exit", () => {
      exited = true;
      live.delete(child);
      wake();
      resolve();
    });
  });
  const next = (prefix: string) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`bench: no "${prefix}" from a ${task.mode} process in ${WAIT_MS} ms`));
      }, WAIT_MS);
      const check = () => {
        const failed = lines.find((line) => line.startsWith("error "));
        const index = lines.findIndex((line) => line.startsWith(prefix));
        if (index < 0 && !failed && !exited) return;
        waiters.delete(check);
        clearTimeout(timer);
        if (index >= 0 && !failed) resolve(lines.splice(index, 1)[0]!.slice(prefix.length));
        else
          reject(
            new Error(
              `bench: a ${task.mode} process ${failed ?? "exited"} before "${prefix}"\n${stderr.slice(-3000)}`,
            ),
          );
      };
      waiters.add(check);
      check();
    });
  const child: Child = {
    next,
    send: (line) => {
      if (!exited) proc.stdin!.write(`${line}\n`);
    },
    async stats() {
      child.send("stats");
      return JSON.parse(await next("stats ")) as QueueStats;
    },
    async kill() {
      if (exited) return;
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 1_000);
      await gone;
      clearTimeout(timer);
    },
  };
  live.add(child);
  try {
    await next("ready");
  } catch (error) {
    await child.kill();
    throw error;
  }
  return child;
}

const taskOf = (bench: Bench, mode: QueueTask["mode"]): QueueTask => ({
  mode,
  url: bench.postgres.url,
  bossSchema: BOSS_SCHEMA,
  storeSchema: STORE_SCHEMA,
  modelUrl: bench.model.url,
  concurrency: CONCURRENCY,
  dist: dist(""),
});

// ---------------------------------------------------------------- the baseline

async function plainSample(
  bench: Bench,
  script: string,
  name: string,
  concurrency: number,
): Promise<Sample> {
  const child = await startChild(bench, script, taskOf(bench, "plain"));
  try {
    const batch = async (work: Batch) => {
      child.send(`batch ${JSON.stringify(work)}`);
      return JSON.parse(await child.next("done ")) as BatchDone;
    };
    await batch({ tags: tags(`${name}w`, WARMUP_RUNS), concurrency });
    const runs = tags(name, RUNS);
    const before = { child: await child.stats(), pg: bench.postgres.cpuMs() };
    const done = await batch({ tags: runs, concurrency });
    const after = { child: await child.stats(), pg: bench.postgres.cpuMs() };
    const idleRuns = tags(`${name}i`, IDLE_RUNS);
    const idle = await batch({ tags: idleRuns, concurrency: 1 });
    const latency = (list: string[], starts: number[]) =>
      list.map((tag, index) => bench.model.firstCall(tag) - starts[index]!);
    return {
      wallMs: done.end - Math.min(...done.starts),
      latencies: latency(runs, done.starts),
      idle: latency(idleRuns, idle.starts),
      queries: after.child.queries - before.child.queries,
      queryMs: after.child.queryMs - before.child.queryMs,
      waitMs: after.child.waitMs - before.child.waitMs,
      cpuMs: after.child.cpuMs - before.child.cpuMs,
      pgCpuMs: after.pg - before.pg,
    };
  } finally {
    await child.kill();
  }
}

// ---------------------------------------------------------------- the queue

async function queueSample(
  bench: Bench,
  script: string,
  workers: number,
  name: string,
): Promise<Sample> {
  const children: Child[] = [];
  try {
    for (let index = 0; index < workers; index++)
      children.push(await startChild(bench, script, taskOf(bench, "worker")));
    const enqueue = (tag: string) =>
      enqueueRun(bench.boss, { agent: AGENT, prompt: promptOf(tag), sessionStore: bench.store });
    const warm = await Promise.all(tags(`${name}w`, WARMUP_RUNS).map(enqueue));
    await ended(
      bench,
      warm.map((run) => run.runId),
    );

    const snapshot = async () => ({
      children: await Promise.all(children.map((child) => child.stats())),
      store: { ...bench.storeCounts },
      pg: bench.postgres.cpuMs(),
    });
    const runs = tags(name, RUNS);
    const before = await snapshot();
    const start = epoch();
    const enqueued = await Promise.all(runs.map(enqueue));
    const enqueueMs = epoch() - start;
    const end = await ended(
      bench,
      enqueued.map((run) => run.runId),
    );
    // The last executions still release their lease and complete their job: counted too.
    let after = await snapshot();
    while (after.children.some((stats) => stats.running > 0)) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await snapshot();
    }

    const idleRuns = tags(`${name}i`, IDLE_RUNS);
    const idleStarts: number[] = [];
    const idleEnqueueMs: number[] = [];
    for (const tag of idleRuns) {
      idleStarts.push(epoch());
      const run = await enqueue(tag);
      idleEnqueueMs.push(epoch() - idleStarts.at(-1)!);
      const result = await waitForRun(bench.store, run.sessionId, {
        runId: run.runId,
        pollIntervalMs: 20,
      });
      if (result.subtype !== "success" || result.result !== FINAL_TEXT)
        throw new Error(
          `bench: queued run ${tag} ended with ${JSON.stringify(result).slice(0, 300)}`,
        );
    }
    const sum = (pick: (stats: QueueStats) => number) =>
      after.children.reduce(
        (total, stats, index) => total + pick(stats) - pick(before.children[index]!),
        0,
      );
    return {
      wallMs: end - start,
      latencies: runs.map((tag) => bench.model.firstCall(tag) - start),
      idle: idleRuns.map((tag, index) => bench.model.firstCall(tag) - idleStarts[index]!),
      queries: sum((stats) => stats.queries) + after.store.queries - before.store.queries,
      queryMs: sum((stats) => stats.queryMs) + after.store.ms - before.store.ms,
      waitMs: sum((stats) => stats.waitMs),
      enqueueWaitMs: after.store.waitMs - before.store.waitMs,
      cpuMs: sum((stats) => stats.cpuMs),
      pgCpuMs: after.pg - before.pg,
      enqueueMs,
      idleEnqueueMs,
    };
  } finally {
    await Promise.all(children.map((child) => child.kill()));
  }
}

/**
 * Waits until every run has ended (the runs table, polled every 100 ms on a connection of the
 * bench's own) and checks each result; resolves with the last run's end (`ended_at`, the same
 * machine's clock as `epoch()`).
 */
async function ended(bench: Bench, runIds: string[]): Promise<number> {
  const runs = `"${STORE_SCHEMA}".skein_runs`;
  const deadline = Date.now() + WAIT_MS;
  while (true) {
    const { rows } = await bench.admin.query(
      `SELECT count(*) FILTER (WHERE status NOT IN ('queued', 'running'))::int AS done
       FROM ${runs} WHERE run_id = ANY($1)`,
      [runIds],
    );
    if (rows[0].done === runIds.length) break;
    if (Date.now() > deadline)
      throw new Error(`bench: ${runIds.length - rows[0].done} queued runs did not end in time`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const { rows } = await bench.admin.query(
    `SELECT run_id, status, result, extract(epoch FROM ended_at) * 1000 AS ended
     FROM ${runs} WHERE run_id = ANY($1)`,
    [runIds],
  );
  let last = 0;
  for (const row of rows) {
    const result = JSON.parse(row.result ?? "{}") as { subtype?: string; result?: string };
    if (row.status !== "ended" || result.subtype !== "success" || result.result !== FINAL_TEXT)
      throw new Error(
        `bench: queued run ${row.run_id} ended ${row.status} with ${String(row.result).slice(0, 300)}`,
      );
    last = Math.max(last, Number(row.ended));
  }
  return last;
}

// ---------------------------------------------------------------- report

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

function report(
  out: Map<Side, Sample[]>,
  repeats: number,
  warnings: Set<string>,
): { rows: string[][]; notes: string } {
  const rows = [TABLE_HEADER];
  const fixed = (value: number, digits = 1) => value.toFixed(digits);
  const msText = (value: number) => `${fixed(value)} ms`;
  const times = ({ median, noise }: { median: number; noise: number }) =>
    `${median.toFixed(2)} x ± ${noise.toFixed(2)}`;
  const measures: {
    label: string;
    value: (sample: Sample) => number;
    text: (value: number) => string;
    /** The result as baseline / queue (runs/s: more is better) instead of queue / baseline. */
    inverse?: boolean;
  }[] = [
    {
      label: `${RUNS} runs, throughput`,
      value: (s) => (RUNS * 1000) / s.wallMs,
      text: (v) => `${fixed(v, 0)} runs/s`,
      inverse: true,
    },
    {
      label: "enqueue to first model call, median",
      value: (s) => median(s.latencies),
      text: msText,
    },
    {
      label: "enqueue to first model call, p95",
      value: (s) => percentile(s.latencies, 0.95),
      text: msText,
    },
    {
      label: `the same, ${IDLE_RUNS} runs one at a time, median`,
      value: (s) => median(s.idle),
      text: msText,
    },
    {
      label: `the same, ${IDLE_RUNS} runs one at a time, p95`,
      value: (s) => percentile(s.idle, 0.95),
      text: msText,
    },
    {
      label: "store round trips per step",
      value: (s) => s.queries / STEPS,
      text: (v) => fixed(v, 2),
    },
    { label: "store time per step", value: (s) => s.queryMs / STEPS, text: msText },
    {
      label: "Postgres CPU per step",
      value: (s) => s.pgCpuMs / STEPS,
      text: (v) => `${fixed(v, 2)} ms`,
    },
    {
      label: "CPU of the working processes per step",
      value: (s) => s.cpuMs / STEPS,
      text: (v) => `${fixed(v, 2)} ms`,
    },
  ];
  for (const workers of WORKERS) {
    const queue = out.get(`queue${workers}`)!;
    const plain = out.get(`plain${workers}`)!;
    for (const measure of measures) {
      const ratios = queue.map((sample, index) => {
        const mine = measure.value(sample);
        const base = measure.value(plain[index]!);
        return measure.inverse ? base / mine : mine / base;
      });
      rows.push([
        `queue, ${sideName(`queue${workers}`)}: ${measure.label}`,
        measure.text(median(queue.map(measure.value))),
        measure.text(median(plain.map(measure.value))),
        `${measure.inverse ? "plain / queue " : ""}${times(spread(ratios))}`,
        "",
        "",
      ]);
    }
  }
  /** "plain 8 at a time <figure>, 1 worker <figure>, ...", or the queue's sides only. */
  const each = (text: (samples: Sample[]) => string, sides = SIDES) =>
    sides.map((side) => `${sideName(side)} ${text(out.get(side)!)}`).join(", ");
  const queues = (text: (samples: Sample[]) => string) =>
    each(
      text,
      SIDES.filter((side) => side.startsWith("queue")),
    );
  const notes = [
    `Medians over ${repeats} repeats, each a fresh set of processes warmed with ${WARMUP_RUNS} runs; ratios are medians of per-repeat ratios, ± half the interquartile range.`,
    `A run: ${TOOL_TURNS} tool turns and a final answer (${TOOL_TURNS + 1} steps, one model call each); "per step" divides by ${STEPS}.`,
    `The baseline ("plain") is one process running the same runs with agent.run on the same postgresStore, as many at a time as the workers take together (${CONCURRENCY} per worker process): ${WORKERS.map((n) => `${sideName(`queue${n}`)} against ${sideName(`plain${n}`)}`).join(", ")}.`,
    "Enqueue to first model call: from the run's enqueueRun (the baseline: its hand-over, all at once) to its first request at the mock server.",
    `Enqueuing the ${RUNS} runs took ${queues((samples) => msText(median(samples.map((s) => s.enqueueMs!))))}; one at a time, enqueueRun took ${queues((samples) => msText(median(samples.flatMap((s) => s.idleEnqueueMs!))))} of it (medians), the slowest run one at a time reached its model ${each((samples) => msText(Math.max(...samples.flatMap((s) => s.idle))))}.`,
    "Store round trips and time: every query through the store's pool (session log, runs, events, leases), the enqueuing process's included, the time with a connection held (it grows with the runs in flight, as Postgres shares its CPU among them); Postgres CPU: the whole cluster, pg-boss's queries included.",
    `Waiting for one of a store pool's 10 connections, per step: ${each((samples) => msText(median(samples.map((s) => s.waitMs / STEPS))))} in the working processes, ${queues((samples) => msText(median(samples.map((s) => s.enqueueWaitMs! / STEPS))))} in the enqueuing process (${RUNS} enqueueRun calls at once).`,
  ];
  for (const warning of warnings) notes.push(`WARNING ${warning}`);
  return { rows, notes: notes.join("\n") };
}
