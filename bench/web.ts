/**
 * `npm run bench -- web`: what the UI message stream costs over `agent.stream()` itself. A run of
 * 5 turns, each streaming 200 text deltas (a few characters each, as providers send them) and then
 * one tool call, except the last. Both sides run the same agent on the same model in this process
 * and consume every event; the difference is the conversion.
 *
 * - The target row: `toUIMessageStreamResponse(agent.stream())`'s body read to its last byte (the
 *   SSE a page receives: chunks, JSON, UTF-8, the web stream) against a plain `for await` over
 *   `agent.stream()`. The body crosses its `ReadableStream` a few times per run (batches), so the
 *   baseline crosses none: a baseline that crossed one per event would cost more than the
 *   conversion it is meant to expose.
 * - `toUIMessageStream` (one chunk object per read) against `agent.stream()` read through
 *   `ReadableStream.from`: both cross a web stream once per item, like with like.
 *
 * CPU time of this process is the measure (the conversion is CPU work on one thread; on a machine
 * shared with other loads, wall time measures the scheduler); wall time is shown beside it.
 * Reported: medians of paired, interleaved samples of 5 runs each (a full collection before each
 * sample, outside the clock), per run, and their ratio.
 */
import { z } from "zod";
import {
  collectGarbage,
  cpuNow,
  median,
  paired,
  skein,
  TABLE_HEADER,
  us,
  verdict,
} from "./support.ts";

const { createBareAgent, tool } = skein;
const { toUIMessageStream, toUIMessageStreamResponse } = (await import(
  new URL("../dist/web/index.js", import.meta.url).href
)) as typeof import("skein/web");

type Model = import("skein").Model;
type ModelStreamEvent = import("skein").ModelStreamEvent;

const TURNS = 5;
const DELTAS = 200;
const REPEATS = 21;
const WARMUP = 3;
/** Runs per timed sample: a server's runs are warm; one run right after a full collection is not. */
const RUNS = 5;

const echo = tool("echo", "Echo", z.object({ n: z.number() }), async ({ n }) => `${n}`);
const WORDS = [
  "The ",
  "weather ",
  "in ",
  "Oslo ",
  "is ",
  "sunny, ",
  "with ",
  'a "light" ',
  "breeze.\n",
];

/** Streams DELTAS text deltas per turn, then a tool call (no call on the last turn). */
function streamingModel(): Model {
  return {
    provider: "bench",
    modelId: "deltas",
    async *stream(request): AsyncGenerator<ModelStreamEvent> {
      const turn = request.messages.filter((message) => message.role === "assistant").length;
      let text = "";
      for (let index = 0; index < DELTAS; index++) {
        const delta = WORDS[index % WORDS.length]!;
        text += delta;
        yield { type: "text_delta", text: delta };
      }
      const content: import("skein").ContentBlock[] = [{ type: "text", text }];
      if (turn < TURNS - 1) {
        const block = {
          type: "tool_use" as const,
          id: `t${turn}`,
          name: "echo",
          input: { n: turn },
        };
        content.push(block);
        yield { type: "tool_call", id: block.id, name: "echo", input: block.input };
      }
      yield {
        type: "message",
        message: { role: "assistant", content },
        stopReason: turn < TURNS - 1 ? "tool_use" : "end_turn",
      };
    },
  };
}

const agent = () => createBareAgent({ model: streamingModel(), tools: [echo] });

interface Timing {
  cpuMs: number;
  wallMs: number;
}

async function timed(consume: () => Promise<void>): Promise<Timing> {
  collectGarbage();
  const cpu = cpuNow();
  const started = performance.now();
  for (let run = 0; run < RUNS; run++) await consume();
  return { cpuMs: (cpuNow() - cpu) / RUNS, wallMs: (performance.now() - started) / RUNS };
}

/** The baseline: every event of agent.stream(). */
const events = () =>
  timed(async () => {
    let count = 0;
    for await (const _event of agent().stream("go")) count++;
    if (count < TURNS * DELTAS) throw new Error("bench: the run streamed too few events");
  });

/** The same events, each read through a web stream. */
const eventsThroughStream = () =>
  timed(async () => {
    let count = 0;
    for await (const _event of ReadableStream.from(agent().stream("go"))) count++;
    if (count < TURNS * DELTAS) throw new Error("bench: the run streamed too few events");
  });

/** Every byte of the SSE body a page receives. */
const sseBody = () =>
  timed(async () => {
    const body = toUIMessageStreamResponse(agent().stream("go")).body!;
    let bytes = 0;
    for await (const chunk of body) bytes += chunk.byteLength;
    if (bytes < TURNS * DELTAS * 40) throw new Error("bench: the UI stream was too short");
  });

/** Every chunk object of toUIMessageStream. */
const uiChunks = () =>
  timed(async () => {
    let count = 0;
    for await (const _chunk of toUIMessageStream(agent().stream("go"))) count++;
    if (count < TURNS * DELTAS) throw new Error("bench: the UI stream was too short");
  });

function rows(name: string, times: { skein: Timing[]; baseline: Timing[] }): string[][] {
  const row = (key: keyof Timing, label: string, target: boolean) => {
    const ui = median(times.skein.map((timing) => timing[key]));
    const plain = median(times.baseline.map((timing) => timing[key]));
    const ratio = ui / plain;
    return [
      `${name}, ${label}`,
      us(ui * 1000),
      us(plain * 1000),
      `${ratio.toFixed(3)} x`,
      target ? "≤ 1.10 x" : "(shown)",
      target ? verdict(ratio <= 1.1) : "",
    ];
  };
  return [row("cpuMs", "CPU", true), row("wallMs", "wall", false)];
}

export async function webBench(): Promise<{ rows: string[][]; notes: string }> {
  const body = await paired(REPEATS, WARMUP, { skein: sseBody, baseline: events });
  const chunks = await paired(REPEATS, WARMUP, { skein: uiChunks, baseline: eventsThroughStream });
  return {
    rows: [
      TABLE_HEADER,
      ...rows(
        `a run of ${TURNS * DELTAS} deltas: toUIMessageStreamResponse's body vs agent.stream()`,
        body,
      ),
      ...rows("toUIMessageStream's chunks vs agent.stream() through ReadableStream.from", chunks),
    ],
    notes: `Medians of ${REPEATS} paired, interleaved samples (after ${WARMUP} warm-ups) of ${RUNS} runs each (per run shown), a run being ${TURNS} turns of ${DELTAS} text deltas and one tool call each, in this process. First pair: every byte of toUIMessageStreamResponse's body (SSE) against a for-await over agent.stream(). Second pair: every chunk of toUIMessageStream against agent.stream() read through ReadableStream.from (one web-stream read per item on both sides). CPU time of the process is the measure; wall time is shown.`,
  };
}
