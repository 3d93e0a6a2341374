/**
 * Streamed tool input at the provider edge (design/interactive.md, "Streamed tool input"): each
 * non-empty fragment of a tool call's JSON is a `tool_input_delta` model event, with the call's id
 * and name, in order, before that call's `tool_call`; joined, a call's deltas are the JSON text the
 * model sent. Deltas do not count as passed on: a cut after only deltas is retried, and the next
 * attempt streams its deltas from the start.
 */
import type { ContentBlock, ModelStreamEvent } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { type BatchedStream, EVENT_BATCHES, type ModelRequest } from "../../src/model/model.ts";
import { closeMockServers } from "../support/servers.ts";
import { FAST, PROTOCOLS, serve, streamModel } from "./helpers.ts";
import {
  anthropicReply,
  anthropicText,
  chunk,
  closeRawServers,
  DONE,
  event,
  openaiCalls,
  rawServer,
  writeSse,
} from "./raw-server.ts";

afterEach(async () => {
  await closeMockServers();
  await closeRawServers();
});

type Delta = Extract<ModelStreamEvent, { type: "tool_input_delta" }>;
type Call = Extract<ModelStreamEvent, { type: "tool_call" }>;

const deltasOf = (events: ModelStreamEvent[]) =>
  events.filter((event): event is Delta => event.type === "tool_input_delta");
const callsOf = (events: ModelStreamEvent[]) =>
  events.filter((event): event is Call => event.type === "tool_call");

/** Each call's deltas joined, by call id. */
function joined(events: ModelStreamEvent[]): Record<string, string> {
  const texts: Record<string, string> = {};
  for (const delta of deltasOf(events)) texts[delta.id] = (texts[delta.id] ?? "") + delta.delta;
  return texts;
}

/** Every delta of a call comes before that call's tool_call (and none after it). */
function expectDeltasBeforeCalls(events: ModelStreamEvent[]): void {
  events.forEach((event, position) => {
    if (event.type !== "tool_input_delta") return;
    const announced = events.findIndex(
      (other) => other.type === "tool_call" && other.id === event.id,
    );
    if (announced >= 0) expect(position).toBeLessThan(announced);
  });
}

const TOOLS: ModelRequest["tools"] = [
  { name: "lookup", description: "Look a word up", input_schema: { type: "object" } },
  { name: "weather", description: "The weather", input_schema: { type: "object" } },
];

const LOOKUP = { word: "skein", note: "a length of yarn, wound loosely ✓" };
const WEATHER = { city: "Zürich", days: [1, 2, 3] };

describe.each(PROTOCOLS)("$name: tool_input_delta", (protocol) => {
  const { make } = protocol;
  const ids = protocol.name === "anthropic" ? ["toolu_a", "toolu_b"] : ["call_a", "call_b"];

  it("streams each call's JSON as deltas with its id and name, joined equal to the JSON sent, before its tool_call", async () => {
    const server = await serve([
      {
        text: "Looking both up.",
        toolCalls: [
          { id: ids[0], name: "lookup", input: LOOKUP },
          { id: ids[1], name: "weather", input: WEATHER },
        ],
      },
    ]);
    const events = await streamModel(make(server.url, FAST), { tools: TOOLS });
    const deltas = deltasOf(events);
    // The mock sends each call's JSON in three fragments (Anthropic's opening empty fragment is not passed on).
    expect(deltas).toHaveLength(6);
    expect(deltas.every((delta) => delta.delta !== "")).toBe(true);
    expect(deltas.map((delta) => [delta.id, delta.name])).toEqual([
      [ids[0], "lookup"],
      [ids[0], "lookup"],
      [ids[0], "lookup"],
      [ids[1], "weather"],
      [ids[1], "weather"],
      [ids[1], "weather"],
    ]);
    expect(joined(events)).toEqual({
      [ids[0]!]: JSON.stringify(LOOKUP),
      [ids[1]!]: JSON.stringify(WEATHER),
    });
    expectDeltasBeforeCalls(events);
    expect(callsOf(events).map((call) => [call.id, call.name, call.input])).toEqual([
      [ids[0], "lookup", LOOKUP],
      [ids[1], "weather", WEATHER],
    ]);
    // Text comes first, and the message last, with the inputs the deltas spelled out.
    expect(events[0]).toEqual({ type: "text_delta", text: "Looking " });
    const message = events.at(-1)!;
    expect(message.type).toBe("message");
    const toolUses =
      message.type === "message"
        ? (message.message.content as ContentBlock[]).filter((block) => block.type === "tool_use")
        : [];
    expect(toolUses.map((block) => block.type === "tool_use" && block.input)).toEqual([
      LOOKUP,
      WEATHER,
    ]);
  });

  it("gives the same events when every byte arrives in a read of its own, and in the engine's batches", async () => {
    const turn = { toolCalls: [{ id: ids[0], name: "lookup", input: LOOKUP }] };
    const server = await serve([turn, { ...turn, chunkBytes: 1 }]);
    const whole = await streamModel(make(server.url, FAST), { tools: TOOLS });
    // The second request carries one assistant message, so the mock plays the second turn.
    const replay: ModelRequest = {
      system: "",
      tools: TOOLS,
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: [{ type: "text", text: "ok" }] },
        { role: "user", content: "again" },
      ],
    };
    const stream = make(server.url, FAST).stream(replay, {
      signal: new AbortController().signal,
    }) as AsyncIterable<ModelStreamEvent> & Partial<BatchedStream>;
    const batches: ModelStreamEvent[][] = [];
    const iterator = stream[EVENT_BATCHES]!();
    for (let step = await iterator.next(); !step.done; step = await iterator.next())
      batches.push(step.value);
    const byteByByte = batches.flat();
    const strip = (events: ModelStreamEvent[]) =>
      events.filter((event) => event.type !== "message");
    expect(strip(byteByByte)).toEqual(strip(whole));
    expect(joined(byteByByte)).toEqual({ [ids[0]!]: JSON.stringify(LOOKUP) });
    // One byte per read: the deltas came in batches of their own, as the reads did.
    expect(batches.length).toBeGreaterThan(3);
  });

  it("retries a cut that came after only deltas: the next attempt streams its deltas from the start", async () => {
    // Anthropic: message_start, ping, content_block_start, "" , fragment 1, fragment 2 | cut.
    // OpenAI: role chunk, the call's first chunk, fragment 1, fragment 2 | cut.
    const cutAfter = protocol.name === "anthropic" ? 6 : 4;
    const server = await serve([
      { toolCalls: [{ id: ids[0], name: "lookup", input: LOOKUP }], cutAfter, times: 1 },
    ]);
    const events = await streamModel(make(server.url, FAST), { tools: TOOLS });
    expect(server.requests.map((request) => request.attempt)).toEqual([1, 2]);
    const retry = events.findIndex((event) => event.type === "retry");
    expect(retry).toBeGreaterThan(0);
    const before = events.slice(0, retry);
    const after = events.slice(retry + 1);
    expect(before.map((event) => event.type)).toEqual(["tool_input_delta", "tool_input_delta"]);
    expect(events[retry]).toMatchObject({
      type: "retry",
      attempt: 1,
      error: { name: "APIConnectionError" },
    });
    // The first attempt's partial input is void; the second one's deltas alone spell the JSON.
    expect(joined(after)).toEqual({ [ids[0]!]: JSON.stringify(LOOKUP) });
    expect(after.map((event) => event.type)).toEqual([
      "tool_input_delta",
      "tool_input_delta",
      "tool_input_delta",
      "tool_call",
      "message",
    ]);
  });

  it("does not retry a cut after a tool_call was passed on, deltas of the next call or not", async () => {
    // The cut falls after the first call's tool_call and two fragments of the second call.
    const cutAfter = protocol.name === "anthropic" ? 12 : 8;
    const server = await serve([
      {
        toolCalls: [
          { id: ids[0], name: "lookup", input: LOOKUP },
          { id: ids[1], name: "weather", input: WEATHER },
        ],
        cutAfter,
      },
    ]);
    const events: ModelStreamEvent[] = [];
    await expect(
      (async () => {
        for await (const event of make(server.url, FAST).stream(
          { system: "", tools: TOOLS, messages: [{ role: "user", content: "hi" }] },
          { signal: new AbortController().signal },
        ))
          events.push(event);
      })(),
    ).rejects.toMatchObject({ name: "APIConnectionError" });
    expect(server.requests).toHaveLength(1);
    expect(events.some((event) => event.type === "retry")).toBe(false);
    expect(callsOf(events).map((call) => call.id)).toEqual([ids[0]]);
    expect(deltasOf(events).filter((delta) => delta.id === ids[1])).toHaveLength(2);
  });
});

describe("openai: parallel calls whose fragments interleave", () => {
  const openai = PROTOCOLS.find((protocol) => protocol.name === "openai")!;

  it("tells the calls apart by index, keeps each call's deltas in order and before its tool_call, and announces a call once its JSON is complete", async () => {
    const server = await rawServer((_request, response) => {
      writeSse(
        response,
        [
          chunk({ choices: [{ index: 0, delta: { role: "assistant", content: null } }] }),
          // Both calls open before either's arguments (as some servers send them).
          openaiCalls([
            {
              index: 0,
              id: "call_x",
              type: "function",
              function: { name: "lookup", arguments: "" },
            },
          ]),
          openaiCalls([
            {
              index: 1,
              id: "call_y",
              type: "function",
              function: { name: "weather", arguments: "" },
            },
          ]),
          openaiCalls([{ index: 0, function: { arguments: '{"word":' } }]),
          openaiCalls([{ index: 1, function: { arguments: '{"city":"Zü' } }]),
          // Call 0's object closes a nested value first: `}` that does not end its JSON.
          openaiCalls([{ index: 0, function: { arguments: '"skein","meta":{"a":1}' } }]),
          openaiCalls([{ index: 1, function: { arguments: 'rich",' } }]),
          openaiCalls([{ index: 0, function: { arguments: "}" } }]),
          // Call 0 is complete: a fragment of call 1 announces it, before call 1's last delta.
          openaiCalls([{ index: 1, function: { arguments: '"days":[1,2]' } }]),
          openaiCalls([{ index: 1, function: { arguments: "}" } }]),
          chunk({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] }),
          DONE,
        ].join(""),
      );
    });
    const events = await streamModel(openai.make(server.url, FAST), { tools: TOOLS });
    expect(
      events.flatMap((event) =>
        event.type === "tool_input_delta"
          ? [`delta ${event.id} ${event.name} ${event.delta}`]
          : event.type === "tool_call"
            ? [`call ${event.id}`]
            : [],
      ),
    ).toEqual([
      'delta call_x lookup {"word":',
      'delta call_y weather {"city":"Zü',
      'delta call_x lookup "skein","meta":{"a":1}',
      'delta call_y weather rich",',
      "delta call_x lookup }",
      'delta call_y weather "days":[1,2]',
      "call call_x",
      "delta call_y weather }",
      "call call_y",
    ]);
    expect(joined(events)).toEqual({
      call_x: '{"word":"skein","meta":{"a":1}}',
      call_y: '{"city":"Zürich","days":[1,2]}',
    });
    expect(callsOf(events).map((call) => call.input)).toEqual([
      { word: "skein", meta: { a: 1 } },
      { city: "Zürich", days: [1, 2] },
    ]);
    expect(events.at(-1)).toMatchObject({ type: "message", stopReason: "tool_use" });
    expect(events.at(-1)).not.toHaveProperty("incompleteToolCalls");
  });

  it("reports a call whose JSON never completes as incomplete, announcing no later call, with its deltas passed on", async () => {
    const server = await rawServer((_request, response) => {
      writeSse(
        response,
        [
          openaiCalls([
            { index: 0, id: "call_x", function: { name: "lookup", arguments: '{"word":"sk' } },
          ]),
          openaiCalls([{ index: 1, id: "call_y", function: { name: "weather", arguments: "{}" } }]),
          chunk({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] }),
          DONE,
        ].join(""),
      );
    });
    const events = await streamModel(openai.make(server.url, FAST), { tools: TOOLS });
    expect(deltasOf(events).map((delta) => [delta.id, delta.delta])).toEqual([
      ["call_x", '{"word":"sk'],
      ["call_y", "{}"],
    ]);
    expect(callsOf(events)).toEqual([]);
    expect(events.at(-1)).toMatchObject({
      type: "message",
      incompleteToolCalls: [
        { id: "call_x", name: "lookup", reason: "its input was not valid JSON" },
      ],
    });
  });
});

describe("anthropic: which blocks stream their input", () => {
  const anthropic = PROTOCOLS.find((protocol) => protocol.name === "anthropic")!;

  it("passes on deltas of tool_use blocks only: a server_tool_use block (run by the API) streams none", async () => {
    const server = await rawServer((_request, response) => {
      writeSse(
        response,
        anthropicReply(
          [
            event("content_block_start", {
              index: 0,
              content_block: {
                type: "server_tool_use",
                id: "srvtoolu_1",
                name: "web_search",
                input: {},
              },
            }),
            event("content_block_delta", {
              index: 0,
              delta: { type: "input_json_delta", partial_json: '{"query":"skein"}' },
            }),
            event("content_block_stop", { index: 0 }),
            ...anthropicText(1, "Found it."),
            event("content_block_start", {
              index: 2,
              content_block: { type: "tool_use", id: "toolu_1", name: "lookup", input: {} },
            }),
            event("content_block_delta", {
              index: 2,
              delta: { type: "input_json_delta", partial_json: "" },
            }),
            event("content_block_delta", {
              index: 2,
              delta: { type: "input_json_delta", partial_json: '{"word"' },
            }),
            event("content_block_delta", {
              index: 2,
              delta: { type: "input_json_delta", partial_json: ':"yarn"}' },
            }),
            event("content_block_stop", { index: 2 }),
          ],
          "tool_use",
        ),
      );
    });
    const events = await streamModel(anthropic.make(server.url, FAST), { tools: TOOLS });
    expect(deltasOf(events)).toEqual([
      { type: "tool_input_delta", id: "toolu_1", name: "lookup", delta: '{"word"' },
      { type: "tool_input_delta", id: "toolu_1", name: "lookup", delta: ':"yarn"}' },
    ]);
    expect(callsOf(events)).toEqual([
      { type: "tool_call", id: "toolu_1", name: "lookup", input: { word: "yarn" } },
    ]);
  });
});
