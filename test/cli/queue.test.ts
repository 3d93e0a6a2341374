/**
 * `skein worker`, `skein enqueue` and `skein sessions --database-url` as users run them: the built
 * command, as separate processes, against a throwaway Postgres (a database of its own per test)
 * and a mock model server in this process. The agents modules are test/cli/fixtures/queue-*.mjs,
 * which import "skein" as an app does.
 */
import { join } from "node:path";
import pg from "pg";
import { waitForRun } from "skein/pgboss";
import { postgresStore } from "skein/postgres";
import { type MockServer, type MockTurn, mockServer } from "skein/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LIVENESS_MS } from "../support/liveness.ts";
import { useThrowawayPostgres } from "../support/postgres.ts";
import { sleep } from "../support/promises.ts";
import { type CliProcess, ensureBuilt, lines, ROOT, startCli } from "./helpers.ts";

const FIXTURES = join(ROOT, "test/cli/fixtures");
const TIMEOUT = LIVENESS_MS * 4;

const postgres = useThrowawayPostgres();
beforeAll(ensureBuilt, 180_000);

// ---------------------------------------------------------------------------------------------
// The model: answers by the conversation's first prompt

interface Gate {
  arrived: Promise<void>;
  release(): void;
}
const gates = new Map<string, Gate & { arrive(): void; released: Promise<void> }>();

/** A prompt starting "hold" is answered only once the test releases it. */
function gate(prompt: string) {
  let entry = gates.get(prompt);
  if (!entry) {
    let arrive!: () => void;
    let release!: () => void;
    const arrived = new Promise<void>((resolve) => (arrive = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    entry = { arrived, arrive, released, release };
    gates.set(prompt, entry);
  }
  return entry;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((block: { text?: string }) => block.text ?? "").join("");
}

let model: MockServer;
beforeAll(async () => {
  model = await mockServer({
    script: async ({ body, index }): Promise<MockTurn> => {
      const first = body.messages.find((message: { role: string }) => message.role === "user");
      const prompt = textOf(first?.content);
      const last = textOf(body.messages.at(-1)?.content);
      if (prompt.startsWith("hold")) {
        const held = gate(prompt);
        held.arrive();
        await held.released;
        return { text: `released: ${prompt}` };
      }
      if (prompt.startsWith("fail")) return { status: 400, error: { message: "no, not this" } };
      if (prompt.startsWith("write")) {
        if (index === 0)
          return {
            toolCalls: [
              {
                id: "toolu_handoff_1",
                name: "delegate",
                input: { agent: "helper", prompt: "help with the draft", mode: "handoff" },
              },
            ],
          };
        return { text: "handed off" };
      }
      if (prompt.startsWith("help")) return { text: "helped" };
      // The answer names the latest prompt and the turn, so a continued session shows it.
      return { text: `echo (${body.messages.length} messages): ${last}` };
    },
  });
});
afterAll(() => model?.close());

// ---------------------------------------------------------------------------------------------
// Processes and databases

const started = new Set<CliProcess>();
afterEach(async () => {
  for (const held of gates.values()) held.release();
  gates.clear();
  for (const cli of started) if (cli.child.exitCode === null) cli.child.kill("SIGKILL");
  await Promise.all([...started].map((cli) => cli.exited.catch(() => {})));
  started.clear();
});

let databases = 0;
/** A database of its own on the throwaway server: its URL. */
async function freshDatabase(): Promise<string> {
  const name = `cli_${++databases}`;
  const admin = new pg.Client({ connectionString: postgres().url });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return postgres().url.replace(/\/postgres$/, `/${name}`);
}

function skein(args: string[], env: Record<string, string> = {}): CliProcess {
  const cli = startCli(args, {
    built: true,
    cwd: FIXTURES,
    // One approval secret for the workers and the enqueuers, as a deployment sets it.
    env: {
      MOCK_MODEL_URL: model.url,
      SKEIN_APPROVAL_SECRET: "the queue tests' shared secret",
      ...env,
    },
  });
  started.add(cli);
  return cli;
}

async function startWorker(url: string, agents: string, extra: string[] = []): Promise<CliProcess> {
  const worker = skein(["worker", "--database-url", url, "--agents", agents, ...extra]);
  await worker.waitFor("stdout", " ready: ");
  return worker;
}

/** `skein enqueue --database-url <url> --agent <agent> [...options] <prompt>`. */
function enqueue(url: string, agent: string, prompt: string, options: string[] = []): CliProcess {
  return skein(["enqueue", "--database-url", url, "--agent", agent, ...options, prompt]);
}

async function sessionsJson(url: string): Promise<Record<string, any>[]> {
  const listed = await skein(["sessions", "--database-url", url, "--json"]).exited;
  expect(listed.stderr).toBe("");
  expect(listed.code).toBe(0);
  return lines(listed.stdout).map((line) => JSON.parse(line));
}

/** The outcome of a run, waited for through a store of this process. */
async function resultOf(url: string, sessionId: string, runId: string) {
  const store = postgresStore({ connectionString: url });
  try {
    return await waitForRun(store, sessionId, { runId });
  } finally {
    await store.close();
  }
}

/** The session and run ids `skein enqueue` printed ("session <id>", "run <id>"). */
function idsOf(text: string): { sessionId: string; runId: string } {
  const sessionId = /^session (\S+)$/m.exec(text)?.[1];
  const runId = /^run (\S+)$/m.exec(text)?.[1];
  if (!sessionId || !runId) throw new Error(`no session and run ids in: ${text}`);
  return { sessionId, runId };
}

// ---------------------------------------------------------------------------------------------

describe("skein worker, enqueue and sessions against one database", () => {
  it(
    "a worker serves runs enqueued with --wait; sessions --database-url lists them; SIGTERM stops it (exit 0)",
    async () => {
      const url = await freshDatabase();
      const worker = await startWorker(url, "./queue-agents.mjs", ["--concurrency", "2"]);
      expect(lines(worker.stdout)).toEqual([
        expect.stringMatching(
          new RegExp(
            `^worker worker-[0-9a-f-]{36} ready: agents echo; concurrency 2; database ${url.replaceAll(".", "\\.")}$`,
          ),
        ),
      ]);

      const first = await enqueue(url, "echo", "say hello", ["--wait"]).exited;
      expect(first.stderr).toMatch(/^session \S+\nrun \S+\n/);
      expect(first.stdout).toBe("echo (1 messages): say hello\n");
      expect(first.code).toBe(0);
      const { sessionId, runId } = idsOf(first.stderr);

      // The same session, one more prompt; DATABASE_URL stands in for --database-url.
      const second = await skein(
        ["enqueue", "--agent", "echo", "--session", sessionId, "--wait", "and again"],
        { DATABASE_URL: url },
      ).exited;
      expect(second.stdout).toBe("echo (3 messages): and again\n");
      expect(second.code).toBe(0);
      expect(idsOf(second.stderr).sessionId).toBe(sessionId);

      // A run that ends with an error: its message, exit 1.
      const failed = await enqueue(url, "echo", "fail now", ["--wait"]).exited;
      expect(failed.code).toBe(1);
      expect(failed.stdout).toBe("");
      expect(lines(failed.stderr).at(-1)).toMatch(/^skein: the run failed: \w+: .*no, not this/);
      const failedIds = idsOf(failed.stderr);

      const listed = await skein(["sessions", "--database-url", url]).exited;
      expect(listed.code).toBe(0);
      expect(listed.stderr).toBe("");
      const rows = lines(listed.stdout).map((line) => line.split("  "));
      expect(rows).toHaveLength(2);
      expect(rows).toContainEqual([
        sessionId,
        expect.stringMatching(/^\d{4}-.*Z$/),
        "idle",
        "say hello",
      ]);
      expect(rows).toContainEqual([failedIds.sessionId, expect.any(String), "idle", "fail now"]);

      const json = await sessionsJson(url);
      const session = json.find((row) => row.sessionId === sessionId)!;
      expect(session).toMatchObject({
        sessionId,
        status: "idle",
        run: { agent: "echo", status: "ended" },
      });
      expect(session.run.runId).not.toBe(runId); // the latest run: the second prompt's
      expect(session.checkpoints.map((c: { prompt: string }) => c.prompt)).toEqual([
        "say hello",
        "and again",
      ]);

      worker.child.kill("SIGTERM");
      const stopped = await worker.exited;
      expect(stopped.stderr).toMatch(/stopping: waiting for 0 running run\(s\)/);
      expect(stopped.stderr).toMatch(/worker worker-\S+ stopped/);
      expect(stopped.code).toBe(0);
    },
    TIMEOUT,
  );

  it(
    "enqueue without --wait prints the ids on stdout; sessions shows the run queued, then running; SIGTERM lets it finish",
    async () => {
      const url = await freshDatabase();
      // No worker yet: the run waits on the queue.
      const queued = await enqueue(url, "echo", "hold the line").exited;
      expect(queued.code).toBe(0);
      expect(queued.stdout).toMatch(/^session \S+\nrun \S+\n$/);
      expect(queued.stderr).toMatch(/no worker has served "echo" in the last minute/);
      const { sessionId, runId } = idsOf(queued.stdout);
      // Its session cannot take another prompt before this run ended.
      const busy = await enqueue(url, "echo", "one more", ["--session", sessionId]).exited;
      expect(busy.code).toBe(1);
      expect(busy.stderr).toBe(
        `skein: Session "${sessionId}" has an unfinished run (interrupted); wait for it to end (or resume or cancel it) before enqueueing another.\n`,
      );
      expect((await sessionsJson(url))[0]).toMatchObject({
        sessionId,
        status: "queued",
        run: { runId, agent: "echo", status: "queued" },
      });

      const worker = await startWorker(url, "./queue-agents.mjs");
      await gate("hold the line").arrived;
      expect((await sessionsJson(url))[0]).toMatchObject({ sessionId, status: "running" });

      // Stopping waits for the running run: it ends, then the worker exits 0.
      let released = false;
      let exitedBeforeRelease: boolean | undefined;
      void worker.exited.then(() => {
        exitedBeforeRelease = !released;
      });
      worker.child.kill("SIGTERM");
      await worker.waitFor("stderr", "stopping: waiting for 1 running run(s)");
      released = true;
      gate("hold the line").release();
      const stopped = await worker.exited;
      expect(exitedBeforeRelease, "the worker exited before its running run could end").toBe(false);
      expect(stopped.code).toBe(0);

      // The run ended before the worker exited: no worker is left to end it now.
      expect((await sessionsJson(url))[0]).toMatchObject({
        sessionId,
        status: "idle",
        run: { runId, status: "ended" },
      });
      const result = await resultOf(url, sessionId, runId);
      expect(result.subtype).toBe("success");
      expect(result.result).toBe("released: hold the line");
    },
    TIMEOUT,
  );

  it(
    "a second signal quits at once (130), without waiting for the running run",
    async () => {
      const url = await freshDatabase();
      const worker = await startWorker(url, "./queue-agents.mjs");
      const queued = await enqueue(url, "echo", "hold on").exited;
      expect(queued.code).toBe(0);
      await gate("hold on").arrived;
      worker.child.kill("SIGINT");
      await worker.waitFor("stderr", "stopping: waiting for 1 running run(s)");
      worker.child.kill("SIGINT");
      const exited = await worker.exited;
      expect(exited.code).toBe(130);
      expect(exited.stderr).not.toMatch(/stopped/);
    },
    TIMEOUT,
  );

  it(
    "Ctrl-C while enqueue --wait waits: exit 130, and the run goes on",
    async () => {
      const url = await freshDatabase();
      await startWorker(url, "./queue-agents.mjs");
      const waiting = enqueue(url, "echo", "hold still", ["--wait"]);
      await gate("hold still").arrived;
      waiting.child.kill("SIGINT");
      const interrupted = await waiting.exited;
      expect(interrupted.code).toBe(130);
      expect(interrupted.stdout).toBe("");
      expect(interrupted.stderr).toMatch(/stopped waiting; the run goes on/);
      const { sessionId, runId } = idsOf(interrupted.stderr);

      gate("hold still").release();
      expect((await resultOf(url, sessionId, runId)).result).toBe("released: hold still");
    },
    TIMEOUT,
  );

  it(
    "an agents module exporting a function gets the worker's boss and store: a handoff through pgBossMailbox(boss) runs on the helper's queue",
    async () => {
      const url = await freshDatabase();
      const worker = await startWorker(url, "./queue-agents-handoff.mjs");
      expect(worker.stdout).toMatch(/ ready: agents writer, helper; concurrency 1;/);
      const written = await enqueue(url, "writer", "write the draft", ["--wait"]).exited;
      expect(written.stdout).toBe("handed off\n");
      expect(written.code).toBe(0);

      // The handoff's own session, run by the worker as the helper.
      const store = postgresStore({ connectionString: url });
      try {
        let handoff: string | undefined;
        for (const deadline = Date.now() + LIVENESS_MS; handoff === undefined; ) {
          handoff = (await store.list()).find((info) =>
            info.sessionId.startsWith("handoff-"),
          )?.sessionId;
          if (handoff === undefined && Date.now() > deadline)
            throw new Error(`no handoff session.\nworker: ${worker.stderr}`);
          await sleep(100);
        }
        const result = await waitForRun(store, handoff, { runId: handoff });
        expect(result.result).toBe("helped");
        const json = await sessionsJson(url);
        expect(json).toHaveLength(2);
        expect(json.find((row) => row.sessionId === handoff)).toMatchObject({
          status: "idle",
          run: { agent: "helper", status: "ended" },
        });
      } finally {
        await store.close();
      }
    },
    TIMEOUT,
  );
});

describe("bad input that needs the database", () => {
  it(
    "an agents function that returns nothing usable: the error, exit 1, after closing what it opened",
    async () => {
      const url = await freshDatabase();
      const result = await skein([
        "worker",
        "--database-url",
        url,
        "--agents",
        "./queue-agents-bad-function.mjs",
      ]).exited;
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toBe(
        "skein: --agents ./queue-agents-bad-function.mjs: its default export is a function that returned an array; it must return an object of agents by name ({ researcher: defineAgent({ ... }) }).\n",
      );
    },
    TIMEOUT,
  );

  it(
    "sessions --database-url on a database no queue ever used: the sessions, no error, no board created",
    async () => {
      const url = await freshDatabase();
      const listed = await skein(["sessions", "--database-url", url, "--json"]).exited;
      expect(listed).toMatchObject({ code: 0, stdout: "", stderr: "" });
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        const { rows } = await admin.query("SELECT to_regclass('public.skein_runs') AS board");
        expect(rows[0].board).toBe(null);
      } finally {
        await admin.end();
      }
    },
    TIMEOUT,
  );
});
