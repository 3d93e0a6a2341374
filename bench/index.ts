/**
 * `npm run bench`: what skein costs, in one run, each figure against a baseline measured in the
 * same run. (1)-(3), engine.ts: the engine against a minimal loop on a scripted model. (4)-(5),
 * http.ts: the providers over HTTP against the mock server, against a plain fetch loop.
 *
 * (6), sessions.ts: the session log (no store, memory, SQLite) on the engine's workload.
 *
 * W3, w3.ts: 200 concurrent three-turn runs over HTTP in fresh processes, time and peak memory
 * against the plain fetch loop, and the memory `import("skein")` costs.
 *
 * (7), agents.ts: an agent tool call against the same child run by hand in a plain tool.
 *
 * (8), mcp.ts: an MCP tool call (a server over stdio) against the same tool called directly.
 *
 * Web, web.ts: the UI message stream (skein/web) against agent.stream() itself.
 *
 * Queue, queue.ts: 200 runs through skein/pgboss with 1 and 2 worker processes on a throwaway
 * Postgres, against the same runs in one process with agent.run on the same store.
 *
 * `npm run bench -- engine`, `-- http`, `-- sessions`, `-- agents`, `-- mcp`, `-- web`, `-- w3` or `-- queue`
 * runs one part only.
 */
import { randomBytes } from "node:crypto";
import { agentsBench } from "./agents.ts";
import { engineBench } from "./engine.ts";
import { httpBench } from "./http.ts";
import { mcpBench } from "./mcp.ts";
import { sessionsBench } from "./sessions.ts";
import { dist, table } from "./support.ts";
import { w3Bench } from "./w3.ts";
import { webBench } from "./web.ts";

// Agents on a durable store (and queue workers) need a shared seal key; the bench processes and
// the workers they start share this one.
process.env.SKEIN_APPROVAL_SECRET ||= randomBytes(32).toString("hex");

const only = process.argv[2];

console.log(
  `skein bench: node ${process.version}, ${process.platform}/${process.arch}, measuring ${dist("index.js")}`,
);
console.log("Medians of paired, interleaved repeats of skein and the baseline loop (wall time).\n");

if (only === undefined || only === "engine") {
  const engine = await engineBench();
  console.log(table(engine.rows));
  console.log(`${engine.notes}\n`);
}
if (only === undefined || only === "http") {
  const http = await httpBench();
  console.log("Over HTTP against mockServer on 127.0.0.1; the baseline is the plain fetch loop.\n");
  console.log(table(http.rows));
  console.log(`\n${http.notes}`);
}
if (only === undefined || only === "sessions") {
  const sessions = await sessionsBench();
  console.log("\nThe session log: the same agent with no store, memoryStore and sqliteStore.\n");
  console.log(table(sessions.rows));
  console.log(`\n${sessions.notes}`);
}
if (only === undefined || only === "agents") {
  const agents = await agentsBench();
  console.log("\nAgents as tools: agentTool against the same child run by hand in a plain tool.\n");
  console.log(table(agents.rows));
  console.log(`\n${agents.notes}`);
}
if (only === undefined || only === "mcp") {
  const mcp = await mcpBench();
  console.log("\nMCP: a tool served over stdio against the same tool called directly.\n");
  console.log(table(mcp.rows));
  console.log(`\n${mcp.notes}`);
}
if (only === undefined || only === "web") {
  const web = await webBench();
  console.log("\nskein/web: the UI message stream against agent.stream() itself.\n");
  console.log(table(web.rows));
  console.log(`\n${web.notes}`);
}
if (only === undefined || only === "w3") {
  const w3 = await w3Bench();
  console.log(
    "\nW3: the HTTP workload in fresh processes; the baseline is the plain fetch loop.\n",
  );
  console.log(table(w3.rows));
  console.log(`\n${w3.notes}`);
}
if (only === undefined || only === "queue") {
  // Loaded here only: pg, pg-boss and skein/pgboss stay out of the other parts' process.
  const { queueBench } = await import("./queue.ts");
  const queue = await queueBench();
  console.log(
    "\nQueue: skein/pgboss workers against the same runs in one process (agent.run, same store).\n",
  );
  console.log(table(queue.rows));
  console.log(`\n${queue.notes}`);
}
