/**
 * One process of the queue benchmark (queue.ts), run as plain JavaScript (transpiled as W3's child
 * is): a worker (its own pg-boss and postgresStore, `createWorker(boss, { concurrency })`), or the
 * baseline (the same agent and store, its runs started with `agent.run` in this process at the
 * same concurrency, no queue). The model is Anthropic's provider against the parent's mock server;
 * the store's pool counts its round trips (queue-shared.ts).
 *
 *   node queue-child.js '<QueueTask as JSON>'
 *
 * stdout: "ready" once it works; "stats <QueueStats>" for each "stats" on stdin; the baseline also
 * "done <BatchDone>" for each "batch <Batch>". Errors: "error <text>". The parent kills it.
 */
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import { API_KEY, FINAL_TEXT, getWeather, MODEL, TOOL } from "./http-workload.ts";
import {
  AGENT,
  type Batch,
  type BatchDone,
  countingPool,
  epoch,
  promptOf,
  type QueueStats,
  type QueueTask,
} from "./queue-shared.ts";
import { weatherInput } from "./weather-schema.ts";

const task = JSON.parse(process.argv[2]!) as QueueTask;
const say = (line: string) => process.stdout.write(`${line}\n`);
const describe = (error: unknown) =>
  error instanceof Error ? `${error.name}: ${error.message.split("\n")[0]}` : String(error);

const skein = (await import(`${task.dist}index.js`)) as typeof import("skein");
const { createWorker } = (await import(
  `${task.dist}pgboss/index.js`
)) as typeof import("skein/pgboss");
const { postgresStore } = (await import(
  `${task.dist}sessions/postgres.js`
)) as typeof import("skein/postgres");

const weather = skein.tool(TOOL.name, TOOL.description, weatherInput, getWeather, {
  isConcurrencySafe: () => true,
});
const model = skein.anthropic({ baseURL: task.modelUrl, apiKey: API_KEY, model: MODEL });
const counting = countingPool(task.url);
const store = postgresStore({ pool: counting.pool, schema: task.storeSchema });
const stats = (): QueueStats => {
  const cpu = process.cpuUsage();
  return {
    running: worker?.running ?? 0,
    cpuMs: (cpu.user + cpu.system) / 1_000,
    queries: counting.counts.queries,
    queryMs: counting.counts.ms,
    waitMs: counting.counts.waitMs,
  };
};

let batch: ((work: Batch) => Promise<BatchDone>) | undefined;
let worker: import("skein/pgboss").Worker | undefined;
try {
  if (task.mode === "worker") {
    // The worker's only: the baseline's process does not load pg-boss.
    const { default: PgBoss } = await import("pg-boss");
    const boss = new PgBoss({
      connectionString: task.url,
      schema: task.bossSchema,
      maintenanceIntervalSeconds: 1,
    });
    boss.on("error", (error) => say(`error boss: ${describe(error)}`));
    await boss.start();
    worker = await createWorker(boss, {
      sessionStore: store,
      agents: { [AGENT]: skein.createBareAgent({ model, tools: [weather], maxTurns: 1_000 }) },
      concurrency: task.concurrency,
      onError: (error) => say(`error worker: ${describe(error)}`),
    });
  } else {
    const agent = skein.createBareAgent({
      model,
      tools: [weather],
      maxTurns: 1_000,
      sessionStore: store,
    });
    const one = async (tag: string) => {
      const result = await agent.run(promptOf(tag), { sessionId: randomUUID() });
      if (result.subtype !== "success" || result.result !== FINAL_TEXT)
        throw new Error(`run ${tag} ended with ${JSON.stringify(result).slice(0, 300)}`);
    };
    batch = async ({ tags, concurrency }) => {
      // All handed over at once (the batch), or each when it starts (one after the other).
      const now = epoch();
      const starts = tags.map(() => now);
      let next = 0;
      const lane = async () => {
        while (next < tags.length) {
          const index = next++;
          if (concurrency === 1) starts[index] = epoch();
          await one(tags[index]!);
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, tags.length) }, lane));
      return { starts, end: epoch() };
    };
  }
  say("ready");
} catch (error) {
  say(`error start: ${describe(error)}`);
  process.exit(1);
}

createInterface({ input: process.stdin }).on("line", (line) => {
  const space = line.indexOf(" ");
  const command = space < 0 ? line : line.slice(0, space);
  if (command === "stats") say(`stats ${JSON.stringify(stats())}`);
  if (command === "batch" && batch)
    batch(JSON.parse(line.slice(space + 1)) as Batch).then(
      (done) => say(`done ${JSON.stringify(done)}`),
      (error) => say(`error batch: ${describe(error)}`),
    );
});
