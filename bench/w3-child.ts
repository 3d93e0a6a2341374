/**
 * One W3 sample, in a fresh process: one side's concurrent runs against the mock server in the
 * parent. Run as plain JavaScript (w3.ts transpiles it; tsx alone would add about 37 MB to both
 * sides), with only what its side loads: both load the application's tool schema (Zod), only
 * skein's side loads skein. Prints one JSON line, a `W3Sample`.
 *
 *   node --expose-gc w3-child.js <skein|plain> <anthropic|openai> <server url> <runs> <skein's index.js URL>
 */
import type { Protocol } from "./http-workload.ts";
import { runPlain } from "./plain-fetch.ts";

export interface W3Sample {
  /** After the side's imports and a full collection, before any run. */
  importRss: number;
  importHeap: number;
  /** Before the batch (after the warm-up runs) and at its peak, bytes. */
  rssBefore: number;
  rssPeak: number;
  heapBefore: number;
  heapPeak: number;
  /** The batch: wall time and this process's CPU time (user + system), ms. */
  wallMs: number;
  cpuMs: number;
}

const WARMUP_RUNS = 3;

const [side, protocol, url, runs, skeinURL] = process.argv.slice(2) as [
  "skein" | "plain",
  Protocol,
  string,
  string,
  string,
];
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("bench: run the W3 child with --expose-gc");

// Both sides: the application's tool schema, and with it Zod.
await import("./weather-schema.ts");
let run = () => runPlain(url, protocol);
if (side === "skein") {
  // Loaded here only, so that the plain side's process does not hold skein.
  const { skeinSide } = await import("./skein-side.ts");
  const skein = skeinSide(await import(skeinURL));
  const agent = skein.agent(url, protocol);
  run = () => skein.run(agent);
}
gc();
const imported = process.memoryUsage();

// Warm-up, before "before": the hot code compiled, fetch loaded, a connection opened.
for (let index = 0; index < WARMUP_RUNS; index++) await run();
gc();

const before = process.memoryUsage();
const peak = { rss: before.rss, heap: before.heapUsed };
const sample = () => {
  const now = process.memoryUsage();
  if (now.rss > peak.rss) peak.rss = now.rss;
  if (now.heapUsed > peak.heap) peak.heap = now.heapUsed;
};
// Every 10 ms while the event loop lets it, and as each run ends.
const sampler = setInterval(sample, 10);
const cpu = process.cpuUsage();
const start = performance.now();
await Promise.all(Array.from({ length: Number(runs) }, () => run().then(sample)));
const wallMs = performance.now() - start;
const cpuUsed = process.cpuUsage(cpu);
clearInterval(sampler);
sample();

const result: W3Sample = {
  importRss: imported.rss,
  importHeap: imported.heapUsed,
  rssBefore: before.rss,
  rssPeak: peak.rss,
  heapBefore: before.heapUsed,
  heapPeak: peak.heap,
  wallMs,
  cpuMs: (cpuUsed.user + cpuUsed.system) / 1_000,
};
process.stdout.write(`${JSON.stringify(result)}\n`);
