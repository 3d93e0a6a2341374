// A worker PROCESS for the skein/pgboss tests: its own pg-boss, its own Postgres store, and
// agents whose model is the parent's mockServer. It reports on stdout, line by line, so the
// parent can SIGKILL it at an exact point:
//   ready <workerId>          createWorker resolved: the worker takes jobs
//   ran <callId>              a non-idempotent handler's side effect committed (effects table)
//   looked <callId>           an idempotent handler ran (lookups table, repeats allowed)
//   violation <callId>        a second execution of a non-idempotent call (recorded in the table)
//   hanging <callId>          the handler now waits forever (the kill point mid-batch)
//   waiting <callId>          the handler waits for "release <callId>" on stdin; released <callId>
//   worker-error <text>       the worker's onError; boss-error <text>: pg-boss's error event
//   stopping / stopped <n>    "stop <timeoutMs>" on stdin: worker.stop() began / resolved
// Commands on stdin: "go" (with waitForGo: start the worker now), "release <callId>",
// "stop <timeoutMs>".
import { createInterface } from "node:readline";
import pg from "pg";
import PgBoss from "pg-boss";
import { anthropic, defineAgent, delegateTool, type ToolContext, tool } from "skein";
import { createWorker, pgBossMailbox, type WorkerAgents } from "skein/pgboss";
import { postgresStore } from "skein/postgres";
import { z } from "zod";

/** What each agent served is made of. */
export type AgentKind =
  /** charge (not idempotent) and lookup (idempotent), concurrency-safe on distinct targets. */
  | { kind: "shop" }
  /** The shop's tools, with charge asking for approval (no handler: the run pauses). */
  | { kind: "approver" }
  /** A delegate tool whose handoffs go to `to` through pgBossMailbox(boss). */
  | { kind: "sender"; to: string };

export interface WorkerTask {
  /** This process's name in the test: sent to the model as the `x-worker` header. */
  name: string;
  url: string;
  /** pg-boss's schema, and the schema of the skein store and of the effect tables. */
  bossSchema: string;
  storeSchema: string;
  modelUrl: string;
  agents: Record<string, AgentKind>;
  concurrency?: number;
  leaseMs?: number;
  pollingIntervalMs?: number;
  unservedAgentGraceMs?: number;
  /** Handlers that hang forever after their side effect (killed while they run). */
  hangIn?: string[];
  /**
   * Handlers that wait for "release <callId>" on stdin after their side effect ("waiting"), or
   * for their abort signal ("aborted").
   */
  gateIn?: string[];
  /** hangIn handlers end when their abort signal fires ("aborted <callId>"), instead of never. */
  honourAbort?: boolean;
  /** Wait for "go" on stdin before createWorker: two workers start from the same point. */
  waitForGo?: boolean;
  jobOptions?: Record<string, unknown>;
  /**
   * The worker's approvalSecret option; default none, so it reads SKEIN_APPROVAL_SECRET (the
   * test suite's, as the parent's enqueueRun and resumeRun do). `null`: the variable is unset too.
   */
  approvalSecret?: string | null;
}

const task = JSON.parse(process.argv[2]!) as WorkerTask;
// stdout to a pipe is synchronous on Linux: a printed line was written before the next step.
const say = (line: string) => process.stdout.write(`${line}\n`);
const forever = () =>
  new Promise<never>(() => {
    setInterval(() => {}, 120_000);
  });
const describe = (error: unknown) => {
  const { name, message, code } = error as { name?: string; message?: string; code?: string };
  return `${name ?? "Error"}${code ? `(${code})` : ""}: ${String(message ?? error).split("\n")[0]}`;
};

// Commands from the parent.
const gates = new Map<string, () => void>();
const released = new Set<string>();
let go: () => void = () => {};
const started = new Promise<void>((resolve) => {
  go = resolve;
});
let stopCommand: ((timeoutMs: number) => void) | undefined;
createInterface({ input: process.stdin }).on("line", (line) => {
  const [command, argument] = line.split(" ");
  if (command === "go") go();
  if (command === "release" && argument) {
    released.add(argument);
    gates.get(argument)?.();
  }
  if (command === "stop") stopCommand?.(Number(argument));
});

// Diagnosis only (behaviour unchanged): a pg client that emits "error" with nobody listening
// crashes the process; say where it was checked out from the pool, so a failing test names the code.
const checkedOut = new WeakMap<object, string>();
const poolPrototype = pg.Pool.prototype as unknown as { connect: (...args: unknown[]) => unknown };
const connectOriginal = poolPrototype.connect;
poolPrototype.connect = function (this: unknown, ...args: unknown[]) {
  const stack = (new Error().stack ?? "").split("\n").slice(2, 9).join(" <- ");
  const outcome = connectOriginal.apply(this, args);
  if (outcome instanceof Promise)
    outcome.then(
      (client) => checkedOut.set(client as object, stack),
      () => {},
    );
  return outcome;
};
const clientPrototype = pg.Client.prototype as unknown as {
  emit: (event: string, ...args: unknown[]) => boolean;
  listenerCount: (event: string) => number;
};
const emitOriginal = clientPrototype.emit;
clientPrototype.emit = function (this: typeof clientPrototype, event, ...args) {
  if (event === "error" && this.listenerCount("error") === 0)
    say(`unheard-client-error ${describe(args[0])} checked out at: ${checkedOut.get(this) ?? "?"}`);
  return emitOriginal.call(this, event, ...args);
};

// The side effects, in the test's tables: one row per execution of a call.
const effectsPool = new pg.Pool({ connectionString: task.url, max: 4 });
effectsPool.on("error", () => {}); // a restarted server: the next query reconnects
const table = (name: string) => `"${task.storeSchema}".${name}`;

/** A connection, waiting out a server that restarts (nothing has been sent yet: safe to retry). */
async function connect(): Promise<pg.PoolClient> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await effectsPool.connect();
    } catch (error) {
      if (attempt >= 60) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

async function record(kind: "effects" | "lookups", ctx: ToolContext): Promise<"ok" | "repeat"> {
  const client = await connect();
  // A checked-out client has no listener of the pool's: a server restart would crash the process.
  let broken = false;
  const onError = () => {
    broken = true;
  };
  client.on("error", onError);
  try {
    await client.query(
      `INSERT INTO ${table(kind)} (call_id, session_id, worker) VALUES ($1, $2, $3)`,
      [ctx.callId, ctx.sessionId, task.name],
    );
    return "ok";
  } catch (error) {
    if ((error as { code?: string }).code !== "23505") throw error;
    // A second execution of a call that must run at most once: recorded, never hidden.
    await client.query(
      `INSERT INTO ${table("violations")} (call_id, session_id, worker) VALUES ($1, $2, $3)`,
      [ctx.callId, ctx.sessionId, task.name],
    );
    return "repeat";
  } finally {
    client.removeListener("error", onError);
    client.release(broken);
  }
}

async function afterEffect(ctx: ToolContext): Promise<void> {
  if (task.hangIn?.includes(ctx.callId)) {
    say(`hanging ${ctx.callId}`);
    if (!task.honourAbort) await forever();
    await new Promise<void>((resolve) => {
      if (ctx.signal.aborted) resolve();
      ctx.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    say(`aborted ${ctx.callId}`);
    throw new Error("aborted while it ran");
  }
  if (task.gateIn?.includes(ctx.callId)) {
    say(`waiting ${ctx.callId}`);
    // Released by the parent, or ended by the run's abort (a cancel, a stop past its timeout).
    const outcome = released.has(ctx.callId)
      ? "released"
      : await new Promise<"released" | "aborted">((resolve) => {
          gates.set(ctx.callId, () => resolve("released"));
          if (ctx.signal.aborted) resolve("aborted");
          ctx.signal.addEventListener("abort", () => resolve("aborted"), { once: true });
        });
    say(`${outcome} ${ctx.callId}`);
    if (outcome === "aborted") throw new Error("aborted while it waited");
  }
}

const schema = z.object({ target: z.string() });
const tools = {
  charge: tool(
    "charge",
    "Charges a card (not idempotent).",
    schema,
    async (input, ctx) => {
      if ((await record("effects", ctx)) === "repeat") {
        say(`violation ${ctx.callId}`);
        throw new Error(`charge ${ctx.callId} ran a second time`);
      }
      say(`ran ${ctx.callId}`);
      await afterEffect(ctx);
      return `charged ${input.target}`;
    },
    { isConcurrencySafe: () => true, resourceKeys: (input) => [input.target] },
  ),
  lookup: tool(
    "lookup",
    "Looks an order up (idempotent).",
    schema,
    async (input, ctx) => {
      await record("lookups", ctx);
      say(`looked ${ctx.callId}`);
      await afterEffect(ctx);
      return `found ${input.target}`;
    },
    { isConcurrencySafe: () => true, resourceKeys: (input) => [input.target], idempotent: true },
  ),
};

const model = anthropic({
  baseURL: task.modelUrl,
  apiKey: "x",
  model: "mock-model",
  maxRetries: 0,
  headers: { "x-worker": task.name },
});
const shop = () =>
  defineAgent({
    model,
    tools: [tools.charge, tools.lookup],
    toolConcurrency: { mode: "all", maxConcurrency: 8 },
  });

const boss = new PgBoss({
  connectionString: task.url,
  schema: task.bossSchema,
  maintenanceIntervalSeconds: 1,
  max: 4,
});
boss.on("error", (error) => say(`boss-error ${describe(error)}`));

function agentOf(spec: AgentKind) {
  if (spec.kind === "shop") return shop();
  if (spec.kind === "approver")
    return defineAgent({
      model,
      tools: [tools.charge, tools.lookup],
      permissions: { ask: ["charge"] },
    });
  return defineAgent({
    model,
    tools: [
      delegateTool(
        { [spec.to]: shop() },
        {
          mailbox: pgBossMailbox(boss, task.jobOptions ? { jobOptions: task.jobOptions } : {}),
        },
      ),
    ],
  });
}

const agents: WorkerAgents = {};
for (const [name, spec] of Object.entries(task.agents)) agents[name] = agentOf(spec);

try {
  await boss.start();
  const sessionStore = postgresStore({ connectionString: task.url, schema: task.storeSchema });
  say("started");
  if (task.waitForGo) await started;
  if (task.approvalSecret === null) delete process.env.SKEIN_APPROVAL_SECRET;
  const worker = await createWorker(boss, {
    sessionStore,
    agents,
    ...(typeof task.approvalSecret === "string" ? { approvalSecret: task.approvalSecret } : {}),
    ...(task.concurrency !== undefined ? { concurrency: task.concurrency } : {}),
    ...(task.leaseMs !== undefined ? { leaseMs: task.leaseMs } : {}),
    ...(task.pollingIntervalMs !== undefined ? { pollingIntervalMs: task.pollingIntervalMs } : {}),
    ...(task.unservedAgentGraceMs !== undefined
      ? { unservedAgentGraceMs: task.unservedAgentGraceMs }
      : {}),
    onError: (error) => say(`worker-error ${describe(error)}`),
  });
  stopCommand = (timeoutMs) => {
    say(`stopping ${worker.running}`);
    worker.stop({ timeoutMs }).then(
      () => {
        say(`stopped ${worker.running}`);
        // pg-boss keeps sockets open for seconds after stop: the parent kills this process.
      },
      (error) => say(`stop-failed ${describe(error)}`),
    );
  };
  say(`ready ${worker.id}`);
} catch (error) {
  say(`failed ${describe(error)}`);
  process.exit(1);
}
await forever();
