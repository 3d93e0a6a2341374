/**
 * `npm run bench -- web`: what the UI message stream costs over `agent.stream()` itself. A run of
 * 5 turns, each streaming 200 text deltas (a few characters each, as providers send them) and then
 * one tool call, except the last: the baseline consumes `agent.stream()`'s events; skein's side
 * reads every byte of `toUIMessageStreamResponse(agent.stream())`'s body, the SSE a page receives.
 * Reported: the median of paired, interleaved runs of each, and their ratio.
 */
import { z } from "zod";
import { collectGarbage, median, paired, skein, TABLE_HEADER, us, verdict } from "./support.ts";

const { createBareAgent, tool } = skein;
const { toUIMessageStreamResponse } = (await import(
  new URL("../dist/web/index.js", import.meta.url).href
)) as typeof import("skein/web");

type Model = import("skein").Model;
type ModelStreamEvent = import("skein").ModelStreamEvent;

const TURNS = 5;
const DELTAS = 200;
const REPEATS = 31;
const WARMUP = 5;

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

async function events(): Promise<number> {
  collectGarbage();
  const started = performance.now();
  let count = 0;
  for await (const _event of agent().stream("go")) count++;
  if (count < TURNS * DELTAS) throw new Error("bench: the run streamed too few events");
  return performance.now() - started;
}

async function uiStream(): Promise<number> {
  collectGarbage();
  const started = performance.now();
  const body = toUIMessageStreamResponse(agent().stream("go")).body!;
  let bytes = 0;
  for await (const chunk of body) bytes += chunk.byteLength;
  if (bytes < TURNS * DELTAS * 40) throw new Error("bench: the UI stream was too short");
  return performance.now() - started;
}

export async function webBench(): Promise<{ rows: string[][]; notes: string }> {
  const times = await paired(REPEATS, WARMUP, { skein: uiStream, baseline: events });
  const ui = median(times.skein);
  const plain = median(times.baseline);
  const ratio = ui / plain;
  return {
    rows: [
      TABLE_HEADER,
      [
        `a run of ${TURNS * DELTAS} deltas: UI message stream (SSE bytes) vs agent.stream()`,
        us(ui * 1000),
        us(plain * 1000),
        `${ratio.toFixed(3)} x`,
        "≤ 1.10 x",
        verdict(ratio <= 1.1),
      ],
    ],
    notes: `Medians of ${REPEATS} paired, interleaved runs (after ${WARMUP} warm-ups) of ${TURNS} turns of ${DELTAS} text deltas and one tool call each; the baseline consumes agent.stream()'s events, skein's side every byte of toUIMessageStreamResponse's body.`,
  };
}
