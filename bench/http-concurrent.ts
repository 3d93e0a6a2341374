/**
 * HTTP (5): 200 concurrent three-turn runs (two tool turns and a final answer each) in one
 * process, over HTTP against the mock server on 127.0.0.1, skein against the plain fetch loop.
 *
 * Throughput (runs per second) is measured here, with the server in this process as in (4):
 * paired, interleaved batches, garbage collected before each. Memory growth (peak RSS minus RSS
 * before the batch) is measured in child processes, one batch each, so that one side's heap
 * never holds the other's garbage; the server stays in this process, idle while it waits, so
 * its memory is no side's.
 */
import { spawn } from "node:child_process";
import type { MockServer } from "skein/testing";
import type { MemorySample } from "./http-memory-child.ts";
import { type Protocol, runSkein, skeinAgent, toolTurnsScript } from "./http-workload.ts";
import { checkSameRequests, runPlain } from "./plain-fetch.ts";
import { collectGarbage, median, paired, spread, testing } from "./support.ts";

export const RUNS = 200;
const TOOL_TURNS = 2;

export interface ConcurrentResult {
  protocol: Protocol;
  /** Runs per second, median over batches. */
  skeinRate: number;
  plainRate: number;
  /** Plain throughput / skein throughput, per pair of batches: median and half the IQR. */
  ratio: { median: number; noise: number };
  memory: {
    /** Peak RSS minus RSS before, bytes: median and half the interquartile range. */
    skeinRss: { median: number; noise: number };
    plainRss: { median: number; noise: number };
    /** The same for the JS heap (heapUsed), where most of it goes. */
    skeinHeap: number;
    plainHeap: number;
    /** Runs per second in the children, where the server has a process of its own. */
    skeinRate: number;
    plainRate: number;
    /** Distinct warnings the children printed (such as MaxListenersExceededWarning), by side. */
    warnings: string[];
  };
  warning: string | undefined;
}

export async function httpConcurrent(
  protocol: Protocol,
  options: { repeats: number; warmup: number; children: number },
): Promise<ConcurrentResult> {
  const server = await testing.mockServer({ script: toolTurnsScript(TOOL_TURNS) });
  try {
    const warning = await checkSameRequests(server, protocol);
    const agent = skeinAgent(server.url, protocol);
    const batch = async (run: () => Promise<void>) => {
      server.requests.length = 0;
      collectGarbage();
      const start = performance.now();
      await Promise.all(Array.from({ length: RUNS }, run));
      return RUNS / ((performance.now() - start) / 1_000);
    };
    const sample = await paired(options.repeats, options.warmup, {
      skein: () => batch(() => runSkein(agent)),
      baseline: () => batch(() => runPlain(server.url, protocol)),
    });
    server.requests.length = 0;
    const memory = await memoryGrowth(server, protocol, options.children);
    return {
      protocol,
      skeinRate: median(sample.skein),
      plainRate: median(sample.baseline),
      ratio: spread(sample.baseline.map((rate, index) => rate / sample.skein[index]!)),
      memory,
      warning,
    };
  } finally {
    await server.close();
  }
}

/** `children` child processes per side, alternating; medians of each side's samples. */
async function memoryGrowth(
  server: MockServer,
  protocol: Protocol,
  children: number,
): Promise<ConcurrentResult["memory"]> {
  const samples = { skein: [] as MemorySample[], plain: [] as MemorySample[] };
  const warnings = new Set<string>();
  for (let index = 0; index < children; index++) {
    const order = index % 2 ? (["plain", "skein"] as const) : (["skein", "plain"] as const);
    for (const side of order) {
      const child = await runChild([protocol, side, server.url, String(RUNS)]);
      samples[side].push(child.sample);
      for (const warning of child.warnings) warnings.add(`${side}: ${warning}`);
      server.requests.length = 0;
    }
  }
  const rss = (list: MemorySample[]) => spread(list.map((s) => s.rssPeak - s.rssBefore));
  const heap = (list: MemorySample[]) => median(list.map((s) => s.heapPeak - s.heapBefore));
  const rate = (list: MemorySample[]) => median(list.map((s) => RUNS / (s.wallMs / 1_000)));
  return {
    skeinRss: rss(samples.skein),
    plainRss: rss(samples.plain),
    skeinHeap: heap(samples.skein),
    plainHeap: heap(samples.plain),
    skeinRate: rate(samples.skein),
    plainRate: rate(samples.plain),
    warnings: [...warnings],
  };
}

const CHILD = new URL("./http-memory-child.ts", import.meta.url).pathname;
const ROOT = new URL("../", import.meta.url).pathname;

/** Runs one child; its stdout is the sample, its stderr kept for the warnings in it. */
function runChild(args: string[]): Promise<{ sample: MemorySample; warnings: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    let errors = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => {
      output += text;
    });
    child.stderr.setEncoding("utf8").on("data", (text: string) => {
      errors += text;
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0)
        return reject(new Error(`bench: ${CHILD} ${args.join(" ")} exited ${code}:\n${errors}`));
      const sample = JSON.parse(output.trim().split("\n").at(-1)!) as MemorySample;
      // "(node:1234) SomeWarning: text" lines, without the pid, so that they can be counted once.
      const warnings = errors
        .split("\n")
        .filter((line) => /^\(node:\d+\) /.test(line))
        .map((line) => line.replace(/^\(node:\d+\) /, ""));
      resolve({ sample, warnings });
    });
  });
}
