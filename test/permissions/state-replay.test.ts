import type { RunState, ToolResultBlock } from "skein";
import { describe, expect, it } from "vitest";
import { expectValidTranscript } from "../support/results.ts";
import {
  callIn,
  coverTracks,
  expectRefused,
  lastMessage,
  pausedBatch,
} from "./state-replay-helpers.ts";

/*
 * Issue 8, section 5 (RELIABILITY C17d, D9): a paused state edited as JSON never replays,
 * reorders or re-answers a call. The batch: s1 and s2 ran; r1 waits for approval; h1 is held
 * behind it; r2 waits for approval.
 */
const BATCH = [
  { id: "s1", name: "safe", input: { target: "one" } },
  { id: "s2", name: "safe", input: { target: "two" } },
  { id: "r1", name: "risky", input: { target: "alpha" } },
  { id: "h1", name: "safe", input: { target: "three" } },
  { id: "r2", name: "risky", input: { target: "beta" } },
];
const APPROVE = { approvals: { r1: true, r2: true } };

const paused = (sessionId?: string) => pausedBatch(BATCH, sessionId);

describe("the untouched state (control)", () => {
  it("resumes: each approved call runs once, held calls run, nothing runs again", async () => {
    const setup = await paused();
    const resumed = await setup.resumer().resume(setup.fresh(), APPROVE);
    expect(resumed.subtype).toBe("success");
    expect(setup.counts.risky).toEqual(["alpha", "beta"]);
    expect(setup.counts.safe).toEqual(["one", "two", "three"]);
    expect(setup.counts.approvals).toBe(0);
    expectValidTranscript(resumed.messages);
  });
});

describe("a duplicated call is refused before any side effect", () => {
  it("the approved waiting call, duplicated with its seal in the batch, transcript and steps", async () => {
    const setup = await paused();
    const state = setup.fresh();
    const calls = state.batch!.calls;
    calls.splice(3, 0, structuredClone(callIn(state, "r1")));
    lastMessage(state).content.splice(3, 0, structuredClone(lastMessage(state).content[2]!));
    await expectRefused(setup, coverTracks(state), APPROVE, /more than once/);
  });

  it("the approved waiting call, duplicated in the batch only", async () => {
    const setup = await paused();
    const state = setup.fresh();
    state.batch!.calls.push(structuredClone(callIn(state, "r1")));
    await expectRefused(setup, state, APPROVE);
  });

  it("a held call, duplicated with its seal everywhere", async () => {
    const setup = await paused();
    const state = setup.fresh();
    state.batch!.calls.push(structuredClone(callIn(state, "h1")));
    lastMessage(state).content.push(structuredClone(lastMessage(state).content[3]!));
    await expectRefused(setup, coverTracks(state), APPROVE);
  });

  it("a finished call, duplicated everywhere", async () => {
    const setup = await paused();
    const state = setup.fresh();
    state.batch!.calls.unshift(structuredClone(callIn(state, "s1")));
    lastMessage(state).content.unshift(structuredClone(lastMessage(state).content[0]!));
    await expectRefused(setup, coverTracks(state), APPROVE);
  });

  it("the whole assistant message, duplicated with its step", async () => {
    const setup = await paused();
    const state = setup.fresh();
    state.messages.push(structuredClone(state.messages.at(-1)!));
    state.steps.push(structuredClone(state.steps.at(-1)!));
    state.numTurns = state.steps.length;
    await expectRefused(setup, state, APPROVE, /not answered|more than once/);
  });
});

describe("reordered, added, dropped or moved calls are refused", () => {
  it("the two waiting calls swapped in the batch, transcript and steps", async () => {
    const setup = await paused();
    const state = setup.fresh();
    const calls = state.batch!.calls;
    [calls[2], calls[4]] = [calls[4]!, calls[2]!];
    const uses = lastMessage(state).content;
    [uses[2], uses[4]] = [uses[4]!, uses[2]!];
    await expectRefused(setup, coverTracks(state), APPROVE, /seal/);
  });

  it("the batch reordered while the transcript is not", async () => {
    const setup = await paused();
    const state = setup.fresh();
    state.batch!.calls.reverse();
    await expectRefused(setup, state, APPROVE, /transcript/);
  });

  it("a finished call moved back to waiting for the app's output (steps edited too)", async () => {
    const setup = await paused();
    const state = setup.fresh();
    const index = state.batch!.calls.findIndex((call) => call.id === "s2");
    state.batch!.calls[index] = {
      id: "s2",
      name: "safe",
      input: { target: "two" },
      status: "pending",
      reason: "external",
    };
    await expectRefused(setup, coverTracks(state), { ...APPROVE, toolOutputs: { s2: "x" } });
  });

  it("a finished call moved back to waiting, its step left alone", async () => {
    const setup = await paused();
    const state = setup.fresh();
    const index = state.batch!.calls.findIndex((call) => call.id === "s2");
    state.batch!.calls[index] = {
      id: "s2",
      name: "safe",
      input: { target: "two" },
      status: "pending",
      reason: "external",
    };
    await expectRefused(setup, state, APPROVE, /finished calls differ/);
  });

  it("a finished call moved back to waiting for approval, with a waiting call's seal", async () => {
    const setup = await paused();
    const state = setup.fresh();
    const index = state.batch!.calls.findIndex((call) => call.id === "s2");
    state.batch!.calls[index] = {
      id: "s2",
      name: "safe",
      input: { target: "two" },
      status: "pending",
      reason: "approval",
      seal: callIn(state, "r1").seal as string,
    };
    await expectRefused(setup, coverTracks(state), { approvals: { s2: true, r1: true } });
  });

  it("a waiting call whose id is not in the transcript", async () => {
    const setup = await paused();
    const state = setup.fresh();
    state.batch!.calls.push({ ...structuredClone(callIn(state, "r2")), id: "r9" });
    await expectRefused(setup, coverTracks(state), { approvals: { r1: true, r9: true } });
  });

  it("an extra finished call, added to the batch, transcript and steps", async () => {
    const setup = await paused();
    const state = setup.fresh();
    const fake = structuredClone(callIn(state, "s1"));
    fake.id = "x0";
    (fake.block as ToolResultBlock).tool_use_id = "x0";
    state.batch!.calls.unshift(fake);
    lastMessage(state).content.unshift({ ...lastMessage(state).content[0]!, id: "x0" });
    await expectRefused(setup, coverTracks(state), APPROVE, /seal/);
  });

  it("an extra call waiting for the app, added everywhere", async () => {
    const setup = await paused();
    const state = setup.fresh();
    state.batch!.calls.push({
      id: "e9",
      name: "ext",
      input: { q: "?" },
      status: "pending",
      reason: "external",
    });
    lastMessage(state).content.push({ type: "tool_use", id: "e9", name: "ext", input: { q: "?" } });
    await expectRefused(setup, coverTracks(state), { ...APPROVE, toolOutputs: { e9: "x" } });
  });

  it("a held call dropped from the batch, transcript and steps", async () => {
    const setup = await paused();
    const state = setup.fresh();
    state.batch!.calls.splice(3, 1);
    lastMessage(state).content.splice(3, 1);
    await expectRefused(setup, coverTracks(state), APPROVE, /seal/);
  });

  it("a call dropped from the batch only", async () => {
    const setup = await paused();
    const state = setup.fresh();
    state.batch!.calls.splice(3, 1);
    await expectRefused(setup, state, APPROVE, /transcript/);
  });

  it("a tool_use added to the last message with no batch entry", async () => {
    const setup = await paused();
    const state = setup.fresh();
    lastMessage(state).content.push({
      type: "tool_use",
      id: "g1",
      name: "safe",
      input: { target: "ghost" },
    });
    await expectRefused(setup, coverTracks(state), APPROVE);
  });

  it("an earlier reply with a tool_use nobody answered, slipped in with its step", async () => {
    const setup = await paused();
    const state = setup.fresh();
    const ghost = {
      role: "assistant" as const,
      content: [{ type: "tool_use" as const, id: "g1", name: "safe", input: { target: "g" } }],
    };
    state.messages.splice(1, 0, ghost, { role: "user", content: "go on" });
    state.steps.unshift({ message: structuredClone(ghost), toolCalls: [] });
    state.numTurns = state.steps.length;
    await expectRefused(setup, state, APPROVE, /"g1" is not answered/);
  });
});

describe("results and steps that do not match are refused", () => {
  it("two finished calls' results swapped, blocks re-addressed, steps edited", async () => {
    const setup = await paused();
    const state = setup.fresh();
    const [one, two] = [callIn(state, "s1"), callIn(state, "s2")];
    [one.result, two.result] = [two.result, one.result];
    [one.block, two.block] = [two.block, one.block];
    (one.block as ToolResultBlock).tool_use_id = "s1";
    (two.block as ToolResultBlock).tool_use_id = "s2";
    await expectRefused(setup, coverTracks(state), APPROVE, /seal/);
  });

  it("two finished calls' results swapped in the batch only", async () => {
    const setup = await paused();
    const state = setup.fresh();
    const [one, two] = [callIn(state, "s1"), callIn(state, "s2")];
    [one.result, two.result] = [two.result, one.result];
    await expectRefused(setup, state, APPROVE, /finished calls differ/);
  });

  it("a tool_result for a waiting call already in the transcript", async () => {
    const setup = await paused();
    const state = setup.fresh();
    const answer = { type: "tool_result" as const, tool_use_id: "r1", content: "approved!" };
    state.messages[0] = { role: "user", content: [{ type: "text", text: "go" }, answer] };
    await expectRefused(setup, state, APPROVE, /tool_result for "r1"/);
  });

  it("the last step's reply edited while the transcript is not", async () => {
    const setup = await paused();
    const state = setup.fresh();
    (state.steps.at(-1)!.message.content as { input?: unknown }[])[2]!.input = { target: "x" };
    await expectRefused(setup, state, APPROVE, /step 0/);
  });

  it("a step removed, or numTurns turned back", async () => {
    const setup = await paused();
    const dropped = setup.fresh();
    dropped.steps.pop();
    await expectRefused(setup, dropped, APPROVE, /no step/);
    const rewound = setup.fresh();
    rewound.numTurns = 0;
    await expectRefused(setup, rewound, APPROVE, /numTurns/);
  });
});

describe("seals and runData from another session", () => {
  it("a waiting call's seal copied from another session's identical pause is refused", async () => {
    const setup = await paused("session-a");
    const other = await paused("session-b");
    const state = setup.fresh();
    callIn(state, "r1").seal = callIn(other.fresh(), "r1").seal;
    await expectRefused(setup, state, APPROVE, /seal/);
  });

  it("another session's whole batch and transcript under this session's id is refused", async () => {
    const setup = await paused("session-a");
    const other = await paused("session-b");
    const state: RunState = { ...other.fresh(), sessionId: "session-a" };
    await expectRefused(setup, state, APPROVE, /seal/);
  });
});
