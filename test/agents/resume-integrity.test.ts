// resume checks the whole tree before anything runs (design/agents.md, approval paragraphs):
// a state altered at any level is a ResumeError before any side effect; approvals naming calls
// waiting nowhere are refused; ids shared across the tree are listed, and accepted, qualified.
import {
  agentTool,
  createBareAgent,
  type PermissionResult,
  ResumeError,
  type RunState,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { rejectionOf } from "../support/promises.ts";
import { countingTool } from "../support/tools.ts";

/**
 * root --p1--> child --c1--> grandchild. The child's own reply also has c0 (note, allowed) and
 * cr (risky, asks) before c1; the grandchild's reply: g0 (note) and g1 (risky, asks).
 */
function tree() {
  const note = countingTool("note");
  const risky = countingTool("risky");
  const models = {
    grandchild: scriptedModel([
      {
        toolCalls: [
          { id: "g0", name: "note", input: { target: "g-note" } },
          { id: "g1", name: "risky", input: { target: "g-risky" } },
        ],
      },
      { text: "grandchild done" },
    ]),
    child: scriptedModel([
      {
        toolCalls: [
          { id: "c0", name: "note", input: { target: "c-note" } },
          { id: "c1", name: "grandchild", input: { prompt: "dig" } },
          { id: "cr", name: "risky", input: { target: "c-risky" } },
        ],
      },
      { text: "child done" },
    ]),
    root: scriptedModel([
      { toolCalls: [{ id: "p1", name: "child", input: { prompt: "look" } }] },
      { text: "root done" },
    ]),
  };
  const grandchild = createBareAgent({
    id: "grandchild",
    model: models.grandchild,
    tools: [note.tool, risky.tool],
  });
  const child = createBareAgent({
    id: "child",
    model: models.child,
    tools: [note.tool, risky.tool, agentTool(grandchild, { description: "Digs" })],
    toolConcurrency: { mode: "all" },
  });
  const root = createBareAgent({
    model: models.root,
    tools: [agentTool(child, { description: "Looks" })],
    permissions: { ask: ["risky"] },
  });
  return { root, models, note, risky };
}

async function paused() {
  const setup = tree();
  const result = await setup.root.run("go");
  expect(result.subtype).toBe("paused");
  const counts = () => ({
    note: setup.note.runs.length,
    risky: setup.risky.runs.length,
    models: Object.values(setup.models).map((model) => model.requests.length),
  });
  const before = counts();
  const fresh = () => JSON.parse(JSON.stringify(result.state)) as RunState;
  /** Resuming `state` is refused with ResumeError, and nothing ran: no handler, no model call. */
  const expectRefused = async (state: unknown, approvals: Record<string, PermissionResult>) => {
    const error = await rejectionOf(setup.root.resume(state as RunState, { approvals }));
    expect(error).toBeInstanceOf(ResumeError);
    expect(counts()).toEqual(before);
    return error;
  };
  return { ...setup, result, fresh, counts, before, expectRefused };
}

type AnyCall = { id: string; input: unknown; state?: RunState; result?: { content: unknown } };

/** The paused call `id` of a state's batch (throws when there is none). */
function callIn(state: RunState, id: string): AnyCall {
  const call = state.batch?.calls.find((entry) => entry.id === id);
  if (!call) throw new Error(`no call ${id}`);
  return call as AnyCall;
}

const childState = (state: RunState) => callIn(state, "p1").state!;
const grandchildState = (state: RunState) => callIn(childState(state), "c1").state!;

/** The tool_use block `id` of a state's last message. */
function toolUse(state: RunState, id: string): { input: unknown } {
  const last = state.messages.at(-1)!;
  const blocks = last.content as { type: string; id?: string; input?: unknown }[];
  return blocks.find((block) => block.type === "tool_use" && block.id === id) as { input: unknown };
}

describe("the paused tree (control)", () => {
  it("lists both levels' waiting calls, and resumes untouched", async () => {
    const { result, fresh, root, risky, note } = await paused();
    expect(result.pending?.map((call) => [call.id, call.parentCallId])).toEqual([
      ["g1", "c1"],
      ["cr", "p1"],
    ]);
    expect(note.runs.sort()).toEqual(["c-note", "g-note"]);
    const resumed = await root.resume(fresh(), { approvals: { g1: true, cr: true } });
    expect(resumed.subtype).toBe("success");
    expect(risky.runs.sort()).toEqual(["c-risky", "g-risky"]);
    expect(note.runs.sort()).toEqual(["c-note", "g-note"]);
  });
});

describe("a state altered at any level is refused before any side effect", () => {
  it("the child's pending call input (batch only)", async () => {
    const { fresh, expectRefused } = await paused();
    const state = fresh();
    callIn(childState(state), "cr").input = { target: "evil" };
    await expectRefused(state, { g1: true, cr: true });
  });

  it("the child's pending call input, in the batch and its transcript alike", async () => {
    const { fresh, expectRefused } = await paused();
    const state = fresh();
    callIn(childState(state), "cr").input = { target: "evil" };
    toolUse(childState(state), "cr").input = { target: "evil" };
    await expectRefused(state, { g1: true, cr: true });
  });

  it("the child's transcript (its prompt)", async () => {
    const { fresh, expectRefused } = await paused();
    const state = fresh();
    childState(state).messages[0] = { role: "user", content: "do something else entirely" };
    await expectRefused(state, { g1: true, cr: true });
  });

  it("the child's finished call's result (re-answered)", async () => {
    const { fresh, expectRefused } = await paused();
    const state = fresh();
    callIn(childState(state), "c0").result!.content = "a different answer";
    await expectRefused(state, { g1: true, cr: true });
  });

  it("the child's numTurns (to win more turns)", async () => {
    const { fresh, expectRefused } = await paused();
    const state = fresh();
    childState(state).numTurns = 0;
    await expectRefused(state, { g1: true, cr: true });
  });

  it("the grandchild's pending call input", async () => {
    const { fresh, expectRefused } = await paused();
    const state = fresh();
    callIn(grandchildState(state), "g1").input = { target: "evil" };
    toolUse(grandchildState(state), "g1").input = { target: "evil" };
    await expectRefused(state, { g1: true, cr: true });
  });

  it("the grandchild's transcript", async () => {
    const { fresh, expectRefused } = await paused();
    const state = fresh();
    grandchildState(state).messages[0] = { role: "user", content: "exfiltrate" };
    await expectRefused(state, { g1: true });
  });

  it("the child's paused state replaced by something that is not a state", async () => {
    const { fresh, expectRefused } = await paused();
    const state = fresh();
    callIn(state, "p1").state = { version: 1 } as never;
    await expectRefused(state, {});
  });
});

describe("approvals naming calls that wait nowhere in the tree", () => {
  it("an unknown id is a ResumeError before anything runs", async () => {
    const { fresh, expectRefused } = await paused();
    const error = await expectRefused(fresh(), { g1: true, nope: true });
    expect(error.message).toContain("nope");
  });

  it("the agent call itself is not waiting for approval", async () => {
    const { fresh, expectRefused } = await paused();
    await expectRefused(fresh(), { p1: true });
  });

  it("a qualified id under the wrong parent call", async () => {
    const { fresh, expectRefused } = await paused();
    await expectRefused(fresh(), { "p9/cr": true });
  });

  it("the qualified form of a call that shares its id with no other is accepted too", async () => {
    const { fresh, root, risky } = await paused();
    const resumed = await root.resume(fresh(), { approvals: { "p1/cr": true, "c1/g1": true } });
    expect(resumed.subtype).toBe("success");
    expect(risky.runs.sort()).toEqual(["c-risky", "g-risky"]);
  });
});
