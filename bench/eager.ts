/**
 * W5, eager execution: one streamed Anthropic reply whose four concurrency-safe tool calls (500 ms
 * each) complete in the stream at 100, 200, 300 and 400 ms while the reply's text goes on until
 * 1,000 ms. Measured: the time from the request to the last tool result, skein (which starts each
 * concurrency-safe call when its block is complete) against a plain fetch loop that runs the four
 * calls at once after the stream ends. Target: at most 0.7 x; the ideal is (400 + 500) / (1,000 +
 * 500) = 0.6 x.
 *
 * The stream needs a timing the mock server's even `gapMs` cannot give, so a small server here
 * writes the Anthropic events at fixed times from the request's arrival; the second request of a
 * run (the tool results) gets the final text at once. Both sides then finish their runs.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { createParser } from "eventsource-parser";
import { API_KEY, MODEL } from "./http-workload.ts";
import { median, paired, skein, verdict } from "./support.ts";
import { weatherInput } from "./weather-schema.ts";

const TARGET = 0.7;
const TOOL_MS = 500;
const CALLS_DONE_AT = [100, 200, 300, 400];
const TEXT_UNTIL = 1_000;
const TEXT_EVERY = 50;
const PROMPT = "Look up the weather in four cities.";
const CITIES = ["Paris", "Lisbon", "Oslo", "Vienna"];
const FINAL = "All four cities are sunny.";
const TOOL = { name: "get_weather", description: "Get the current weather in a city." };

type Timed = { at: number; event: string; data: unknown };

/** The first turn's events: four tool_use blocks complete at CALLS_DONE_AT, then text until TEXT_UNTIL. */
function firstTurn(): Timed[] {
  const events: Timed[] = [
    {
      at: 0,
      event: "message_start",
      data: {
        type: "message_start",
        message: {
          id: "msg_w5_1",
          type: "message",
          role: "assistant",
          model: MODEL,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 20, output_tokens: 1 },
        },
      },
    },
  ];
  CALLS_DONE_AT.forEach((doneAt, index) => {
    const block = { type: "tool_use", id: `toolu_w5_${index}`, name: TOOL.name, input: {} };
    const json = JSON.stringify({ city: CITIES[index] });
    events.push(
      {
        at: doneAt - 40,
        event: "content_block_start",
        data: { type: "content_block_start", index, content_block: block },
      },
      {
        at: doneAt - 20,
        event: "content_block_delta",
        data: {
          type: "content_block_delta",
          index,
          delta: { type: "input_json_delta", partial_json: json },
        },
      },
      {
        at: doneAt,
        event: "content_block_stop",
        data: { type: "content_block_stop", index },
      },
    );
  });
  const text = CALLS_DONE_AT.length;
  const last = CALLS_DONE_AT.at(-1)!;
  events.push({
    at: last,
    event: "content_block_start",
    data: { type: "content_block_start", index: text, content_block: { type: "text", text: "" } },
  });
  for (let at = last + TEXT_EVERY; at <= TEXT_UNTIL; at += TEXT_EVERY) {
    events.push({
      at,
      event: "content_block_delta",
      data: {
        type: "content_block_delta",
        index: text,
        delta: { type: "text_delta", text: "I am checking the forecast for each of them. " },
      },
    });
  }
  events.push(
    {
      at: TEXT_UNTIL,
      event: "content_block_stop",
      data: { type: "content_block_stop", index: text },
    },
    {
      at: TEXT_UNTIL,
      event: "message_delta",
      data: {
        type: "message_delta",
        delta: { stop_reason: "tool_use", stop_sequence: null },
        usage: { output_tokens: 120 },
      },
    },
    { at: TEXT_UNTIL, event: "message_stop", data: { type: "message_stop" } },
  );
  return events;
}

function finalTurn(): Timed[] {
  const message = {
    id: "msg_w5_2",
    type: "message",
    role: "assistant",
    model: MODEL,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 80, output_tokens: 1 },
  };
  const at = 0;
  return [
    { at, event: "message_start", data: { type: "message_start", message } },
    {
      at,
      event: "content_block_start",
      data: { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    },
    {
      at,
      event: "content_block_delta",
      data: {
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text: FINAL },
      },
    },
    { at, event: "content_block_stop", data: { type: "content_block_stop", index: 0 } },
    {
      at,
      event: "message_delta",
      data: {
        type: "message_delta",
        delta: { stop_reason: "end_turn", stop_sequence: null },
        usage: { output_tokens: 8 },
      },
    },
    { at, event: "message_stop", data: { type: "message_stop" } },
  ];
}

/** Writes `events` at their times from `start` (absolute deadlines, so delays do not add up). */
async function play(response: ServerResponse, events: Timed[], start: number): Promise<void> {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const { at, event, data } of events) {
    const wait = start + at - performance.now();
    if (wait > 0) await sleep(wait);
    if (response.destroyed) return;
    response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }
  response.end();
}

async function timedServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    const start = performance.now();
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const turn = body.messages.filter((message: any) => message.role === "assistant").length;
      play(response, turn === 0 ? firstTurn() : finalTurn(), start).catch(() => response.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** When the last handler returned (performance.now()); runs are measured one at a time. */
let handlerDone = 0;

async function getWeather({ city }: { city: string }): Promise<string> {
  await sleep(TOOL_MS);
  handlerDone = performance.now();
  return `Sunny, 21 °C in ${city}.`;
}

interface Times {
  /** ms from the request to the last tool result the run sees (skein: the fourth `tool_end`). */
  lastResult: number;
  /** ms from the request to the last handler's return. */
  lastHandler: number;
}

/** skein: ms from the request to the fourth `tool_end`. */
async function skeinRun(agent: import("skein").Agent): Promise<Times> {
  const start = performance.now();
  let ended = 0;
  let lastResult = Number.NaN;
  let result: unknown;
  for await (const event of agent.stream(PROMPT)) {
    if (event.type === "tool_end" && ++ended === CALLS_DONE_AT.length)
      lastResult = performance.now() - start;
    if (event.type === "result") result = (event as { result?: unknown }).result;
  }
  if (ended !== CALLS_DONE_AT.length || result !== FINAL)
    throw new Error(`bench: W5's skein run ended with ${ended} tool results and ${String(result)}`);
  return { lastResult, lastHandler: lastHandler(start) };
}

function lastHandler(start: number): number {
  const at = handlerDone - start;
  handlerDone = 0;
  return at;
}

/** The plain loop: stream the reply, then run its calls at once; ms to the last result. */
async function plainRun(url: string): Promise<Times> {
  const headers = {
    "content-type": "application/json",
    accept: "text/event-stream",
    "anthropic-version": "2023-06-01",
    "x-api-key": API_KEY,
  };
  const tools = [
    {
      name: TOOL.name,
      description: TOOL.description,
      input_schema: { type: "object", properties: { city: { type: "string" } } },
    },
  ];
  const messages: any[] = [{ role: "user", content: PROMPT }];
  const start = performance.now();
  let lastResult = Number.NaN;
  while (true) {
    const response = await fetch(`${url}/v1/messages`, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: MODEL, max_tokens: 8192, messages, stream: true, tools }),
    });
    if (!response.ok || !response.body) throw new Error(`bench: HTTP ${response.status}`);
    const content: any[] = [];
    const json: string[] = [];
    const parser = createParser({
      onEvent: ({ data }) => {
        const event = JSON.parse(data);
        if (event.type === "content_block_start") {
          content[event.index] = { ...event.content_block };
          json[event.index] = "";
        } else if (event.type === "content_block_delta") {
          if (event.delta.type === "text_delta") content[event.index].text += event.delta.text;
          else json[event.index] += event.delta.partial_json;
        } else if (event.type === "content_block_stop") {
          const block = content[event.index];
          if (block.type === "tool_use") block.input = JSON.parse(json[event.index] || "{}");
        }
      },
    });
    const decoder = new TextDecoder();
    for await (const chunk of response.body) parser.feed(decoder.decode(chunk, { stream: true }));
    messages.push({ role: "assistant", content });
    const calls = content.filter((block) => block.type === "tool_use");
    if (calls.length === 0) {
      const text = content.map((block) => block.text ?? "").join("");
      if (text !== FINAL) throw new Error(`bench: W5's plain run: ${text}`);
      return { lastResult, lastHandler: lastHandler(start) };
    }
    const results = await Promise.all(
      calls.map(async (call) => ({
        type: "tool_result",
        tool_use_id: call.id,
        content: await getWeather(call.input),
      })),
    );
    lastResult = performance.now() - start;
    messages.push({ role: "user", content: results });
  }
}

export interface EagerResult {
  skeinMs: number;
  plainMs: number;
  ratios: number[];
  ratio: number;
  /** The same for the last handler's return. */
  handlerRatios: number[];
  handlerRatio: number;
  skeinHandlerMs: number;
}

export async function eagerWorkload(repeats = 7, warmup = 1): Promise<EagerResult> {
  const server = await timedServer();
  try {
    const weather = skein.tool(TOOL.name, TOOL.description, weatherInput, getWeather, {
      isConcurrencySafe: () => true,
    });
    const model = skein.anthropic({ baseURL: server.url, apiKey: API_KEY, model: MODEL });
    const agent = skein.createBareAgent({ model, tools: [weather] });
    const times = await paired(repeats, warmup, {
      skein: () => skeinRun(agent),
      baseline: () => plainRun(server.url),
    });
    const ratios = times.skein.map(
      (value, index) => value.lastResult / times.baseline[index]!.lastResult,
    );
    const handlerRatios = times.skein.map(
      (value, index) => value.lastHandler / times.baseline[index]!.lastHandler,
    );
    return {
      skeinMs: median(times.skein.map((value) => value.lastResult)),
      plainMs: median(times.baseline.map((value) => value.lastResult)),
      ratios,
      ratio: median(ratios),
      handlerRatios,
      handlerRatio: median(handlerRatios),
      skeinHandlerMs: median(times.skein.map((value) => value.lastHandler)),
    };
  } finally {
    await server.close();
  }
}

export function eagerRow(result: EagerResult): string[] {
  const sorted = [...result.ratios].sort((a, b) => a - b);
  return [
    "(W5) anthropic: 4 eager calls of 500 ms, request to last tool result",
    `${result.skeinMs.toFixed(0)} ms`,
    `${result.plainMs.toFixed(0)} ms`,
    `${result.ratio.toFixed(3)} x (${sorted[0]!.toFixed(3)}-${sorted.at(-1)!.toFixed(3)})`,
    `<= ${TARGET} x`,
    verdict(result.ratio <= TARGET),
  ];
}

export const EAGER_NOTES = (result: EagerResult) => {
  const range = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return `${sorted[0]!.toFixed(3)}-${sorted.at(-1)!.toFixed(3)}`;
  };
  return [
    `(W5) the calls complete in the stream at ${CALLS_DONE_AT.join(", ")} ms, the text goes on until ${TEXT_UNTIL} ms;`,
    "the plain loop runs the calls at once after the stream ends. The last result is skein's fourth",
    "tool_end, which follows the reply's message event, so its floor is the stream's end:",
    `ideal ${(TEXT_UNTIL / (TEXT_UNTIL + TOOL_MS)).toFixed(3)} x. The last handler's return: skein ${result.skeinHandlerMs.toFixed(0)} ms,`,
    `${result.handlerRatio.toFixed(3)} x (${range(result.handlerRatios)}; ideal ${((CALLS_DONE_AT.at(-1)! + TOOL_MS) / (TEXT_UNTIL + TOOL_MS)).toFixed(3)} x).`,
    `(W5) ratios of ${result.ratios.length} interleaved pairs (range in brackets).`,
  ];
};
