/**
 * A child process of the HTTP (5) memory measure: one side's concurrent runs against the mock
 * server of the parent, alone in a fresh process, so that neither side's heap holds the other's
 * garbage or the server's. Prints one JSON line: RSS and heap before and at their peak, and the
 * wall time of the batch.
 *
 *   node --import tsx bench/http-memory-child.ts <anthropic|openai> <skein|plain> <url> <runs>
 */

import { type Protocol, runSkein, skeinAgent } from "./http-workload.ts";
import { runPlain } from "./plain-fetch.ts";
import { collectGarbage } from "./support.ts";

export interface MemorySample {
  rssBefore: number;
  rssPeak: number;
  heapBefore: number;
  heapPeak: number;
  wallMs: number;
}

const [protocol, side, url, runs] = process.argv.slice(2) as [Protocol, string, string, string];
let run = () => runPlain(url, protocol);
if (side === "skein") {
  const agent = skeinAgent(url, protocol);
  run = () => runSkein(agent);
}

// Warm-up, before "before": modules loaded, the hot code compiled, a connection opened.
for (let index = 0; index < 3; index++) await run();
collectGarbage();

const before = process.memoryUsage();
const peak = { rss: before.rss, heap: before.heapUsed };
const sample = () => {
  const now = process.memoryUsage();
  if (now.rss > peak.rss) peak.rss = now.rss;
  if (now.heapUsed > peak.heap) peak.heap = now.heapUsed;
};
// Every 10 ms while the event loop lets it, and as each run ends.
const sampler = setInterval(sample, 10);
const start = performance.now();
await Promise.all(Array.from({ length: Number(runs) }, () => run().then(sample)));
const wallMs = performance.now() - start;
clearInterval(sampler);
sample();

const result: MemorySample = {
  rssBefore: before.rss,
  rssPeak: peak.rss,
  heapBefore: before.heapUsed,
  heapPeak: peak.heap,
  wallMs,
};
process.stdout.write(`${JSON.stringify(result)}\n`);
