import { createBareAgent, defineTool, type RunState, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { resultFor } from "../support/results.ts";
import {
  callIn,
  coverTracks,
  expectRefused,
  lastMessage,
  pausedBatch,
} from "./state-replay-helpers.ts";

/*
 * Issue 8, section 5, for states with no seal: calls waiting only for the app's output (they may
 * resume in any process, so they are not sealed), and runs stopped at maxTurns. Their shape is all
 * `resume` can check, and it is checked before anything runs.
 */
const BATCH = [
  { id: "s1", name: "safe", input: { target: "one" } },
  { id: "e1", name: "ext", input: { q: "first" } },
  { id: "e2", name: "ext", input: { q: "second" } },
];
const OUTPUTS = { toolOutputs: { e1: "yes", e2: "no" } };

describe("a batch waiting only for the app's output", () => {
  it("resumes untouched (control): each output is taken once", async () => {
    const setup = await pausedBatch(BATCH);
    const resumed = await setup.resumer().resume(setup.fresh(), OUTPUTS);
    expect(resumed.subtype).toBe("success");
    expect(setup.counts.responses).toBe(2);
    expect(setup.counts.safe).toEqual(["one"]);
  });

  it("refuses a waiting call duplicated in the batch, transcript and steps", async () => {
    const setup = await pausedBatch(BATCH);
    const state = setup.fresh();
    state.batch!.calls.push(structuredClone(callIn(state, "e1")));
    lastMessage(state).content.push(structuredClone(lastMessage(state).content[1]!));
    await expectRefused(setup, coverTracks(state), OUTPUTS, /more than once/);
  });

  it("refuses a finished call moved back to waiting when its step still lists it", async () => {
    const setup = await pausedBatch(BATCH);
    const state = setup.fresh();
    state.batch!.calls[0] = {
      id: "s1",
      name: "safe",
      input: { target: "one" },
      status: "pending",
      reason: "external",
    };
    await expectRefused(
      setup,
      state,
      { toolOutputs: { ...OUTPUTS.toolOutputs, s1: "forged" } },
      /finished calls differ/,
    );
  });

  it("with its steps edited too (nothing sealed to give it away), the call still never runs again", async () => {
    const setup = await pausedBatch(BATCH);
    const state = setup.fresh();
    state.batch!.calls[0] = {
      id: "s1",
      name: "safe",
      input: { target: "one" },
      status: "pending",
      reason: "external",
    };
    const resumed = await setup
      .resumer()
      .resume(coverTracks(state), { toolOutputs: { ...OUTPUTS.toolOutputs, s1: "forged" } });
    expect(resumed.subtype).toBe("success");
    expect(setup.counts.safe).toEqual(["one"]);
  });
});

describe("a run stopped at maxTurns", () => {
  async function stopped() {
    const model = scriptedModel([
      { toolCalls: [{ id: "a1", name: "note", input: {} }] },
      { text: "done" },
    ]);
    let notes = 0;
    const note = tool("note", "Notes", z.object({}), async () => {
      notes++;
      return "noted";
    });
    const options = { model, tools: [note], maxTurns: 1 };
    const result = await createBareAgent(options).run("go");
    expect(result.subtype).toBe("error_max_turns");
    const fresh = () => JSON.parse(JSON.stringify(result.state)) as RunState;
    return { model, options, fresh, notes: () => notes };
  }

  it("resumes untouched with a higher maxTurns (control)", async () => {
    const run = await stopped();
    const resumed = await createBareAgent({ ...run.options, maxTurns: 5 }).resume(run.fresh());
    expect(resumed.subtype).toBe("success");
  });

  it("refuses a reply with a call appended after the last results (no batch entry for it)", async () => {
    const run = await stopped();
    const state = run.fresh();
    const reply = {
      role: "assistant" as const,
      content: [{ type: "tool_use" as const, id: "a2", name: "note", input: {} }],
    };
    state.messages.push(reply);
    state.steps.push({ message: structuredClone(reply), toolCalls: [] });
    state.numTurns = state.steps.length;
    const error = await createBareAgent({ ...run.options, maxTurns: 5 })
      .resume(state)
      .then(
        () => undefined,
        (thrown: unknown) => thrown as Error,
      );
    expect(error?.name).toBe("ResumeError");
    expect(error?.message).toMatch(/"a2" has neither a result nor a paused batch entry/);
    expect(run.model.requests).toHaveLength(1);
    expect(run.notes()).toBe(1);
  });
});

describe("runData copied from another session", () => {
  /** Turn 1 stores a note in runData and pauses on an approval; turn 2 reads the note back. */
  async function pausedWithNote(sessionId: string, value: string) {
    const remember = tool(
      "remember",
      "Remembers",
      z.object({ value: z.string() }),
      (input, ctx) => {
        ctx.runData.set("note", input.value);
        return "remembered";
      },
    );
    const recall = tool("recall", "Recalls", z.object({}), (_input, ctx) =>
      String(ctx.runData.get("note") ?? "nothing"),
    );
    const gate = defineTool({ id: "gate", execute: () => "opened" });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "m1", name: "remember", input: { value } },
          { id: "g1", name: "gate", input: {} },
        ],
      },
      { toolCalls: [{ id: "c1", name: "recall", input: {} }] },
      { text: "done" },
    ]);
    const options = { model, tools: [remember, recall, gate], permissions: { ask: ["gate"] } };
    const result = await createBareAgent(options).run("go", { sessionId });
    expect(result.subtype).toBe("paused");
    return { options, state: JSON.parse(JSON.stringify(result.state)) as RunState };
  }

  it("is not trusted: the resumed run sees no runData (control: its own is kept)", async () => {
    const own = await pausedWithNote("session-a", "from a");
    const kept = await createBareAgent(own.options).resume(own.state, { approvals: { g1: true } });
    expect(resultFor(kept.messages, "c1").content).toBe("from a");

    const target = await pausedWithNote("session-a", "from a");
    const other = await pausedWithNote("session-b", "from b");
    target.state.runData = other.state.runData;
    target.state.runDataSeal = other.state.runDataSeal;
    const resumed = await createBareAgent(target.options).resume(target.state, {
      approvals: { g1: true },
    });
    expect(resultFor(resumed.messages, "c1").content).toBe("nothing");
  });
});
