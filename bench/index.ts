/**
 * `npm run bench`: what skein's engine costs on top of the tools and the model, in one run.
 *
 * Each figure is measured against a baseline loop written below: the same scripted model, the
 * same handlers, and nothing else (no validation, no events, no scheduling, no hooks). The
 * scripted model deep-copies every request in both, so that cost cancels out. Machines are
 * shared and noisy: every figure is a median over repeats, after a warm-up, with the skein and
 * baseline runs interleaved so that drift hits both alike.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import {
  type ContentBlock,
  createBareAgent,
  type Message,
  type Model,
  type ModelToolSpec,
  PARALLEL_CALLS_HINT,
  type ToolDefinition,
  type ToolResultBlock,
  type ToolUseBlock,
  tool,
} from "skein";
import { type ScriptedTurn, scriptedModel } from "skein/testing";
import { z } from "zod";

type Handler = (input: any) => Promise<unknown>;

// ---------------------------------------------------------------- the baseline loop

/** The least a tool loop can do: call the model, run its calls with Promise.all, push results. */
async function baselineRun(options: {
  model: Model;
  handlers: Record<string, Handler>;
  system: string;
  tools: ModelToolSpec[];
}): Promise<Message[]> {
  const { model, handlers, system, tools } = options;
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

function specOf(definition: ToolDefinition): ModelToolSpec {
  return {
    name: definition.name,
    description: definition.description,
    input_schema: definition.inputSchema,
  };
}

/**
 * The scripted model, timed: `enter[i]` is when model call i began, `inside[i]` the time spent
 * inside its stream (the deep copy of the request, mostly). Time outside the model is the loop's.
 */
interface TimedModel extends Model {
  enter: number[];
  inside: number[];
}

function timedModel(script: ScriptedTurn[]): TimedModel {
  const inner = scriptedModel(script);
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

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

// A full collection before each timed run, outside the clock, so no run pays for the last one's garbage.
setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

// ---------------------------------------------------------------- statistics

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** One timed run: its wall time, and the part of it spent outside the model's stream. */
interface Timing {
  wallMs: number;
  outsideModelMs: number;
}

async function timed(model: TimedModel, run: () => Promise<unknown>): Promise<Timing> {
  collectGarbage();
  const start = performance.now();
  await run();
  const wallMs = performance.now() - start;
  return { wallMs, outsideModelMs: wallMs - sum(model.inside) };
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

function toolTurns(turns: number, callsPerTurn: number, name: string): ScriptedTurn[] {
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

// ---------------------------------------------------------------- (1) overhead per tool call

interface OverheadFigures {
  skeinMs: number;
  baselineMs: number;
  /** (skein - baseline) / calls, wall time; median of the paired repeats. */
  perCallUs: number;
  /** The same with the time inside the model's stream left out of both. */
  perCallOutsideModelUs: number;
}

/** `runs` runs of `turns` turns of `callsPerTurn` echo calls each, per repeat. */
async function overheadPerCall(options: {
  runs: number;
  turns: number;
  callsPerTurn: number;
  repeats: number;
}): Promise<OverheadFigures> {
  const script = toolTurns(options.turns, options.callsPerTurn, "echo");
  const calls = options.runs * options.turns * options.callsPerTurn;
  // The baseline sends the system prompt and tool list skein sends, so the model copies the same.
  const system = PARALLEL_CALLS_HINT;
  const tools = [specOf(echo)];
  const repeat = async (run: (model: TimedModel) => Promise<unknown>): Promise<Timing> => {
    const total = { wallMs: 0, outsideModelMs: 0 };
    for (let index = 0; index < options.runs; index++) {
      const model = timedModel(script);
      const timing = await timed(model, () => run(model));
      total.wallMs += timing.wallMs;
      total.outsideModelMs += timing.outsideModelMs;
    }
    return total;
  };
  const sample = await paired(options.repeats, 3, {
    skein: () =>
      repeat((model) => createBareAgent({ model, tools: [echo], maxTurns: 1_000 }).run("go")),
    baseline: () =>
      repeat((model) => baselineRun({ model, handlers: { echo: echoHandler }, system, tools })),
  });
  const perCall = (key: keyof Timing) =>
    median(sample.skein.map((timing, index) => timing[key] - sample.baseline[index]![key])) *
    (1_000 / calls);
  return {
    skeinMs: median(sample.skein.map((timing) => timing.wallMs)),
    baselineMs: median(sample.baseline.map((timing) => timing.wallMs)),
    perCallUs: perCall("wallMs"),
    perCallOutsideModelUs: perCall("outsideModelMs"),
  };
}

// ---------------------------------------------------------------- (2) bounded fan-out

/** 16 calls of a 50 ms tool at maxConcurrency 4: ideally four waves, 200 ms. */
async function fanOut(repeats: number): Promise<{ skeinMs: number; poolMs: number }> {
  const script = toolTurns(1, 16, "wait");
  const sample = await paired(repeats, 1, {
    skein: async () => {
      const model = timedModel(script);
      const agent = createBareAgent({
        model,
        tools: [wait],
        toolConcurrency: { mode: "safe", maxConcurrency: 4 },
      });
      return (await timed(model, () => agent.run("go"))).wallMs;
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

interface TurnWindow {
  /** Mean time per turn in the window, outside the model's stream (µs). */
  skeinUs: number;
  baselineUs: number;
  /** skein minus baseline: the engine's own cost per turn (µs). */
  engineUs: number;
  /** The same from whole turn times (model included), as a cross-check (µs). */
  engineWallUs: number;
}

/**
 * A 200-turn run with one echo call per turn. Turn k lasts from model call k-1 to model call k;
 * its time outside the model is that minus the time inside model call k-1.
 */
async function perTurnCost(repeats: number): Promise<{
  early: TurnWindow;
  late: TurnWindow;
  ratio: number;
  ratioWall: number;
}> {
  const turns = 200;
  const script = toolTurns(turns, 1, "echo");
  const system = PARALLEL_CALLS_HINT;
  const tools = [specOf(echo)];
  const perTurn = (model: TimedModel) => {
    const wall: number[] = [];
    const outside: number[] = [];
    for (let turn = 1; turn <= turns; turn++) {
      const cycle = model.enter[turn]! - model.enter[turn - 1]!;
      wall.push(cycle);
      outside.push(cycle - model.inside[turn - 1]!);
    }
    return { wall, outside };
  };
  const sample = await paired(repeats, 5, {
    skein: async () => {
      const model = timedModel(script);
      await timed(model, () =>
        createBareAgent({ model, tools: [echo], maxTurns: 1_000 }).run("go"),
      );
      return perTurn(model);
    },
    baseline: async () => {
      const model = timedModel(script);
      await timed(model, () =>
        baselineRun({ model, handlers: { echo: echoHandler }, system, tools }),
      );
      return perTurn(model);
    },
  });
  /** Mean over turns from..to (1-based), in µs. */
  const mean = (values: number[], from: number, to: number) =>
    (sum(values.slice(from - 1, to)) / (to - from + 1)) * 1_000;
  const differences = (key: "wall" | "outside", from: number, to: number) =>
    sample.skein.map(
      (run, index) => mean(run[key], from, to) - mean(sample.baseline[index]![key], from, to),
    );
  const window = (from: number, to: number): TurnWindow => ({
    skeinUs: median(sample.skein.map((run) => mean(run.outside, from, to))),
    baselineUs: median(sample.baseline.map((run) => mean(run.outside, from, to))),
    engineUs: median(differences("outside", from, to)),
    engineWallUs: median(differences("wall", from, to)),
  });
  const early = window(1, 20);
  const late = window(181, 200);
  return {
    early,
    late,
    ratio: late.engineUs / early.engineUs,
    ratioWall: late.engineWallUs / early.engineWallUs,
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
  `skein bench: node ${process.version}, ${process.platform}/${process.arch}; "skein" is ${import.meta.resolve("skein")}`,
);
console.log(
  "Medians of paired repeats (skein and the baseline loop of bench/index.ts, interleaved).\n",
);

const overhead = await overheadPerCall({ runs: 10, turns: 20, callsPerTurn: 10, repeats: 15 });
const longRun = await overheadPerCall({ runs: 1, turns: 200, callsPerTurn: 10, repeats: 9 });
const fan = await fanOut(7);
const turns = await perTurnCost(31);
const fanRatio = fan.skeinMs / 200;

console.log(
  table([
    ["measure", "skein", "baseline", "result", "target", ""],
    [
      "(1) overhead per call, 10 runs x 20 turns x 10 calls",
      ms(overhead.skeinMs),
      ms(overhead.baselineMs),
      `${us(overhead.perCallUs)} / call`,
      "< 30 µs",
      verdict(overhead.perCallUs < 30),
    ],
    [
      "    same, outside the model's stream",
      "",
      "",
      `${us(overhead.perCallOutsideModelUs)} / call`,
      "",
      "",
    ],
    [
      "(1) overhead per call, 1 run x 200 turns x 10 calls",
      ms(longRun.skeinMs),
      ms(longRun.baselineMs),
      `${us(longRun.perCallUs)} / call`,
      "",
      "",
    ],
    [
      "    same, outside the model's stream",
      "",
      "",
      `${us(longRun.perCallOutsideModelUs)} / call`,
      "< 30 µs",
      verdict(longRun.perCallOutsideModelUs < 30),
    ],
    [
      "(2) fan-out 16 x 50 ms, maxConcurrency 4 (ideal 200 ms)",
      ms(fan.skeinMs),
      `${ms(fan.poolMs)} (4-worker pool)`,
      `${fanRatio.toFixed(3)} x ideal`,
      "<= 1.05 x",
      verdict(fanRatio <= 1.05),
    ],
    [
      "(3) time per turn outside the model, turns 1-20",
      us(turns.early.skeinUs),
      us(turns.early.baselineUs),
      `engine ${us(turns.early.engineUs)} / turn`,
      "",
      "",
    ],
    [
      "(3) time per turn outside the model, turns 181-200",
      us(turns.late.skeinUs),
      us(turns.late.baselineUs),
      `engine ${us(turns.late.engineUs)} / turn`,
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
console.log(
  `\nCross-check of (3) from whole turn times (model included, so the request copy's noise too): engine ${us(turns.early.engineWallUs)} / turn early, ${us(turns.late.engineWallUs)} late, ratio ${turns.ratioWall.toFixed(2)} x.`,
);
console.log(
  "(1) for 200-turn runs is judged outside the model: each request's deep copy grows with the transcript and its noise swamps the difference.",
);
