/**
 * A five-turn reasoning tool loop on each wire that carries opaque reasoning (OpenAI Responses'
 * encrypted reasoning items, Gemini's thought signatures): what the server gave comes back byte
 * for byte, in place, on every later request, through a plain loop, approval pauses resumed
 * from JSON state and from the durable store by fresh agents, and a session continued by a
 * second run. The mock server refuses a call sent back without its reasoning or signature; the
 * test also reads the exact bytes through a recording proxy. (kill -9: test/sessions/kill9-reasoning.)
 */
import { join } from "node:path";
import { createBareAgent, google, type Model, openai, type RunState } from "skein";
import { sqliteStore } from "skein/sqlite";
import type { MockServer, MockTurn } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { type RecordingProxy, recordingProxy } from "../support/recording-proxy.ts";
import { closeMockServers } from "../support/servers.ts";
import { useTempDir } from "../support/temp.ts";
import { echoTool, FAST, serve } from "./helpers.ts";
import {
  expectReplayed,
  GEMINI_REPLAY,
  opaqueGiven,
  RESPONSES_REPLAY,
  type ReplayWire,
} from "./replay-check.ts";

const dir = useTempDir("skein-replay-");
const proxies: RecordingProxy[] = [];
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
  await closeMockServers();
});

interface Row {
  wire: ReplayWire;
  make(url: string): Model;
}

const ROWS: [string, Row][] = [
  [
    "openai responses",
    {
      wire: RESPONSES_REPLAY,
      make: (url) =>
        openai({ baseURL: `${url}/v1`, apiKey: "test", api: "responses", model: "gpt-5", ...FAST }),
    },
  ],
  [
    "gemini",
    {
      wire: GEMINI_REPLAY,
      make: (url) => google({ baseURL: url, apiKey: "test", model: "gemini-3-pro", ...FAST }),
    },
  ],
];

const echo = (text: string) => ({ name: "echo", input: { text } });

/** Five turns, each with its own reasoning: four of calls (one with text and two calls), then the answer. */
const FIVE: MockTurn[] = [
  { thinking: "plan the first step", toolCalls: [echo("one")] },
  { thinking: "two things at once", text: "Two more.", toolCalls: [echo("two"), echo("three")] },
  { thinking: "the fourth echo", toolCalls: [echo("four")] },
  { thinking: "one last echo", toolCalls: [echo("five")] },
  { thinking: "everything is echoed", text: "All five echoed." },
];

async function start(row: Row, script: MockTurn[]) {
  const server = await serve(script);
  const proxy = await recordingProxy(server.url);
  proxies.push(proxy);
  return { server, proxy, model: () => row.make(proxy.url) };
}

/** No request was refused (each reached the script), and each carried every earlier turn back. */
function expectAllReplayed(row: Row, server: MockServer, proxy: RecordingProxy, requests: number) {
  expect(server.requests.map((request) => request.turn)).toEqual([...Array(requests).keys()]);
  const carried = expectReplayed(row.wire, proxy.exchanges);
  expect(carried).toHaveLength(requests);
  return carried;
}

let count = 0;
const store = (name = `replay-${++count}`) => ({ path: join(dir, `${name}.db`) });
const SECRET = "a shared approval secret, long enough";

describe.each(ROWS)("%s: reasoning replayed byte for byte", (_, row) => {
  it("a five-turn tool loop sends every earlier reasoning back, in place, on every turn", async () => {
    const { server, proxy, model } = await start(row, FIVE);
    const seen: string[] = [];
    const result = await createBareAgent({ model: model(), tools: [echoTool(seen)] }).run("go");
    expect(result).toMatchObject({ subtype: "success", result: "All five echoed.", numTurns: 5 });
    expect(seen).toEqual(["one", "two", "three", "four", "five"]);
    const carried = expectAllReplayed(row, server, proxy, 5);
    // One piece per earlier turn: every reasoning turn's item or signature went back each time.
    expect(carried).toEqual([0, 1, 2, 3, 4]);
    expect(new Set(opaqueGiven(row.wire, proxy.exchanges)).size).toBe(5);
  });

  it("across approval pauses: resumed from JSON state and from the durable store, by fresh agents", async () => {
    const { server, proxy, model } = await start(row, FIVE);
    const seen: string[] = [];
    const { path } = store();
    const agentOn = () =>
      createBareAgent({
        model: model(),
        tools: [echoTool(seen)],
        permissions: { ask: ["echo"] },
        sessionStore: sqliteStore({ path }),
        approvalSecret: SECRET,
      });
    const approveAll = (pending: { id: string }[] | undefined) =>
      Object.fromEntries((pending ?? []).map((call) => [call.id, true]));
    let result = await agentOn().run("go");
    let pauses = 0;
    while (result.subtype === "paused") {
      pauses++;
      const approvals = approveAll(result.pending);
      // By turns: the same agent from the state as JSON, a fresh agent from the store alone,
      // a fresh agent from the state as JSON.
      result =
        pauses % 2 === 1
          ? await agentOn().resume(JSON.parse(JSON.stringify(result.state)) as RunState, {
              approvals,
            })
          : await agentOn().resume({ sessionId: result.sessionId }, { approvals });
    }
    expect(pauses).toBe(4);
    expect(result).toMatchObject({ subtype: "success", result: "All five echoed." });
    expect(seen).toEqual(["one", "two", "three", "four", "five"]);
    expect(expectAllReplayed(row, server, proxy, 5)).toEqual([0, 1, 2, 3, 4]);
  });

  it("a continued session: a second run, by a fresh agent on the same store, sends the first run's reasoning back", async () => {
    const script: MockTurn[] = [
      FIVE[0]!,
      FIVE[1]!,
      { thinking: "answer the first question", text: "First answer." },
      FIVE[3]!,
      FIVE[4]!,
    ];
    const { server, proxy, model } = await start(row, script);
    const { path } = store();
    const agentOn = () =>
      createBareAgent({
        model: model(),
        tools: [echoTool()],
        sessionStore: sqliteStore({ path }),
        approvalSecret: SECRET,
      });
    const first = await agentOn().run("first");
    expect(first).toMatchObject({ subtype: "success", result: "First answer." });
    const second = await agentOn().run("second", { sessionId: first.sessionId });
    expect(second).toMatchObject({ subtype: "success", result: "All five echoed." });
    // The third turn had no call: its reasoning came back all the same, before its text.
    expect(expectAllReplayed(row, server, proxy, 5)).toEqual([0, 1, 2, 3, 4]);
  });
});
