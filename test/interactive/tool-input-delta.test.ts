/**
 * Streamed tool input as agent events (design/interactive.md, "Streamed tool input"), over both
 * wire protocols with `mockServer`: a call's `tool_input_delta`s come in order, all before its
 * `tool_start` and before the reply's `message` event; joined they equal the JSON text the model
 * sent; `partialInput` is partial-json's parse of the text so far, the last one deep-equal to the
 * call's input. After a `retry` the failed attempt's partial inputs are void: the deltas restart.
 */

import { Allow, parse } from "partial-json";
import {
  type AgentEvent,
  type AgentOptions,
  anthropic,
  createBareAgent,
  type Model,
  openai,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { closeMockServers, openMockServer } from "../support/servers.ts";
import { collect, type EventOf, ofType } from "./helpers.ts";

afterEach(closeMockServers);

const FAST = { maxRetryDelayMs: 2_000, timeoutMs: 5_000, idleTimeoutMs: 5_000 };

const WIRES: {
  name: string;
  make: (url: string) => Model;
  ids: [string, string];
  cutAfter: number;
}[] = [
  {
    name: "anthropic",
    make: (url) => anthropic({ baseURL: url, apiKey: "test", ...FAST }),
    ids: ["toolu_a", "toolu_b"],
    // message_start, ping, content_block_start, "", fragment 1, fragment 2 | cut.
    cutAfter: 6,
  },
  {
    name: "openai",
    make: (url) => openai({ baseURL: `${url}/v1`, apiKey: "test", ...FAST }),
    ids: ["call_a", "call_b"],
    // The role chunk, the call's first chunk, fragment 1, fragment 2 | cut.
    cutAfter: 4,
  },
];

const LOOKUP = {
  word: "skein",
  note: "a length of yarn, wound loosely ✓",
  tags: ["wool", "craft"],
};
const WEATHER = { city: "Zürich", days: [1, 2, 3], detail: { wind: true } };

function tools(seen: unknown[]) {
  return [
    tool(
      "lookup",
      "Look a word up",
      z.object({ word: z.string(), note: z.string(), tags: z.array(z.string()) }),
      (input) => {
        seen.push(input);
        return "found";
      },
    ),
    tool(
      "weather",
      "The weather",
      z.object({
        city: z.string(),
        days: z.array(z.number()),
        detail: z.object({ wind: z.boolean() }),
      }),
      (input) => {
        seen.push(input);
        return "sunny";
      },
    ),
  ];
}

type Delta = EventOf<"tool_input_delta">;

/** The checks every call's deltas must pass, in the events from `from` on. */
function expectDeltas(
  events: AgentEvent[],
  callId: string,
  name: string,
  input: unknown,
  from = 0,
) {
  const indexed = events
    .map((event, index) => ({ event, index }))
    .filter(
      (entry): entry is { event: Delta; index: number } =>
        entry.index >= from &&
        entry.event.type === "tool_input_delta" &&
        entry.event.callId === callId,
    );
  expect(indexed.length, `deltas of ${callId}`).toBeGreaterThan(1);
  let text = "";
  for (const { event } of indexed) {
    expect(event.name).toBe(name);
    expect(event.delta).not.toBe("");
    text += event.delta;
    let expected: unknown;
    try {
      expected = parse(text, Allow.ALL);
    } catch {
      expected = undefined;
    }
    expect(event.partialInput).toEqual(expected);
  }
  expect(text).toBe(JSON.stringify(input));
  expect(indexed.at(-1)!.event.partialInput).toEqual(input);
  const start = events.findIndex(
    (event, index) => index >= from && event.type === "tool_start" && event.callId === callId,
  );
  const message = events.findIndex((event, index) => index >= from && event.type === "message");
  expect(start).toBeGreaterThan(indexed.at(-1)!.index);
  expect(message).toBeGreaterThan(indexed.at(-1)!.index);
  expect((events[start] as EventOf<"tool_start">).input).toEqual(input);
}

describe.each(WIRES)("$name wire: tool_input_delta agent events", (wire) => {
  const [idA, idB] = wire.ids;

  async function run(turns: unknown[], options: Partial<AgentOptions> = {}) {
    const server = await openMockServer({ script: turns as never });
    const seen: unknown[] = [];
    const agent = createBareAgent({ model: wire.make(server.url), tools: tools(seen), ...options });
    const { events, result } = await collect(agent.stream("Look it up and check the weather."));
    return { events, result, seen, server };
  }

  const twoCalls = {
    text: "Looking both up.",
    toolCalls: [
      { id: idA, name: "lookup", input: LOOKUP },
      { id: idB, name: "weather", input: WEATHER },
    ],
  };

  it("each call's deltas in order, before its tool_start and the message; joined, the JSON sent", async () => {
    const { events, result, seen } = await run([twoCalls, { text: "Done." }]);
    expect(result.subtype).toBe("success");
    expectDeltas(events, idA, "lookup", LOOKUP);
    expectDeltas(events, idB, "weather", WEATHER);
    // Execution waited for the complete, validated input.
    expect(seen).toEqual([LOOKUP, WEATHER]);
    // None after the message, none in the second turn (text only).
    const message = events.findIndex((event) => event.type === "message");
    expect(events.slice(message).some((event) => event.type === "tool_input_delta")).toBe(false);
  });

  it("the same without eager execution (a batch policy): deltas, then the message, then tool_start", async () => {
    const { events } = await run([twoCalls, { text: "Done." }], {
      toolBatchPolicy: { validate: () => ({ allowed: true }) },
    });
    expectDeltas(events, idA, "lookup", LOOKUP);
    expectDeltas(events, idB, "weather", WEATHER);
    const lastDelta = events.findLastIndex((event) => event.type === "tool_input_delta");
    const message = events.findIndex((event) => event.type === "message");
    const firstStart = events.findIndex((event) => event.type === "tool_start");
    expect(lastDelta).toBeLessThan(message);
    expect(message).toBeLessThan(firstStart);
  });

  it("after a retry, the failed attempt's partial input is void: the deltas start again", async () => {
    const { events, result, server } = await run([
      {
        toolCalls: [{ id: idA, name: "lookup", input: LOOKUP }],
        cutAfter: wire.cutAfter,
        times: 1,
      },
      { text: "Done." },
    ]);
    expect(result.subtype).toBe("success");
    expect(server.requests.map((request) => request.attempt)).toEqual([1, 2, 1]);
    const retry = events.findIndex((event) => event.type === "retry");
    expect(retry).toBeGreaterThan(0);
    const before = ofType(events.slice(0, retry), "tool_input_delta");
    expect(before.length).toBeGreaterThan(0);
    expect(before.map((delta) => delta.delta).join("")).not.toBe(JSON.stringify(LOOKUP));
    // From the retry on, the deltas alone spell the JSON, and each partialInput parses only them.
    expectDeltas(events, idA, "lookup", LOOKUP, retry + 1);
    const firstAfter = ofType(events.slice(retry), "tool_input_delta")[0]!;
    expect(firstAfter.delta).toBe(before[0]!.delta);
    expect(firstAfter.partialInput).toEqual(before[0]!.partialInput);
  });
});

describe("scriptedModel", () => {
  it("sends no tool_input_delta: the agent emits none", async () => {
    const seen: unknown[] = [];
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "lookup", input: LOOKUP }] },
      { text: "ok" },
    ]);
    const { events } = await collect(createBareAgent({ model, tools: tools(seen) }).stream("go"));
    expect(ofType(events, "tool_input_delta")).toEqual([]);
    expect(seen).toEqual([LOOKUP]);
  });
});
