// kill -9 on the wires that carry opaque reasoning (OpenAI Responses' encrypted reasoning items,
// Gemini's thought signatures): a child runs a five-turn reasoning tool loop on a SQLite file,
// the parent SIGKILLs it after replies with reasoning were logged (and mid-stream), and a new
// process recovers from the file alone. The parent's mockServer refuses a call sent back without
// its reasoning; a recording proxy in front of it shows the bytes: every request, before and
// after the crash, carries each earlier turn's reasoning byte for byte, in its place.
import type { MockTurn } from "skein/testing";
import { afterEach, describe, expect, test } from "vitest";
import {
  expectReplayed,
  GEMINI_REPLAY,
  opaqueGiven,
  RESPONSES_REPLAY,
  type ReplayWire,
} from "../providers/replay-check.ts";
import { type RecordingProxy, recordingProxy } from "../support/recording-proxy.ts";
import { closeMockServers, openMockServer } from "../support/servers.ts";
import { useTempDir } from "../support/temp.ts";
import type { AgentTask } from "./children/agent-child.ts";
import { childSession, effects, killAt, type MockModel, outcomeOf } from "./recovery-helpers.ts";

const dir = useTempDir("skein-kill9-reasoning-");

const proxies: RecordingProxy[] = [];
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
  await closeMockServers();
});

interface Row {
  provider: AgentTask["provider"];
  wire: ReplayWire;
  /** In a turn of three words of thinking, then a call: where the stream has the reasoning, not the call. */
  afterReasoning: number;
}

const ROWS: [string, Row][] = [
  // response.created, response.in_progress, then the reasoning item: output_item.added,
  // reasoning_summary_part.added, a delta per word, its text.done, part.done, output_item.done.
  [
    "openai responses",
    { provider: "openai-responses", wire: RESPONSES_REPLAY, afterReasoning: 10 },
  ],
  // A chunk per word of thinking, then the call's chunk (the last one).
  ["gemini", { provider: "gemini", wire: GEMINI_REPLAY, afterReasoning: -1 }],
];

const lookup = (target: string) => ({ name: "lookup", input: { target } });
const charge = (target: string) => ({ name: "charge", input: { target } });

/** Five turns, each with its own reasoning: four of calls (one with text and two calls), then the answer. */
const FIVE: MockTurn[] = [
  { thinking: "look the order up", toolCalls: [lookup("a")] },
  { thinking: "two lookups at once", text: "Two more.", toolCalls: [lookup("b"), lookup("c")] },
  { thinking: "the fourth lookup", toolCalls: [lookup("d")] },
  { thinking: "one last lookup", toolCalls: [lookup("e")] },
  { thinking: "every lookup is back", text: "All done." },
];

let count = 0;

describe.each(ROWS)("%s", (_, row) => {
  async function start(script: MockTurn[]) {
    const server = await openMockServer({ script });
    const proxy = await recordingProxy(server.url);
    proxies.push(proxy);
    // The children talk to the proxy; the requests are counted by the server behind it.
    const model = { server: { url: proxy.url } } as MockModel;
    const session = childSession({
      name: `r${++count}`,
      backing: (name) => ({ kind: "sqlite", path: `${dir}/${name}.db` }),
      dir,
      model,
      prompt: "Look the orders up.",
    });
    const withProvider = (extra: Partial<AgentTask> = {}) => ({
      provider: row.provider,
      ...extra,
    });
    return {
      server,
      proxy,
      session,
      run: (extra?: Partial<AgentTask>) => session.run(withProvider(extra)),
      resume: (extra?: Partial<AgentTask>) => session.resume(withProvider(extra)),
      /** The turn each model request asked for, in arrival order (undefined: refused, a 400). */
      turns: () => server.requests.map((request) => request.turn),
    };
  }

  test("killed while a call ran, after three replies with reasoning were logged: the new process sends them all back", async () => {
    const { proxy, session, run, resume, turns } = await start(FIVE);
    await killAt(run({ hangOnTargets: ["d"] }), "hanging target d");
    // Three replies logged, each with its reasoning (an item, a signature) in the log.
    const logged = await session.withStore((store) => store.read(session.sessionId));
    const replies = logged
      .map((row) => row.data)
      .filter((data) => ["reply", "results_reply"].includes(JSON.parse(data).type));
    expect(replies).toHaveLength(3);
    const given = opaqueGiven(row.wire, proxy.exchanges);
    expect(given).toHaveLength(3);
    for (const [index, piece] of given.entries()) {
      const inLog = row.wire.name === "gemini" ? piece : JSON.parse(piece).encrypted_content;
      expect(replies[index]).toContain(inLog);
    }

    const { result } = await outcomeOf(resume());
    expect(result).toMatchObject({ subtype: "success", result: "All done.", numTurns: 5 });
    // lookup is idempotent: the one killed while it ran ran again; nothing else twice.
    expect(Object.values(effects(session.effects)).sort()).toEqual([1, 1, 1, 1, 2]);
    expect(turns()).toEqual([0, 1, 2, 3, 4]);
    expect(expectReplayed(row.wire, proxy.exchanges)).toEqual([0, 1, 2, 3, 4]);
  }, 120_000);

  test("killed mid-stream after earlier reasoning was logged: the turn is asked again with every earlier reasoning", async () => {
    // The fourth reply stalls before its end, once: the child is killed while it streams.
    const script = FIVE.map((turn, index) =>
      index === 3 ? { ...turn, stallAfter: row.afterReasoning, times: 1 } : turn,
    );
    const { proxy, session, run, resume, turns } = await start(script);
    const first = run();
    // Killed once the fourth reply's reasoning streams: more thinking deltas than the first
    // three turns had (one per word; the events may be printed after their reply was logged).
    const earlier = FIVE.slice(0, 3).reduce(
      (sum, turn) => sum + turn.thinking!.split(" ").length,
      0,
    );
    await killAt(
      first,
      (lines) => lines.filter((line) => line.startsWith("event thinking_delta")).length > earlier,
    );
    expect(turns()).toEqual([0, 1, 2, 3]);

    const { result } = await outcomeOf(resume());
    expect(result).toMatchObject({ subtype: "success", result: "All done.", numTurns: 5 });
    expect(Object.values(effects(session.effects))).toEqual([1, 1, 1, 1, 1]);
    // The fourth turn twice (the cut stream, then after recovery), and the rest once.
    expect(turns()).toEqual([0, 1, 2, 3, 3, 4]);
    expect(proxy.exchanges[3]!.ended).toBe(false);
    expect(expectReplayed(row.wire, proxy.exchanges)).toEqual([0, 1, 2, 3, 3, 4]);
  }, 120_000);

  test("paused for approval in a process that dies, resumed by fresh processes, then continued by another", async () => {
    const script: MockTurn[] = [
      { thinking: "look it up first", toolCalls: [lookup("a")] },
      { thinking: "now charge it", toolCalls: [charge("b")] },
      { thinking: "check the charge", toolCalls: [lookup("c")] },
      { thinking: "charge the second", text: "And the next.", toolCalls: [charge("d")] },
      { thinking: "both charged", text: "Both charged." },
      // The continued session: a second prompt, one more call, the answer.
      { thinking: "a second question", toolCalls: [lookup("e")] },
      { thinking: "the second answer", text: "Second answer." },
    ];
    const { proxy, session, run, resume, turns } = await start(script);
    // Process 1 pauses at the first charge and is killed while paused.
    const first = run({ ask: true, stayAlive: true });
    const paused = await outcomeOf(first, true);
    expect(paused.result?.subtype).toBe("paused");
    await killAt(first, () => true);
    // Process 2 approves, runs on, pauses at the second charge.
    const approve = (pending: { id: string }[] | undefined) =>
      Object.fromEntries((pending ?? []).map((call) => [call.id, true]));
    const second = await outcomeOf(
      resume({ ask: true, action: { kind: "resume", approvals: approve(paused.result?.pending) } }),
    );
    expect(second.result?.subtype).toBe("paused");
    // Process 3 approves and finishes.
    const third = await outcomeOf(
      resume({ ask: true, action: { kind: "resume", approvals: approve(second.result?.pending) } }),
    );
    expect(third.result).toMatchObject({ subtype: "success", result: "Both charged." });
    // Process 4 continues the session with a second prompt.
    const fourth = await outcomeOf(
      session.run({ provider: row.provider, action: { kind: "run", prompt: "And now?" } }),
    );
    expect(fourth.result).toMatchObject({ subtype: "success", result: "Second answer." });
    expect(Object.values(effects(session.effects))).toEqual([1, 1, 1, 1, 1]);
    expect(turns()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(expectReplayed(row.wire, proxy.exchanges)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  }, 180_000);
});
