// A child process for the kill -9 recovery tests: one agent run (or resume) on a real store, with
// a real provider talking to the parent's mockServer. It reports on stdout what happened, line by
// line, so the parent can SIGKILL it at an exact point of the write-ahead log:
//   ready                   modules loaded, store open (then "go" on stdin if waitForGo)
//   logged <seq> <label>    an append resolved: it is durable (label: type, or type:callId)
//   held <label>            an append holding that entry never happens (holdAppend)
//   before <id>             beforeToolCall ran; "blocked <id>" when it then waits forever
//   ran <id>                a handler recorded its side effect; "hanging <id>" when it then waits
//   event <type[:callId]>   an event of the run's stream
//   result <json>           the run resolved;  rejected <json>: it rejected
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { anthropic, createBareAgent, google, openai, type SessionStore, tool } from "skein";
import { postgresStore } from "skein/postgres";
import { sqliteStore } from "skein/sqlite";
import { z } from "zod";
import type { ChildStore } from "../helpers.ts";

export interface AgentTask {
  store: ChildStore;
  sessionId: string;
  /** The mockServer's URL (the Anthropic base URL). */
  modelUrl: string;
  /** The protocol spoken at `modelUrl` (default Anthropic Messages). */
  provider?: "anthropic" | "openai-responses" | "gemini";
  /** A file each handler run appends `<callId> <tool>` to: the side effects, across processes. */
  effects: string;
  /** The agent's approvalSecret option; none: it reads SKEIN_APPROVAL_SECRET. */
  secret?: string;
  /** Sets (or, with null, unsets) SKEIN_APPROVAL_SECRET in this process before the agent is made. */
  envSecret?: string | null;
  action: { kind: "run"; prompt: string } | { kind: "resume"; approvals?: Record<string, boolean> };
  /** Handlers that hang after recording their side effect (killed while they run). */
  hangIn?: string[];
  /** The same, by the call's `target` (for calls whose ids skein makes: Gemini's). */
  hangOnTargets?: string[];
  /** Calls whose beforeToolCall hook never returns (the reply is logged, the call never starts). */
  hangBefore?: string[];
  /** Labels (`type` or `type:callId`) of entries whose append never happens. */
  holdAppend?: string[];
  /** `charge` asks for approval (no handler: the run pauses). */
  ask?: boolean;
  /** The tools the agent has (default both). */
  tools?: ("charge" | "lookup")[];
  /** Wait for "go" on stdin before the run: two children race from the same start. */
  waitForGo?: boolean;
  /** After the result, stay alive until killed (a paused run whose process dies). */
  stayAlive?: boolean;
}

const task = JSON.parse(process.argv[2]!) as AgentTask;
// stdout to a pipe is synchronous on Linux: a printed line was written before the next step.
const say = (line: string) => process.stdout.write(`${line}\n`);
// A pending promise alone would let the process exit: an interval keeps it waiting until killed.
const forever = () =>
  new Promise<never>(() => {
    setInterval(() => {}, 120_000);
  });

const inner: SessionStore =
  task.store.kind === "sqlite"
    ? sqliteStore({ path: task.store.path })
    : postgresStore({ connectionString: task.store.url, schema: task.store.schema });

function labelOf(text: string): string {
  try {
    const entry = JSON.parse(text) as { type?: string; callId?: string };
    return entry.callId === undefined ? String(entry.type) : `${entry.type}:${entry.callId}`;
  } catch {
    return "unparsable";
  }
}

/** The store, reporting each durable append and holding back the ones the task names. */
const store: SessionStore = {
  async append(sessionId, seq, entries) {
    const labels = entries.map(labelOf);
    const held = labels.find((label) => task.holdAppend?.includes(label));
    if (held !== undefined) {
      say(`held ${held}`);
      return forever();
    }
    await inner.append(sessionId, seq, entries);
    for (const [index, label] of labels.entries()) say(`logged ${seq + index} ${label}`);
  },
  read: (sessionId, options) => inner.read(sessionId, options),
  list: () => inner.list(),
  delete: (sessionId) => inner.delete(sessionId),
  close: () => inner.close(),
};

function sideEffect(name: string) {
  return async (input: { target: string }, ctx: { callId: string }) => {
    appendFileSync(task.effects, `${ctx.callId} ${name}\n`);
    say(`ran ${ctx.callId}`);
    if (task.hangIn?.includes(ctx.callId) || task.hangOnTargets?.includes(input.target)) {
      say(`hanging ${ctx.callId}`);
      say(`hanging target ${input.target}`);
      await forever();
    }
    return `${name} done for ${input.target}`;
  };
}

const schema = z.object({ target: z.string() });
// Calls on one target never overlap: a call behind a hanging one on its target never starts.
const sameTarget = (input: { target: string }) => [input.target];
const tools = {
  charge: tool("charge", "Charges a card (not idempotent).", schema, sideEffect("charge"), {
    isConcurrencySafe: () => true,
    resourceKeys: sameTarget,
  }),
  lookup: tool("lookup", "Looks an order up (idempotent).", schema, sideEffect("lookup"), {
    isConcurrencySafe: () => true,
    resourceKeys: sameTarget,
    idempotent: true,
  }),
};

if (task.envSecret === null) delete process.env.SKEIN_APPROVAL_SECRET;
else if (task.envSecret !== undefined) process.env.SKEIN_APPROVAL_SECRET = task.envSecret;

const model =
  task.provider === "openai-responses"
    ? openai({
        baseURL: `${task.modelUrl}/v1`,
        apiKey: "test",
        api: "responses",
        model: "gpt-5",
        maxRetries: 0,
      })
    : task.provider === "gemini"
      ? google({ baseURL: task.modelUrl, apiKey: "test", model: "gemini-3-pro", maxRetries: 0 })
      : anthropic({ baseURL: task.modelUrl, apiKey: "test", model: "mock-model", maxRetries: 0 });

const agent = createBareAgent({
  model,
  tools: (task.tools ?? ["charge", "lookup"]).map((name) => tools[name]),
  sessionStore: store,
  ...(task.secret !== undefined ? { approvalSecret: task.secret } : {}),
  toolConcurrency: { mode: "all", maxConcurrency: 8 },
  ...(task.ask ? { permissions: { ask: ["charge"] } } : {}),
  hooks: {
    beforeToolCall: async ({ callId }) => {
      say(`before ${callId}`);
      if (task.hangBefore?.includes(callId)) {
        say(`blocked ${callId}`);
        await forever();
      }
    },
  },
});

await inner.list(); // opens the database (and creates the tables) before the race starts
say("ready");
if (task.waitForGo)
  await new Promise<void>((resolve) =>
    createInterface({ input: process.stdin }).once("line", () => resolve()),
  );

try {
  const events =
    task.action.kind === "run"
      ? agent.stream(task.action.prompt, { sessionId: task.sessionId })
      : agent.resumeStream(
          { sessionId: task.sessionId },
          task.action.approvals ? { approvals: task.action.approvals } : {},
        );
  for await (const event of events) {
    if (event.type !== "result") {
      const callId = (event as { callId?: unknown }).callId;
      say(`event ${event.type}${typeof callId === "string" ? `:${callId}` : ""}`);
      continue;
    }
    const { subtype, result, numTurns, usage, error, pending, messages, checkpointId } = event;
    say(
      `result ${JSON.stringify({ subtype, result, numTurns, usage, error, pending, messages, checkpointId })}`,
    );
  }
} catch (error) {
  const { name, message, code } = error as { name: string; message: string; code?: string };
  say(`rejected ${JSON.stringify({ name, code, message })}`);
}
if (task.stayAlive) await forever();
await inner.close();
process.exit(0);
