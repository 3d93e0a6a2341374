// Pause/resume around agent calls: the parent's other calls, the turn budget after resume, a
// child's call waiting for the app, and seals checked with the resumed run's approvalSecret.
import { agentTool, createBareAgent, defineTool, ResumeError } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { rejectionOf } from "../support/promises.ts";
import { expectValidTranscript, resultFor, resultText } from "../support/results.ts";
import { countingTool } from "../support/tools.ts";
import { detailsOf } from "./helpers.ts";
import { pausedTwoLevels, twoLevels } from "./paused-tree.ts";

describe("around the paused agent call", () => {
  it("the parent's batch settles its other calls (after the agent call too) before it pauses; resume does not re-run them", async () => {
    const note = countingTool("note");
    const risky = countingTool("risky");
    const child = createBareAgent({
      id: "child",
      model: scriptedModel([
        { toolCalls: [{ id: "c1", name: "risky", input: { target: "r" } }] },
        { text: "child done" },
      ]),
      tools: [risky.tool],
      permissions: { ask: ["risky"] },
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "n1", name: "note", input: { target: "before" } },
          { id: "p1", name: "child", input: { prompt: "x" } },
          { id: "n2", name: "note", input: { target: "after" } },
        ],
      },
      { text: "parent done" },
    ]);
    const parent = createBareAgent({
      model,
      tools: [note.tool, agentTool(child, { description: "C" })],
    });
    const paused = await parent.run("go");
    expect(paused.subtype).toBe("paused");
    expect(paused.pending?.map((call) => call.id)).toEqual(["c1"]);
    expect(note.runs).toEqual(["before", "after"]);
    const resumed = await parent.resume(JSON.parse(JSON.stringify(paused.state)), {
      approvals: { c1: true },
    });
    expect(resumed.subtype).toBe("success");
    expect(note.runs).toEqual(["before", "after"]);
    expect(risky.runs).toEqual(["r"]);
    expectValidTranscript(resumed.messages);
  });

  it("a resumed child's turns stay within the parent's budget (maxTurns 3, one used: two in all)", async () => {
    const note = countingTool("note");
    const risky = countingTool("risky");
    let childCalls = 0;
    const child = createBareAgent({
      id: "child",
      model: scriptedModel(() => {
        childCalls++;
        return childCalls === 1
          ? { toolCalls: [{ id: "c1", name: "risky", input: { target: "r" } }] }
          : { toolCalls: [{ id: `n${childCalls}`, name: "note", input: { target: "loop" } }] };
      }),
      tools: [risky.tool, note.tool],
      permissions: { ask: ["risky"] },
    });
    const parent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "p1", name: "child", input: { prompt: "x" } }] },
        { text: "parent done" },
      ]),
      maxTurns: 3,
      tools: [agentTool(child, { description: "C" })],
    });
    const paused = await parent.run("go");
    expect(paused.subtype).toBe("paused");
    const resumed = await parent.resume(JSON.parse(JSON.stringify(paused.state)), {
      approvals: { c1: true },
    });
    expect(childCalls).toBe(2);
    expect(detailsOf(resumed, "p1")).toMatchObject({ subtype: "error_max_turns", numTurns: 2 });
    expect(resumed.result).toBe("parent done");
  });
});

describe("a child's call waiting for the app (execute: false)", () => {
  it("pauses the root with the child's call (reason external, parentCallId); toolOutputs keyed by its id resume it", async () => {
    const lookup = defineTool({ id: "lookup", execute: false });
    const childModel = scriptedModel([
      { toolCalls: [{ id: "c1", name: "lookup", input: { q: "order 7" } }] },
      { text: "child done" },
    ]);
    const child = createBareAgent({ id: "child", model: childModel, tools: [lookup] });
    const parent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "p1", name: "child", input: { prompt: "x" } }] },
        { text: "parent done" },
      ]),
      tools: [agentTool(child, { description: "C" })],
    });
    const paused = await parent.run("go");
    expect(paused.subtype).toBe("paused");
    expect(paused.pending).toEqual([
      { id: "c1", name: "lookup", input: { q: "order 7" }, reason: "external", parentCallId: "p1" },
    ]);
    const resumed = await parent.resume(JSON.parse(JSON.stringify(paused.state)), {
      toolOutputs: { c1: "order 7 shipped" },
    });
    expect(resumed.subtype).toBe("success");
    expect(resultText(resultFor(childModel.requests[1]!.messages, "c1"))).toBe("order 7 shipped");
    expect(resultText(resultFor(resumed.messages, "p1"))).toBe("child done");
  });
});

describe("seals across levels use the resumed run's approvalSecret", () => {
  it("a child with an approvalSecret of its own pauses and resumes under its parent", async () => {
    const { parent, state, risky } = await pausedTwoLevels(
      { approvalSecret: "the-parents-secret-0123456789" },
      { approvalSecret: "the-childs-own-secret-987654321" },
    );
    const result = await parent.resume(state(), { approvals: { c2: true } });
    expect(result.subtype).toBe("success");
    expect(risky.runs).toEqual(["launch"]);
  });

  it("a parent assembled with another approvalSecret refuses the state before anything runs", async () => {
    const { state, note, childModel } = await pausedTwoLevels({
      approvalSecret: "the-parents-secret-0123456789",
    });
    const other = twoLevels({ approvalSecret: "another-secret-entirely-000000" });
    const error = await rejectionOf(other.parent.resume(state(), { approvals: { c2: true } }));
    expect(error).toBeInstanceOf(ResumeError);
    expect(other.risky.runs).toEqual([]);
    expect(other.note.runs).toEqual([]);
    expect(other.childModel.requests).toHaveLength(0);
    expect(other.model.requests).toHaveLength(0);
    expect(note.runs).toHaveLength(2);
    expect(childModel.requests).toHaveLength(1);
  });
});
