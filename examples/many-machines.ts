// skein's own example: runs on a queue, worked by two worker processes (as if on two machines)
// over one Postgres, which holds both the queue (pg-boss) and the sessions. This process enqueues
// six research runs and follows one live; each researcher hands its notes off to a writer, which
// runs as a job of its own, on whichever worker takes it. Offline (a scripted model); it needs a
// Postgres: `DATABASE_URL=postgres://... npx tsx examples/many-machines.ts`.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import PgBoss from "pg-boss";
import { defineAgent, delegateTool, tool } from "skein";
import { createWorker, enqueueRun, followRun, pgBossMailbox, waitForRun } from "skein/pgboss";
import { postgresStore } from "skein/postgres";
import { scriptedModel } from "skein/testing";
import { z } from "zod";

/** The agents every worker serves: what `skein worker --agents` would load from a module. */
function agents(boss: PgBoss) {
  const lookUp = tool(
    "look_up",
    "Looks a topic up.",
    z.object({ topic: z.string() }),
    async ({ topic }) => {
      await new Promise((resolve) => setTimeout(resolve, 150)); // some work
      return `Notes on ${topic}, by worker ${process.pid}.`;
    },
    { idempotent: true },
  );
  const writer = defineAgent({ model: scriptedModel(() => ({ text: "A short article." })) });
  const researcher = defineAgent({
    model: scriptedModel((request) => {
      const topic = String(request.messages[0]!.content);
      // First look the topic up, then hand the notes to the writer, then stop.
      if (request.messages.length === 1)
        return { toolCalls: [{ id: "look", name: "look_up", input: { topic } }] };
      if (request.messages.length === 3)
        return {
          toolCalls: [
            {
              id: "hand",
              name: "delegate",
              input: { agent: "writer", prompt: `Write up ${topic}.`, mode: "handoff" },
            },
          ],
        };
      return { text: "Researched and handed off." };
    }),
    tools: [lookUp, delegateTool({ writer }, { mailbox: pgBossMailbox(boss) })],
  });
  return { researcher, writer };
}

/** One worker process: takes runs of both agents until it is told to stop. */
async function worker(databaseUrl: string): Promise<void> {
  const boss = new PgBoss(databaseUrl);
  boss.on("error", (error) => console.error(error.message));
  await boss.start();
  const sessionStore = postgresStore({ connectionString: databaseUrl });
  const running = await createWorker(boss, { sessionStore, agents: agents(boss) });
  console.log("ready");
  process.once("SIGTERM", async () => {
    await running.stop({ timeoutMs: 10_000 });
    await boss.stop({ graceful: false, wait: false });
    await sessionStore.close();
    process.exit(0); // pg-boss keeps sockets open for a few seconds after stop()
  });
}

export async function main(
  databaseUrl = process.env.DATABASE_URL,
  log: (line: string) => void = console.log,
): Promise<void> {
  if (!databaseUrl) throw new Error("Set DATABASE_URL to a Postgres database.");
  // 0. One approval secret for the whole deployment (a run may pause on one worker and resume on
  // another): in production, set SKEIN_APPROVAL_SECRET on every machine; here the workers this
  // process starts inherit the one it makes.
  process.env.SKEIN_APPROVAL_SECRET ||= randomBytes(32).toString("hex");
  // 1. Two workers, as two machines would run `skein worker`.
  const workers = await Promise.all([startWorker(databaseUrl), startWorker(databaseUrl)]);
  const boss = new PgBoss(databaseUrl);
  boss.on("error", () => {});
  await boss.start();
  const sessionStore = postgresStore({ connectionString: databaseUrl });
  try {
    // 2. Six runs on the queue; enqueueRun logs each prompt in its session and returns at once.
    const topics = ["tides", "comets", "ferns", "glaciers", "moths", "basalt"];
    const runs = await Promise.all(
      topics.map((prompt) => enqueueRun(boss, { agent: "researcher", prompt, sessionStore })),
    );
    // 3. One run's events, live, from whichever worker runs it.
    const seen: string[] = [];
    for await (const event of followRun(sessionStore, runs[0]!.sessionId, {
      runId: runs[0]!.runId,
    })) {
      if (event.type === "tool_start") seen.push(event.name);
    }
    log(`followed: ${seen.join(", ")}`);
    // 4. Every result; and each handoff's own run, on the writer's queue.
    const pids = new Set<string>();
    for (const run of runs) {
      const result = await waitForRun(sessionStore, run.sessionId, { runId: run.runId });
      const notes = String(result.steps[0]!.toolCalls[0]!.result.content);
      pids.add(notes.replace(/.*worker (\d+)\.$/, "$1"));
      const handoff = result.steps[1]!.toolCalls[0]!.result.details as { messageId: string };
      const written = await waitForRun(sessionStore, `handoff-${handoff.messageId}`);
      if (written.result !== "A short article.") throw new Error(`writer: ${written.result}`);
    }
    log(`runs ended: ${runs.length}, articles written: ${runs.length}`);
    log(`workers that looked topics up: ${pids.size}`);
  } finally {
    for (const child of workers) child.kill("SIGTERM");
    await Promise.all(
      workers.map((child) => new Promise((resolve) => child.once("close", resolve))),
    );
    await boss.stop({ graceful: false, wait: false });
    await sessionStore.close();
  }
}

/** Starts this file as a worker process and resolves once it takes jobs. */
async function startWorker(databaseUrl: string): Promise<ChildProcess> {
  const loader = process.execArgv.some((arg) => arg.includes("tsx"))
    ? process.execArgv
    : ["--import", "tsx"];
  const script = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, [...loader, script, "worker", databaseUrl], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (data) => String(data).includes("ready") && resolve());
    child.once("close", (code) =>
      reject(new Error(`the worker exited (${code}) before it was ready`)),
    );
  });
  return child;
}

if (process.argv[2] === "worker") await worker(process.argv[3]!);
else if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();
