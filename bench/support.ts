/**
 * What every benchmark shares: the built package, clocks, statistics, paired repeats and the
 * printed table.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import ts from "typescript";

/**
 * `npm run bench` builds first: measure that build, dist/. Under tsx the specifier "skein" maps to
 * src/ (tsconfig "paths"), and tsx's transform wraps every named closure in a `__name()` call,
 * which about doubles the engine's cost per call; plain dist/ is what users run.
 */
export const dist = (path: string) => new URL(`../dist/${path}`, import.meta.url).href;
export const skein = (await import(dist("index.js")).catch(missingBuild)) as typeof import("skein");
export const testing = (await import(dist("testing/index.js")).catch(
  missingBuild,
)) as typeof import("skein/testing");

function missingBuild(error: unknown): never {
  console.error("bench: dist/ is missing or broken; run `npm run bench` (it builds first).");
  throw error;
}

/**
 * Bench files a child process runs, transpiled one by one to plain JavaScript in
 * node_modules/.cache/skein-bench/ (under tsx a child would carry its loader: about 37 MB, and a
 * slower start); returns the path of `files[0]`'s output. The files' relative imports must be
 * among `files`.
 */
export function transpileForChild(files: string[]): string {
  const out = new URL("../node_modules/.cache/skein-bench/", import.meta.url);
  mkdirSync(out, { recursive: true });
  for (const file of files) {
    const source = readFileSync(new URL(file, import.meta.url), "utf8");
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        rewriteRelativeImportExtensions: true,
        verbatimModuleSyntax: true,
      },
    });
    writeFileSync(new URL(file.replace(/\.ts$/, ".js"), out), outputText);
  }
  // An ES module: the directory has no package.json of its own to say so.
  writeFileSync(new URL("package.json", out), '{ "type": "module" }\n');
  return new URL(files[0]!.replace(/\.ts$/, ".js"), out).pathname;
}

// ---------------------------------------------------------------- clocks

/** CPU time of this process, in ms (user + system, every thread: GC helpers included). */
export function cpuNow(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1_000;
}

/**
 * How long this thread has waited for a core, in ms: Linux's run-queue wait of the main thread
 * (`/proc/thread-self/schedstat`, its second field, in ns); 0 where it cannot be read. On a shared
 * machine a run's wall time minus this is the time it worked or waited for its own I/O: what the
 * code costs, without the time other processes held the cores.
 */
export function runQueueWaitMs(): number {
  if (schedstat === false) return 0;
  try {
    return Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[1]) / 1e6 || 0;
  } catch {
    schedstat = false;
    return 0;
  }
}
let schedstat: boolean | undefined;

// A full collection before each timed run, outside the clock, so no run pays for the last one's garbage.
setFlagsFromString("--expose-gc");
export const collectGarbage = runInNewContext("gc") as () => void;

// ---------------------------------------------------------------- statistics

export const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The median, and half the interquartile range as a measure of the noise around it. */
export function spread(values: number[]): { median: number; noise: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (fraction: number) => sorted[Math.round(fraction * (sorted.length - 1))]!;
  return { median: median(values), noise: (at(0.75) - at(0.25)) / 2 };
}

/** Runs `pair` `warmup + repeats` times, alternating which side goes first; keeps the repeats. */
export async function paired<T>(
  repeats: number,
  warmup: number,
  pair: { skein: () => Promise<T>; baseline: () => Promise<T> },
): Promise<{ skein: T[]; baseline: T[] }> {
  const out = { skein: [] as T[], baseline: [] as T[] };
  for (let index = 0; index < warmup + repeats; index++) {
    const order = index % 2 ? (["baseline", "skein"] as const) : (["skein", "baseline"] as const);
    for (const side of order) {
      const value = await pair[side]();
      if (index >= warmup) out[side].push(value);
    }
  }
  return out;
}

// ---------------------------------------------------------------- report

export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const line = (row: string[]) =>
    `| ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(" | ")} |`;
  const rule = `|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`;
  return [line(rows[0]!), rule, ...rows.slice(1).map(line)].join("\n");
}

export const TABLE_HEADER = ["measure", "skein", "baseline", "result", "target", ""];
export const verdict = (pass: boolean) => (pass ? "PASS" : "FAIL");
export const ms = (value: number) => `${value.toFixed(1)} ms`;
export const us = (value: number) => `${value.toFixed(1)} µs`;
export const noisy = ({ median, noise }: { median: number; noise: number }, unit: string) =>
  `${us(median)} ± ${noise.toFixed(1)}${unit}`;
