// A child's ask with no approval handler up the chain pauses the root; resume continues inside
// the child (design/agents.md, "Permissions", approval paragraphs). Two and three levels.
import {
  type Agent,
  agentTool,
  createBareAgent,
  type RunState,
  type SDKResultMessage,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { expectValidTranscript, resultFor, resultText } from "../support/results.ts";
import { countingTool } from "../support/tools.ts";
import { collect, detailsOf, parentOf, tokens } from "./helpers.ts";
import { pausedTwoLevels, twoLevels } from "./paused-tree.ts";

describe("a child's call asks and no handler is anywhere up the chain", () => {
  it("the parent pauses: pending lists the child's call with its own id, reason and parentCallId", async () => {
    const { paused } = await pausedTwoLevels();
    expect(paused.isError).toBe(false);
    expect(paused.pending).toEqual([
      {
        id: "c2",
        name: "risky",
        input: { target: "launch" },
        reason: "approval",
        approvalReason: expect.any(String),
        parentCallId: "p1",
      },
    ]);
  });

  it("the parent's other calls and the child's finished calls ran; the risky one did not", async () => {
    const { note, risky, model, childModel } = await pausedTwoLevels();
    expect(note.runs.sort()).toEqual(["child-note", "parent-note"]);
    expect(risky.runs).toEqual([]);
    expect(model.requests).toHaveLength(1);
    expect(childModel.requests).toHaveLength(1);
  });

  it("the child's own approval handler is not used", async () => {
    const asked: string[] = [];
    const { paused, risky } = await pausedTwoLevels(
      {},
      {
        approval: (name) => {
          asked.push(name);
          return true;
        },
      },
    );
    expect(asked).toEqual([]);
    expect(risky.runs).toEqual([]);
    expect(paused.pending?.map((call) => call.id)).toEqual(["c2"]);
  });

  it("the state is plain JSON and carries totalUsage", async () => {
    const { paused, state } = await pausedTwoLevels();
    expect(state()).toEqual(paused.state);
    expect(paused.totalUsage).toEqual(tokens(11, 2));
    expect(paused.usage).toEqual(tokens(1, 1));
  });

  it("a parent's ask rule on the child's tool pauses the same way", async () => {
    const { paused, risky } = await pausedTwoLevels(
      { permissions: { ask: ["risky"] } },
      { permissions: {} },
    );
    expect(paused.pending?.map((call) => [call.id, call.reason, call.parentCallId])).toEqual([
      ["c2", "approval", "p1"],
    ]);
    expect(risky.runs).toEqual([]);
  });
});

describe("resume with approvals keyed by the child's call ids", () => {
  it("runs the approved call inside the child, the child goes on, then the parent", async () => {
    const { parent, state, note, risky, model, childModel } = await pausedTwoLevels();
    const result = await parent.resume(state(), { approvals: { c2: true } });
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("parent done");
    expect(risky.runs).toEqual(["launch"]);
    // Finished calls are not run again.
    expect(note.runs.sort()).toEqual(["child-note", "parent-note"]);
    expect(childModel.requests).toHaveLength(2);
    expect(model.requests).toHaveLength(2);
    // The child's model saw every one of its calls answered, c2 successfully.
    const childTranscript = childModel.requests[1]!.messages;
    expectValidTranscript(childTranscript);
    expect(resultText(resultFor(childTranscript, "c2"))).toBe("risky ran on launch");
    expect(resultText(resultFor(childTranscript, "c1"))).toBe("note ran on child-note");
    // The child's outcome is the agent call's result.
    expect(resultText(resultFor(result.messages, "p1"))).toBe("child done");
    expectValidTranscript(result.messages);
  });

  it("a resumed child counts in totalUsage, before and after the pause, and in details.usage", async () => {
    const { parent, state } = await pausedTwoLevels();
    const result = await parent.resume(state(), { approvals: { c2: true } });
    expect(result.totalUsage).toEqual(tokens(33, 6));
    expect(detailsOf(result, "p1").usage).toEqual(tokens(30, 3));
    expect(detailsOf(result, "p1")).toMatchObject({
      agent: "child",
      subtype: "success",
      numTurns: 2,
    });
  });

  it("a denial (or no answer) is an error result inside the child; the child and parent go on", async () => {
    for (const approvals of [{ c2: false }, {}] as Record<string, boolean>[]) {
      const { parent, state, risky, childModel } = await pausedTwoLevels();
      const result = await parent.resume(state(), { approvals });
      expect(result.subtype).toBe("success");
      expect(risky.runs).toEqual([]);
      expect(resultFor(childModel.requests[1]!.messages, "c2").is_error).toBe(true);
    }
  });

  it("resumeStream: the resumed child's events are tagged with the agent call's id", async () => {
    const { parent, state } = await pausedTwoLevels();
    const { events, result } = await collect(
      parent.resumeStream(state(), { approvals: { c2: true } }),
    );
    expect(result.subtype).toBe("success");
    // (As at top level, a waiting call's tool_start was emitted before the pause; on resume its
    // tool_end comes.)
    const c2End = events.find((event) => event.type === "tool_end" && event.callId === "c2");
    expect(c2End && parentOf(c2End)).toBe("p1");
    const p1End = events.find(
      (event) => event.type === "tool_end" && event.callId === "p1" && !parentOf(event),
    );
    expect(p1End).toBeDefined();
    expect(events.indexOf(c2End!)).toBeLessThan(events.indexOf(p1End!));
    const childText = events.filter(
      (event) => event.type === "text_delta" && parentOf(event) === "p1",
    );
    expect(childText.map((event) => (event as { text: string }).text)).toEqual(["child done"]);
    // The calls that finished before the pause are not started or ended again.
    expect(
      events.filter(
        (event) =>
          (event.type === "tool_start" || event.type === "tool_end") &&
          ["c1", "n1"].includes(event.callId),
      ),
    ).toEqual([]);
  });

  it("a state resumed by another agent assembled the same way (same approvalSecret)", async () => {
    const options = { approvalSecret: "a-shared-secret-of-enough-length" };
    const { state, risky } = await pausedTwoLevels(options);
    const again = twoLevels(options);
    const result = await again.parent.resume(state(), { approvals: { c2: true } });
    expect(result.subtype).toBe("success");
    expect(risky.runs).toEqual([]);
    expect(again.risky.runs).toEqual(["launch"]);
  });
});

/** root --p1--> child --c1--> grandchild, whose reply is g0 (note) and g1 (risky, asks). */
function threeLevels() {
  const note = countingTool("note");
  const risky = countingTool("risky");
  const models = {
    grandchild: scriptedModel([
      {
        toolCalls: [
          { id: "g0", name: "note", input: { target: "deep-note" } },
          { id: "g1", name: "risky", input: { target: "deep" } },
        ],
      },
      { text: "grandchild done" },
    ]),
    child: scriptedModel([
      { toolCalls: [{ id: "c1", name: "grandchild", input: { prompt: "dig" } }] },
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
    permissions: { ask: ["risky"] },
  });
  const child = createBareAgent({
    id: "child",
    model: models.child,
    tools: [agentTool(grandchild, { description: "Digs" })],
  });
  const root: Agent = createBareAgent({
    model: models.root,
    tools: [agentTool(child, { description: "Looks" })],
  });
  return { root, models, note, risky };
}

describe("two levels down", () => {
  it("the root pauses with the grandchild's call, parentCallId naming the child's call", async () => {
    const { root, note } = threeLevels();
    const paused = await root.run("go");
    expect(paused.subtype).toBe("paused");
    expect(paused.pending).toEqual([
      expect.objectContaining({ id: "g1", name: "risky", reason: "approval", parentCallId: "c1" }),
    ]);
    expect(note.runs).toEqual(["deep-note"]);
  });

  it("resume runs it in the grandchild, which goes on, then the child, then the root", async () => {
    const { root, models, note, risky } = threeLevels();
    const paused: SDKResultMessage = await root.run("go");
    const state = JSON.parse(JSON.stringify(paused.state)) as RunState;
    const result = await root.resume(state, { approvals: { g1: true } });
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("root done");
    expect(risky.runs).toEqual(["deep"]);
    expect(note.runs).toEqual(["deep-note"]);
    expect(models.grandchild.requests).toHaveLength(2);
    expect(models.child.requests).toHaveLength(2);
    expect(models.root.requests).toHaveLength(2);
    expect(resultText(resultFor(models.child.requests[1]!.messages, "c1"))).toBe("grandchild done");
    expect(resultText(resultFor(result.messages, "p1"))).toBe("child done");
  });
});
