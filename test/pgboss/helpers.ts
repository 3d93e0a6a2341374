// Helpers of the skein/pgboss tests: worker processes, the mock model they share (in this
// process, so requests are counted across processes), the effect tables, and the checks of
// record on what the runs left behind.
import { fileURLToPath } from "node:url";
import pg from "pg";
import PgBoss from "pg-boss";
import type { Message, SDKResultMessage, SessionStore } from "skein";
import { postgresStore } from "skein/postgres";
import { type MockServer, type MockTurn, mockServer } from "skein/testing";
import { afterAll, afterEach, expect } from "vitest";
import { type Child, runChild } from "../support/children.ts";
import { LIVENESS_MS } from "../support/liveness.ts";
import { type ThrowawayPostgres, useThrowawayPostgres } from "../support/postgres.ts";
import { expectValidTranscript, resultsById, resultText, toolUseIds } from "../support/results.ts";
import type { WorkerTask } from "./children/worker-child.ts";

const CHILDREN = fileURLToPath(new URL("children", import.meta.url));

// ---------------------------------------------------------------------------------------------
// Child processes

const children = new Set<Child>();

/** Kills every child still running: call it in afterEach (and afterAll). */
export async function killChildren(): Promise<void> {
  await Promise.all([...children].map((child) => child.kill()));
}

/** Registers the cleanup of the file's children. */
export function useChildren(): void {
  afterEach(killChildren, 30_000);
  afterAll(killChildren, 30_000);
}

/** Runs `test/pgboss/children/<script>` from source (through tsx), with one JSON argument. */
export function spawnChild(script: string, argument: unknown, name = script): Child {
  const child = runChild(CHILDREN, script, argument, { name, withinMs: LIVENESS_MS });
  children.add(child);
  child.exited.finally(() => children.delete(child)).catch(() => {});
  return child;
}

// ---------------------------------------------------------------------------------------------
// Worker processes

export interface WorkerChild extends Child {
  /** The worker's id, once it printed "ready". */
  id: string;
  /** Asks the worker to stop (worker.stop({ timeoutMs })); the process stays until killed. */
  stop(timeoutMs: number): Promise<void>;
}

/** Starts a worker process and waits until it takes jobs (unless it waits for "go"). */
export async function startWorker(task: WorkerTask): Promise<WorkerChild> {
  const child = spawnWorker(task);
  if (!task.waitForGo) await child.ready;
  return child.worker;
}

export function spawnWorker(task: WorkerTask): { worker: WorkerChild; ready: Promise<void> } {
  const child = spawnChild("worker-child.ts", task, task.name) as WorkerChild;
  child.id = "";
  child.stop = async (timeoutMs) => {
    child.send(`stop ${timeoutMs}`);
    await child.line("stopped ", timeoutMs + LIVENESS_MS);
  };
  const ready = child
    .until(
      (lines) => lines.some((line) => line.startsWith("ready ") || line.startsWith("failed ")),
      '"ready"',
      LIVENESS_MS * 2,
    )
    .then(() => {
      const failed = child.lines.find((line) => line.startsWith("failed "));
      if (failed) throw new Error(`${task.name}: ${failed}\n${child.stderr.slice(-3000)}`);
      child.id = child.lines.find((line) => line.startsWith("ready "))!.slice(6);
    });
  return { worker: child, ready };
}

/** The call ids a child printed with `prefix` ("ran", "looked", "violation", ...). */
export function printed(child: Child, prefix: string): string[] {
  return child.lines
    .filter((line) => line.startsWith(`${prefix} `))
    .map((line) => line.slice(prefix.length + 1));
}

// ---------------------------------------------------------------------------------------------
// The database: one scenario's schemas, its effect tables, its pg-boss and store in this process

export interface Scenario {
  name: string;
  url: string;
  bossSchema: string;
  storeSchema: string;
  /** This process's pg-boss (started), for enqueueRun, resumeRun, cancelRun and raw jobs. */
  boss: PgBoss;
  /** This process's store on the scenario's schema, for waitForRun and followRun. */
  store: SessionStore;
  /** The scenario's worker task fields: url, schemas, the model. */
  base(model: QueueModel): Pick<WorkerTask, "url" | "bossSchema" | "storeSchema" | "modelUrl">;
  /** Rows of the effect tables: call ids, one row per execution. */
  effects(): Promise<string[]>;
  lookups(): Promise<string[]>;
  violations(): Promise<string[]>;
  /** Errors pg-boss reported in this process (a restarted server's lost connections). */
  bossErrors: Error[];
  close(): Promise<void>;
}

const scenarios = new Set<Scenario>();

/** Closes the scenarios still open: call it in afterEach. */
export async function closeScenarios(): Promise<void> {
  await Promise.all([...scenarios].map((scenario) => scenario.close()));
}

/**
 * A fresh scenario on the server: its own pg-boss schema and store schema (so queues are fresh),
 * the effect tables in the store schema, and a started pg-boss and a store in this process.
 */
export async function openScenario(url: string, name: string): Promise<Scenario> {
  const bossSchema = `boss_${name}`;
  const storeSchema = `store_${name}`;
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  admin.on("error", () => {});
  const s = `"${storeSchema}"`;
  await admin.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
  // One row per execution; a second execution of a non-idempotent call violates the key, and is
  // recorded in violations.
  await admin.query(
    `CREATE TABLE IF NOT EXISTS ${s}.effects (call_id text PRIMARY KEY, session_id text NOT NULL, worker text NOT NULL)`,
  );
  await admin.query(
    `CREATE TABLE IF NOT EXISTS ${s}.lookups (n serial PRIMARY KEY, call_id text NOT NULL, session_id text NOT NULL, worker text NOT NULL)`,
  );
  await admin.query(
    `CREATE TABLE IF NOT EXISTS ${s}.violations (n serial PRIMARY KEY, call_id text NOT NULL, session_id text NOT NULL, worker text NOT NULL)`,
  );
  const bossErrors: Error[] = [];
  const boss = new PgBoss({
    connectionString: url,
    schema: bossSchema,
    maintenanceIntervalSeconds: 1,
    max: 4,
  });
  boss.on("error", (error) => bossErrors.push(error));
  await boss.start();
  const store = postgresStore({ connectionString: url, schema: storeSchema });
  const column = async (table: string) =>
    (await admin.query(`SELECT call_id FROM ${s}.${table} ORDER BY call_id`)).rows.map(
      (row) => row.call_id as string,
    );
  let closed: Promise<void> | undefined;
  const scenario: Scenario = {
    name,
    url,
    bossSchema,
    storeSchema,
    boss,
    store,
    base: (model) => ({ url, bossSchema, storeSchema, modelUrl: model.server.url }),
    effects: () => column("effects"),
    lookups: () => column("lookups"),
    violations: () => column("violations"),
    bossErrors,
    close() {
      closed ??= (async () => {
        scenarios.delete(scenario);
        // pg-boss keeps sockets open for seconds after stop: its pool is not waited for.
        const late = async (step: Promise<unknown>) => {
          let timer: NodeJS.Timeout | undefined;
          const outcome = await Promise.race([
            step.then(
              () => false,
              () => false,
            ),
            new Promise<boolean>((resolve) => {
              timer = setTimeout(() => resolve(true), 10_000);
            }),
          ]);
          clearTimeout(timer);
          return outcome;
        };
        await late(boss.stop({ graceful: false, wait: false, close: true }));
        // The store's close() ends its pool, which waits for every client checked out: one that
        // never ends is a connection skein leaked (a test that passed leaves none).
        const storeLate = await late(store.close());
        await late(admin.end());
        if (storeLate)
          throw new Error(
            `scenario ${name}: the store's close() did not end within 10 s: a connection of its pool is still checked out`,
          );
      })();
      return closed;
    },
  };
  scenarios.add(scenario);
  return scenario;
}

// ---------------------------------------------------------------------------------------------
// A file of worker-process tests

// Short expiries so recovery happens within seconds: a dead worker's job is handed out again
// after its expiry (plus a maintenance interval and the retry delay), its lease after leaseMs.
export const JOB_OPTIONS = {
  expireInSeconds: 4,
  retryDelay: 1,
  retryBackoff: false,
  retryLimit: 50,
};
export const LEASE_MS = 3_000;

export interface WorkerTestSetUp {
  scenario: Scenario;
  model: QueueModel;
  /** The worker task fields every worker of the scenario shares (the agents are the test's). */
  workerBase: Pick<
    WorkerTask,
    "url" | "bossSchema" | "storeSchema" | "modelUrl" | "leaseMs" | "pollingIntervalMs"
  >;
}

/**
 * The set-up of a file whose tests run worker processes: a throwaway Postgres with room for
 * several workers' pools, the file's children killed and its models and scenarios closed after
 * each test. `setUpScenario(name)` opens a scenario and a model that reads its store.
 */
export function useWorkerTests(): {
  postgres: () => ThrowawayPostgres;
  setUpScenario(name: string): Promise<WorkerTestSetUp>;
} {
  const postgres = useThrowawayPostgres({ maxConnections: 300 });
  useChildren();
  const models: QueueModel[] = [];
  afterEach(async () => {
    await Promise.all(models.splice(0).map((model) => model.close()));
    await closeScenarios();
  }, 120_000);
  return {
    postgres,
    async setUpScenario(name) {
      const scenario = await openScenario(postgres().url, name);
      const model = await startQueueModel(() => scenario.store);
      models.push(model);
      const workerBase = { ...scenario.base(model), leaseMs: LEASE_MS, pollingIntervalMs: 500 };
      return { scenario, model, workerBase };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The mock model every worker talks to

/** What the model answers in one conversation, by the prompt's tag ("run <tag>"). */
export type Plan = (tag: string, turn: number) => MockTurn;

/**
 * The default conversation: a batch of two calls (charge, not idempotent; lookup, idempotent),
 * then one charge alone, then the final text `done <tag>`. Call ids name the tag and turn, so
 * they are unique across runs.
 */
export const shopPlan: Plan = (tag, turn) => {
  if (turn === 0)
    return {
      toolCalls: [
        { id: callId(tag, 0, "charge"), name: "charge", input: { target: `${tag}-a` } },
        { id: callId(tag, 0, "lookup"), name: "lookup", input: { target: `${tag}-b` } },
      ],
    };
  if (turn === 1)
    return {
      toolCalls: [{ id: callId(tag, 1, "charge"), name: "charge", input: { target: `${tag}-c` } }],
    };
  if (turn === 2) return { text: `done ${tag}` };
  throw new Error(`the shop plan has no turn ${turn} (run ${tag})`);
};

/** One charge, then `done <tag>`. */
export const oneChargePlan: Plan = (tag, turn) => {
  if (turn === 0)
    return {
      toolCalls: [{ id: callId(tag, 0, "charge"), name: "charge", input: { target: `${tag}-a` } }],
    };
  if (turn === 1) return { text: `done ${tag}` };
  throw new Error(`the one-charge plan has no turn ${turn} (run ${tag})`);
};

/** A handoff to `to` (prompt "run <tag>-recv"), then `sent <tag>`. */
export const handoffPlan =
  (to: string): Plan =>
  (tag, turn) => {
    if (turn === 0)
      return {
        toolCalls: [
          {
            id: callId(tag, 0, "delegate"),
            name: "delegate",
            input: { agent: to, prompt: `run ${tag}-recv`, mode: "handoff" },
          },
        ],
      };
    if (turn === 1) return { text: `sent ${tag}` };
    throw new Error(`the handoff plan has no turn ${turn} (run ${tag})`);
  };

export const callId = (tag: string, turn: number, tool: string) =>
  `toolu_${tag.replaceAll("-", "_")}_t${turn}_${tool}`;

export interface ModelRequestRecord {
  tag: string;
  turn: number;
  worker: string;
  /** 1 for the first request of this conversation's turn, then 2, ... (across processes). */
  attempt: number;
}

export interface QueueModel {
  server: MockServer;
  /** Every model call, in arrival order. */
  requests: ModelRequestRecord[];
  /** Plays `plan` for the conversations whose tag matches `tags` (others: shopPlan). */
  define(tags: RegExp, plan: Plan): void;
  /**
   * The first request for (tag, turn) is accepted and never answered; resolves with the worker
   * that sent it, once it has arrived.
   */
  hold(tag: string, turn: number): Promise<ModelRequestRecord>;
  /** Resolves once a request for (tag, turn) has arrived. */
  arrived(tag: string, turn: number): Promise<ModelRequestRecord>;
  /**
   * Requests for a turn whose reply was already logged complete in the session (a reply
   * requested again): must stay empty. Checked on every repeated request, against the log.
   */
  replayedLoggedReplies: string[];
  /** Requests the mock refused (a transcript the real API would refuse): must stay empty. */
  refused(): unknown[];
  /** The requests for each (tag, turn), keyed `tag/turn`. */
  counts(): Map<string, ModelRequestRecord[]>;
  close(): Promise<void>;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((block: { type?: string; text?: string }) => block.text ?? "").join("");
}

export function tagOf(messages: { role: string; content: unknown }[]): string | undefined {
  const first = messages.find((message) => message.role === "user");
  return /\brun ([A-Za-z0-9_-]+)/.exec(textOf(first?.content))?.[1];
}

/**
 * A mock Anthropic server whose script follows each conversation's plan by its tag. `store` is
 * the scenario's store, read to check that a repeated request never asks again for a reply the
 * log already holds.
 */
export async function startQueueModel(store: () => SessionStore): Promise<QueueModel> {
  const requests: ModelRequestRecord[] = [];
  const plans: [RegExp, Plan][] = [];
  const holds = new Map<string, (record: ModelRequestRecord) => void>();
  const arrivals = new Map<string, ((record: ModelRequestRecord) => void)[]>();
  const replayed: string[] = [];
  const sessions = new Map<string, string>();

  /** The session of a conversation, found by its first input's tag. */
  async function sessionOf(tag: string): Promise<string | undefined> {
    if (sessions.has(tag)) return sessions.get(tag);
    for (const info of await store().list()) {
      if ([...sessions.values()].includes(info.sessionId)) continue;
      for (const row of await store().read(info.sessionId)) {
        const entry = JSON.parse(row.data) as { type: string; message?: Message };
        if (entry.type !== "input" || !entry.message) continue;
        const found = tagOf([entry.message as { role: string; content: unknown }]);
        if (found) sessions.set(found, info.sessionId);
        break;
      }
    }
    return sessions.get(tag);
  }

  /** Complete replies logged in the conversation's session now. */
  async function repliesLogged(tag: string): Promise<number> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        const sessionId = await sessionOf(tag);
        if (sessionId === undefined) return 0;
        return (await store().read(sessionId)).filter(
          (row) => (JSON.parse(row.data) as { type: string }).type === "reply",
        ).length;
      } catch (error) {
        // The server may be restarting: the check waits for it.
        if (attempt >= 120) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  const server = await mockServer({
    script: async ({ body, headers, index }) => {
      const tag = tagOf(body.messages);
      if (tag === undefined) throw new Error("a request whose first message names no run tag");
      const key = `${tag}/${index}`;
      const attempt = requests.filter((r) => r.tag === tag && r.turn === index).length + 1;
      const record: ModelRequestRecord = {
        tag,
        turn: index,
        worker: headers["x-worker"] ?? "?",
        attempt,
      };
      requests.push(record);
      for (const resolve of arrivals.get(key) ?? []) resolve(record);
      arrivals.delete(key);
      if (attempt > 1) {
        const logged = await repliesLogged(tag);
        if (logged > index)
          replayed.push(
            `${key} requested by ${record.worker} (attempt ${attempt}) with ${logged} replies already logged`,
          );
      }
      const hold = holds.get(key);
      if (hold && attempt === 1) {
        holds.delete(key);
        hold(record);
        return { hang: true };
      }
      const plan = plans.find(([tags]) => tags.test(tag))?.[1] ?? shopPlan;
      return plan(tag, index);
    },
  });
  const calls = () => server.requests.filter((request) => request.path.startsWith("/v1/messages"));
  return {
    server,
    requests,
    define(tags, plan) {
      plans.unshift([tags, plan]);
    },
    hold(tag, turn) {
      return new Promise((resolve) => holds.set(`${tag}/${turn}`, resolve));
    },
    arrived(tag, turn) {
      const seen = requests.find((r) => r.tag === tag && r.turn === turn);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => {
        const key = `${tag}/${turn}`;
        arrivals.set(key, [...(arrivals.get(key) ?? []), resolve]);
      });
    },
    replayedLoggedReplies: replayed,
    refused: () => calls().filter((request) => request.turn === undefined),
    counts() {
      const byKey = new Map<string, ModelRequestRecord[]>();
      for (const record of requests) {
        const key = `${record.tag}/${record.turn}`;
        byKey.set(key, [...(byKey.get(key) ?? []), record]);
      }
      return byKey;
    },
    close: () => server.close(),
  };
}

// ---------------------------------------------------------------------------------------------
// Checks of record

/** The text of every tool_result answering `id` in a transcript. */
export function answersTo(messages: Message[], id: string): { text: string; isError: boolean }[] {
  return (resultsById(messages).get(id) ?? []).map((block) => ({
    text: resultText(block),
    isError: block.is_error === true,
  }));
}

/** Every tool_use id of a transcript. */
export function callIdsOf(messages: Message[]): string[] {
  return messages.flatMap((message) => (message.role === "assistant" ? toolUseIds(message) : []));
}

/**
 * The check of record for one finished run of the shop plan: success with its final text, the
 * prompt once, three replies, every tool_use answered exactly once in call order; each charge
 * either ran once (its effect row is there, one only) and answered "charged", or was interrupted
 * while it ran and answered "outcome unknown" (never run again).
 */
export function expectShopRun(
  result: SDKResultMessage,
  tag: string,
  effects: Map<string, number>,
): { unknown: string[] } {
  expect(result.subtype, `${tag}: ${JSON.stringify(result.error ?? result.result)}`).toBe(
    "success",
  );
  expect(result.result).toBe(`done ${tag}`);
  const messages = result.messages;
  expectValidTranscript(messages);
  const prompts = messages.filter(
    (message) => message.role === "user" && textOf(message.content) === `run ${tag}`,
  );
  expect(prompts, `${tag}: the prompt is in the transcript once`).toHaveLength(1);
  expect(
    messages.filter((message) => message.role === "assistant"),
    `${tag}: three replies`,
  ).toHaveLength(3);
  const ids = [callId(tag, 0, "charge"), callId(tag, 0, "lookup"), callId(tag, 1, "charge")];
  expect(callIdsOf(messages)).toEqual(ids);
  const unknown: string[] = [];
  for (const id of ids) {
    const answers = answersTo(messages, id);
    expect(answers, `${id} is answered once`).toHaveLength(1);
    const [answer] = answers;
    if (id.endsWith("charge")) {
      expect(effects.get(id) ?? 0, `${id}: side effects`).toBeLessThanOrEqual(1);
      if (answer!.isError) {
        expect(answer!.text, `${id}: an error result other than "outcome unknown"`).toMatch(
          /outcome unknown/,
        );
        unknown.push(id);
      } else {
        expect(answer!.text).toMatch(/^charged /);
        expect(effects.get(id), `${id} answered "charged": its effect happened once`).toBe(1);
      }
    } else {
      expect(answer, `${id} (idempotent) ends answered, not unknown`).toEqual({
        text: expect.stringMatching(/^found /),
        isError: false,
      });
    }
  }
  return { unknown };
}

/** Counts of a list of ids. */
export function countsOf(ids: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}
