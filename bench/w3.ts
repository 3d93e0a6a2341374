/**
 * W3, `npm run bench -- w3`: 200 concurrent three-turn runs (two tool turns and a final answer
 * each) over HTTP against the mock server, skein against the plain fetch loop, and what
 * `import("skein")` costs a fresh process.
 *
 * Each sample is a fresh child process running one side's batch (w3-child.ts) while the server
 * stays in this process, idle while it waits, so that a side's time and memory are its own and
 * neither side's heap holds the other's garbage. Children alternate sides; ratios are medians of
 * per-pair ratios. The children run as plain JavaScript, transpiled here: under tsx each would
 * carry about 37 MB of loader for both sides, which hides the difference being measured.
 */
import { spawn } from "node:child_process";
import { PROTOCOLS, type Protocol, toolTurnsScript } from "./http-workload.ts";
import { checkSameRequests } from "./plain-fetch.ts";
import { skeinSide } from "./skein-side.ts";
import {
  dist,
  median,
  skein,
  spread,
  TABLE_HEADER,
  testing,
  transpileForChild,
  verdict,
} from "./support.ts";
import type { W3Sample } from "./w3-child.ts";

const RUNS = 200;
const TOOL_TURNS = 2;
const TARGET = { time: 1.15, peak: 1.1, importMB: 10 };

const MB = 2 ** 20;
const megabytes = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;
const times = ({ median, noise }: { median: number; noise: number }) =>
  `${median.toFixed(2)} x ± ${noise.toFixed(2)}`;

export async function w3Bench(options = { samples: 7, imports: 7 }): Promise<{
  rows: string[][];
  notes: string;
}> {
  const child = transpileChild();
  const rows = [TABLE_HEADER];
  const notes: string[] = [];
  for (const protocol of PROTOCOLS) {
    const { skein: mine, plain, warning } = await batches(child, protocol, options.samples);
    const pairs = (value: (sample: W3Sample) => number) =>
      spread(mine.map((sample, index) => value(sample) / value(plain[index]!)));
    const wall = pairs((sample) => sample.wallMs);
    const peak = pairs((sample) => sample.rssPeak);
    const middle = (list: W3Sample[], value: (sample: W3Sample) => number) =>
      median(list.map(value));
    rows.push(
      [
        `W3 ${protocol}: ${RUNS} concurrent 3-turn runs, wall time`,
        `${middle(mine, (s) => s.wallMs).toFixed(0)} ms`,
        `${middle(plain, (s) => s.wallMs).toFixed(0)} ms`,
        times(wall),
        `<= ${TARGET.time} x`,
        verdict(wall.median <= TARGET.time),
      ],
      [
        `W3 ${protocol}: the same, peak RSS`,
        megabytes(middle(mine, (s) => s.rssPeak)),
        megabytes(middle(plain, (s) => s.rssPeak)),
        times(peak),
        `<= ${TARGET.peak} x`,
        verdict(peak.median <= TARGET.peak),
      ],
    );
    const growth = (list: W3Sample[], key: "rss" | "heap") =>
      megabytes(
        middle(list, (s) => (key === "rss" ? s.rssPeak - s.rssBefore : s.heapPeak - s.heapBefore)),
      );
    notes.push(
      `W3 ${protocol}: CPU time of the batch skein / plain ${times(pairs((s) => s.cpuMs))}; ` +
        `growth during the batch: RSS ${growth(mine, "rss")} against ${growth(plain, "rss")}, ` +
        `heap ${growth(mine, "heap")} against ${growth(plain, "heap")}; ` +
        `RSS after the imports ${megabytes(middle(mine, (s) => s.importRss))} against ${megabytes(middle(plain, (s) => s.importRss))}.`,
    );
    if (warning) notes.push(`WARNING ${warning}`);
  }
  const imports = await importCost(options.imports);
  rows.push([
    'W3 import("skein") in a fresh process, RSS',
    megabytes(imports.skein.rss),
    megabytes(imports.bare.rss),
    `+${megabytes(imports.skein.rss - imports.bare.rss)}`,
    `< ${TARGET.importMB} MB`,
    verdict(imports.skein.rss - imports.bare.rss < TARGET.importMB * MB),
  ]);
  notes.push(
    `W3 import: JS heap ${megabytes(imports.skein.heap)} against ${megabytes(imports.bare.heap)} ` +
      `(+${megabytes(imports.skein.heap - imports.bare.heap)}); the baseline is a bare node process, ` +
      "both measured after a full collection.",
    "W3 ratios are medians of per-pair ratios of fresh child processes, ± half the interquartile range;",
    "the peak is the child's whole RSS (imports included); the mock server runs in the parent.",
    "Both children load the workload's tool schema and with it Zod, as the application would;",
    "skein's own import cost, without Zod, is the import row.",
  );
  return { rows, notes: notes.join("\n") };
}

/** `samples` children per side, alternating which goes first. */
async function batches(
  child: string,
  protocol: Protocol,
  samples: number,
): Promise<{ skein: W3Sample[]; plain: W3Sample[]; warning: string | undefined }> {
  const server = await testing.mockServer({ script: toolTurnsScript(TOOL_TURNS) });
  try {
    const warning = await checkSameRequests(server, protocol, skeinSide(skein));
    const out = { skein: [] as W3Sample[], plain: [] as W3Sample[] };
    for (let index = 0; index < samples; index++) {
      const order = index % 2 ? (["plain", "skein"] as const) : (["skein", "plain"] as const);
      for (const side of order) {
        const output = await node([
          "--expose-gc",
          child,
          side,
          protocol,
          server.url,
          String(RUNS),
          dist("index.js"),
        ]);
        out[side].push(JSON.parse(output.trim().split("\n").at(-1)!) as W3Sample);
        server.requests.length = 0;
      }
    }
    return { ...out, warning };
  } finally {
    await server.close();
  }
}

/** RSS and heap of fresh processes with and without `import("skein")`, medians. */
async function importCost(samples: number) {
  const script = (load: string) =>
    `${load}globalThis.gc(); const m = process.memoryUsage(); console.log(JSON.stringify({ rss: m.rss, heap: m.heapUsed }));`;
  type Memory = { rss: number; heap: number };
  const measure = async (load: string) =>
    JSON.parse(await node(["--expose-gc", "--input-type=module", "-e", script(load)])) as Memory;
  const out = { skein: [] as Memory[], bare: [] as Memory[] };
  for (let index = 0; index < samples; index++) {
    out.bare.push(await measure(""));
    out.skein.push(await measure(`await import(${JSON.stringify(dist("index.js"))});`));
  }
  const medians = (list: Memory[]) => ({
    rss: median(list.map((m) => m.rss)),
    heap: median(list.map((m) => m.heap)),
  });
  return { skein: medians(out.skein), bare: medians(out.bare) };
}

/** The child and the bench files it imports, transpiled one by one to plain JavaScript. */
function transpileChild(): string {
  return transpileForChild([
    "w3-child.ts",
    "http-workload.ts",
    "plain-fetch.ts",
    "skein-side.ts",
    "weather-schema.ts",
  ]);
}

/** Runs node with `args`; resolves with its stdout, rejects with its stderr if it fails. */
function node(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    let errors = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => {
      output += text;
    });
    child.stderr.setEncoding("utf8").on("data", (text: string) => {
      errors += text;
    });
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`bench: node ${args.slice(0, 3).join(" ")} exited ${code}:\n${errors}`)),
    );
  });
}
