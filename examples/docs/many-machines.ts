import PgBoss from "pg-boss";
import { createAgent } from "skein";
import { createWorker, enqueueRun, followRun, waitForRun } from "skein/pgboss";
import { postgresStore } from "skein/postgres";

const url = process.env.DATABASE_URL!; // the queue and the sessions share one Postgres
// Workers, enqueueRun and resumeRun read SKEIN_APPROVAL_SECRET: one secret for the deployment.
const boss = new PgBoss(url);
boss.on("error", console.error); // pg-boss reports lost connections here; unheard, they would throw
await boss.start();
const sessionStore = postgresStore({ connectionString: url });

// On every worker machine (or `npx skein worker --agents ./agents.js`):
// createAgent: with skein's built-in tools (a defineAgent definition has its own tools only).
const researcher = createAgent({ model: "claude-sonnet-4-6", allowedTools: ["Read", "Grep"] });
const worker = await createWorker(boss, { sessionStore, agents: { researcher }, concurrency: 4 });

// Anywhere: enqueue returns at once; the session logs the prompt before the job exists.
const { sessionId, runId } = await enqueueRun(boss, {
  agent: "researcher",
  prompt: "Which files mention the retry policy?",
  sessionStore,
});
for await (const event of followRun(sessionStore, sessionId, { runId })) {
  if (event.type === "text_delta") process.stdout.write(event.text);
}
const result = await waitForRun(sessionStore, sessionId, { runId });
console.log(`\n${result.subtype} after ${result.numTurns} turns`);

await worker.stop({ timeoutMs: 10_000 });
await boss.stop({ graceful: false });
await sessionStore.close();
