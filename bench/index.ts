/**
 * `npm run bench`: what skein's engine costs on top of the tools and the model, in one run.
 *
 * Each figure is measured against a baseline loop written below: the same scripted model, the
 * same handlers, and nothing else (no validation, no events, no scheduling, no hooks). The
 * scripted model deep-copies every request in both, so that cost cancels out.
 *
 * Machines are shared and noisy, so: every figure is a median over repeats, after a warm-up;
 * skein and baseline runs are interleaved and paired, so that drift hits both alike; garbage is
 * collected before each timed run, outside the clock; per-turn figures take the median turn of
 * each window, so that a turn that met a GC pause or a preemption does not count. Times are wall
 * clock; the process's CPU time is printed as a cross-check.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type {
  ContentBlock,
  Message,
  Model,
  ModelToolSpec,
  ToolDefinition,
  ToolResultBlock,
  ToolUseBlock,
} from "skein";
import type { ScriptedTurn } from "skein/testing";
import { z } from "zod";

/**
 * `npm run bench` builds first: measure that build, dist/. Under tsx the specifier "skein" maps to
 * src/ (tsconfig "paths"), and tsx's transform wraps every named closure in a `__name()` call,
 * which about doubles the engine's cost per call; plain dist/ is what users run.
 */
const dist = (path: string) => new URL(`../dist/${path}`, import.meta.url).href;
const { createBareAgent, PARALLEL_CALLS_HINT, tool } = (await import(dist("index.js")).catch(
  missingBuild,
)) as typeof import("skein");
const { scriptedModel } = (await import(dist("testing/index.js")).catch(
  missingBuild,
)) as typeof import("skein/testing");

function missingBuild(error: unknown): never {
  console.error("bench: dist/ is missing or broken; run `npm run bench` (it builds first).");
  throw error;
}

// ---------------------------------------------------------------- clocks

/** CPU time of this process, in ms (user + system, every thread: GC helpers included). */
function cpuNow(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1_000;
}

// A full collection before each timed run, outside the clock, so no run pays for the last one's garbage.
setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The median, and half the interquartile range as a measure of the noise around it. */
function spread(values: number[]): { median: number; noise: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (fraction: number) => sorted[Math.round(fraction * (sorted.length - 1))]!;
  return { median: median(values), noise: (at(0.75) - at(0.25)) / 2 };
}

/** Runs `pair` `warmup + repeats` times, alternating which side goes first; keeps the repeats. */
async function paired<T>(
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

// ---------------------------------------------------------------- the model and the baseline loop

/**
 * A model (the scripted one unless another is given), timed: `enter[i]` is when model call i
 * began, `inside[i]` the time spent inside its stream (mostly the deep copy of the request).
 */
interface TimedModel extends Model {
  enter: number[];
  inside: number[];
}

function timedModel(script: ScriptedTurn[], inner: Model = scriptedModel(script)): TimedModel {
  const enter: number[] = [];
  const inside: number[] = [];
  return {
    provider: inner.provider,
    modelId: inner.modelId,
    enter,
    inside,
    async *stream(request, options) {
      let spent = 0;
      let start = performance.now();
      enter.push(start);
      const iterator = inner.stream(request, options)[Symbol.asyncIterator]();
      try {
        while (true) {
          const step = await iterator.next();
          spent += performance.now() - start;
          if (step.done) return;
          yield step.value;
          start = performance.now();
        }
      } finally {
        inside.push(spent);
      }
    },
  };
}

/**
 * For a diagnostic only: the same turns, played without the scripted model's deep copy of each
 * request and without keeping the copies, so that the engine's heap stays small.
 */
function replayModel(script: ScriptedTurn[]): Model {
  let index = 0;
  return {
    provider: "replay",
    modelId: "replay",
    async *stream() {
      const turn = script[index++]!;
      const content: ContentBlock[] = turn.text ? [{ type: "text", text: turn.text }] : [];
      for (const call of turn.toolCalls ?? []) {
        const block = {
          type: "tool_use" as const,
          id: call.id!,
          name: call.name,
          input: call.input,
        };
        content.push(block);
        yield { type: "tool_call", id: block.id, name: block.name, input: block.input };
      }
      const stopReason = turn.toolCalls ? "tool_use" : "end_turn";
      yield { type: "message", message: { role: "assistant", content }, stopReason };
    },
  };
}

type Handler = (input: any) => Promise<unknown>;

/** The least a tool loop can do: call the model, run its calls with Promise.all, push results. */
async function baselineRun(options: {
  model: Model;
  handlers: Record<string, Handler>;
  tools: ToolDefinition[];
}): Promise<Message[]> {
  const { model, handlers } = options;
  // The system prompt and tool list skein sends, so that the model copies the same request.
  const system = PARALLEL_CALLS_HINT;
  const tools: ModelToolSpec[] = options.tools.map((definition) => ({
    name: definition.name,
    description: definition.description,
    input_schema: definition.inputSchema,
  }));
  const signal = new AbortController().signal;
  const messages: Message[] = [{ role: "user", content: "go" }];
  while (true) {
    let reply: Message | undefined;
    for await (const event of model.stream(
      { system, messages: messages.slice(), tools },
      { signal },
    )) {
      if (event.type !== "message") continue;
      reply = event.message;
      break;
    }
    messages.push(reply!);
    const calls = (reply!.content as ContentBlock[]).filter(
      (block): block is ToolUseBlock => block.type === "tool_use",
    );
    if (calls.length === 0) return messages;
    const results = await Promise.all(
      calls.map(
        async (call): Promise<ToolResultBlock> => ({
          type: "tool_result",
          tool_use_id: call.id,
          content: (await handlers[call.name]!(call.input)) as string,
          is_error: false,
        }),
      ),
    );
    messages.push({ role: "user", content: results });
  }
}

// ---------------------------------------------------------------- the tools

/** A cheap tool: validation and the engine are all there is to measure. */
const echoHandler = async ({ n }: { n: number }) => String(n);
const echo = tool("echo", "Echo a number.", z.object({ n: z.number() }), echoHandler, {
  isConcurrencySafe: () => true,
});

const waitHandler = async () => {
  await sleep(50);
  return "ok";
};
const wait = tool("wait", "Wait 50 ms.", z.object({ i: z.number() }), waitHandler, {
  isConcurrencySafe: () => true,
});

/** `turns` turns of `callsPerTurn` calls, then a closing text turn. */
function toolTurns(turns: number, callsPerTurn: number, name: "echo" | "wait"): ScriptedTurn[] {
  const script: ScriptedTurn[] = [];
  for (let turn = 0; turn < turns; turn++) {
    const toolCalls = [];
    for (let call = 0; call < callsPerTurn; call++)
      toolCalls.push({
        id: `c${turn}_${call}`,
        name,
        input: name === "echo" ? { n: call } : { i: call },
      });
    script.push({ toolCalls });
  }
  script.push({ text: "done" });
  return script;
}

const runSkein = (model: Model) =>
  createBareAgent({ model, tools: [echo], maxTurns: 1_000 }).run("go");
const runBaseline = (model: Model) =>
  baselineRun({ model, handlers: { echo: echoHandler }, tools: [echo] });

// ---------------------------------------------------------------- (1) overhead per tool call

interface Timing {
  cpuMs: number;
  wallMs: number;
  /** Wall time outside the model's stream: the run minus the request copies. */
  outsideMs: number;
}

/**
 * Per repeat, `runs` runs of `turns` turns of `callsPerTurn` echo calls; each run's model and
 * agent are built off the clock.
 */
async function overheadPerCall(options: {
  runs: number;
  turns: number;
  callsPerTurn: number;
  repeats: number;
  warmup: number;
}) {
  const script = toolTurns(options.turns, options.callsPerTurn, "echo");
  const calls = options.runs * options.turns * options.callsPerTurn;
  const repeat = async (run: (model: Model) => Promise<unknown>): Promise<Timing> => {
    const total = { cpuMs: 0, wallMs: 0, outsideMs: 0 };
    for (let index = 0; index < options.runs; index++) {
      const model = timedModel(script);
      collectGarbage();
      const cpu = cpuNow();
      const start = performance.now();
      await run(model);
      const wallMs = performance.now() - start;
      total.cpuMs += cpuNow() - cpu;
      total.wallMs += wallMs;
      total.outsideMs += wallMs - sum(model.inside);
    }
    return total;
  };
  const sample = await paired(options.repeats, options.warmup, {
    skein: () => repeat(runSkein),
    baseline: () => repeat(runBaseline),
  });
  /** The paired differences, per call, in µs: their median and half their interquartile range. */
  const perCall = (key: keyof Timing) =>
    spread(
      sample.skein.map(
        (timing, index) => ((timing[key] - sample.baseline[index]![key]) * 1_000) / calls,
      ),
    );
  return {
    skeinMs: median(sample.skein.map((timing) => timing.wallMs)),
    baselineMs: median(sample.baseline.map((timing) => timing.wallMs)),
    cpu: perCall("cpuMs"),
    wall: perCall("wallMs"),
    outside: perCall("outsideMs"),
  };
}

// ---------------------------------------------------------------- (2) bounded fan-out

/** 16 calls of a 50 ms tool at maxConcurrency 4: ideally four waves, 200 ms of wall time. */
async function fanOut(repeats: number) {
  const script = toolTurns(1, 16, "wait");
  const sample = await paired(repeats, 1, {
    skein: async () => {
      const agent = createBareAgent({
        model: scriptedModel(script),
        tools: [wait],
        toolConcurrency: { mode: "safe", maxConcurrency: 4 },
      });
      collectGarbage();
      const start = performance.now();
      await agent.run("go");
      return performance.now() - start;
    },
    // What the timers alone allow: the same 16 handlers through a plain pool of 4 workers.
    baseline: async () => {
      collectGarbage();
      const start = performance.now();
      let next = 0;
      const worker = async () => {
        while (next < 16) {
          next++;
          await waitHandler();
        }
      };
      await Promise.all([worker(), worker(), worker(), worker()]);
      return performance.now() - start;
    },
  });
  return { skeinMs: median(sample.skein), poolMs: median(sample.baseline) };
}

// ---------------------------------------------------------------- (3) per-turn cost over a long run

/**
 * A 200-turn run with one echo call per turn. Turn k lasts from model call k-1 to model call k;
 * the loop's own share of it is that minus the time inside model call k-1 (the request's copy).
 * A window's figure is its median turn: a turn that met a GC pause (more likely late in the run,
 * where the scripted model holds copies of every request) or a preemption does not count.
 */
async function perTurnCost(repeats: number) {
  const turns = 200;
  const script = toolTurns(turns, 1, "echo");
  const perTurn = async (run: (model: Model) => Promise<unknown>, replay = false) => {
    const model = timedModel(script, replay ? replayModel(script) : undefined);
    collectGarbage();
    await run(model);
    const outside: number[] = [];
    for (let turn = 1; turn <= turns; turn++)
      outside.push(model.enter[turn]! - model.enter[turn - 1]! - model.inside[turn - 1]!);
    return { outside };
  };
  const sample = await paired(repeats, 5, {
    skein: () => perTurn(runSkein),
    baseline: () => perTurn(runBaseline),
  });
  // Diagnostic: the same runs with a model that neither copies nor keeps requests.
  const replayed = await paired(repeats, 5, {
    skein: () => perTurn(runSkein, true),
    baseline: () => perTurn(runBaseline, true),
  });
  /** The median turn of turns from..to (1-based), in µs. */
  const medianTurn = (values: number[], from: number, to: number) =>
    median(values.slice(from - 1, to)) * 1_000;
  const window = (runs: typeof sample, from: number, to: number) => ({
    skeinUs: median(runs.skein.map((run) => medianTurn(run.outside, from, to))),
    baselineUs: median(runs.baseline.map((run) => medianTurn(run.outside, from, to))),
    engine: spread(
      runs.skein.map(
        (run, index) =>
          medianTurn(run.outside, from, to) - medianTurn(runs.baseline[index]!.outside, from, to),
      ),
    ),
  });
  const early = window(sample, 1, 20);
  const late = window(sample, 181, 200);
  const replayEarly = window(replayed, 1, 20);
  const replayLate = window(replayed, 181, 200);
  return {
    early,
    late,
    ratio: late.engine.median / early.engine.median,
    replay: {
      earlyUs: replayEarly.engine.median,
      lateUs: replayLate.engine.median,
      ratio: replayLate.engine.median / replayEarly.engine.median,
    },
  };
}

// ---------------------------------------------------------------- report

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const line = (row: string[]) =>
    `| ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(" | ")} |`;
  const rule = `|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`;
  return [line(rows[0]!), rule, ...rows.slice(1).map(line)].join("\n");
}

const verdict = (pass: boolean) => (pass ? "PASS" : "FAIL");
const ms = (value: number) => `${value.toFixed(1)} ms`;
const us = (value: number) => `${value.toFixed(1)} µs`;

console.log(
  `skein bench: node ${process.version}, ${process.platform}/${process.arch}, measuring ${dist("index.js")}`,
);
console.log("Medians of paired, interleaved repeats of skein and the baseline loop (wall time).\n");

const short = await overheadPerCall({
  runs: 10,
  turns: 20,
  callsPerTurn: 10,
  repeats: 21,
  warmup: 3,
});
const long = await overheadPerCall({
  runs: 1,
  turns: 200,
  callsPerTurn: 10,
  repeats: 9,
  warmup: 2,
});
const fan = await fanOut(7);
const turns = await perTurnCost(41);
const fanRatio = fan.skeinMs / 200;
const noisy = ({ median, noise }: { median: number; noise: number }, unit: string) =>
  `${us(median)} ± ${noise.toFixed(1)}${unit}`;

console.log(
  table([
    ["measure", "skein", "baseline", "result", "target", ""],
    [
      "(1) overhead per call: 10 runs x 20 turns x 10 calls",
      ms(short.skeinMs),
      ms(short.baselineMs),
      noisy(short.wall, " / call"),
      "< 30 µs",
      verdict(short.wall.median < 30),
    ],
    [
      "(1) overhead per call: 1 run x 200 turns x 10 calls",
      ms(long.skeinMs),
      ms(long.baselineMs),
      noisy(long.wall, " / call"),
      "(noise)",
      "",
    ],
    [
      "    the same, outside the model's stream",
      "",
      "",
      noisy(long.outside, " / call"),
      "< 30 µs",
      verdict(long.outside.median < 30),
    ],
    [
      "(2) fan-out: 16 x 50 ms, maxConcurrency 4 (wall)",
      ms(fan.skeinMs),
      `${ms(fan.poolMs)} (4-worker pool)`,
      `${fanRatio.toFixed(3)} x ideal 200 ms`,
      "<= 1.05 x",
      verdict(fanRatio <= 1.05),
    ],
    [
      "(3) per turn outside the model: turns 1-20",
      us(turns.early.skeinUs),
      us(turns.early.baselineUs),
      `engine ${noisy(turns.early.engine, "")}`,
      "",
      "",
    ],
    [
      "(3) per turn outside the model: turns 181-200",
      us(turns.late.skeinUs),
      us(turns.late.baselineUs),
      `engine ${noisy(turns.late.engine, "")}`,
      "",
      "",
    ],
    [
      "(3) engine cost, turns 181-200 / turns 1-20",
      "",
      "",
      `${turns.ratio.toFixed(2)} x`,
      "<= 1.5 x",
      verdict(turns.ratio <= 1.5),
    ],
  ]),
);
console.log(`
± is half the interquartile range of the paired differences. CPU-time cross-check of (1):
${noisy(short.cpu, " / call")} (short runs), ${noisy(long.cpu, " / call")} (200-turn run).
In a 200-turn run, the scripted model's deep copy of the growing transcript is nearly all the time,
and its noise swamps a per-call difference; outside the model's stream, it cancels out.
Diagnostic for (3): with a model that neither copies nor keeps requests, the engine costs
${us(turns.replay.earlyUs)} per turn at turns 1-20 and ${us(turns.replay.lateUs)} at turns 181-200 (${turns.replay.ratio.toFixed(2)} x): what grows above
is the cost of working in the large heap the scripted model's kept copies make.`);
