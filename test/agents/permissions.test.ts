// A child never gets more than its parents (design/agents.md, "Permissions"): rules combine
// across levels (deny beats ask beats allow), hidden tools stay hidden, allowedTools narrows, and a
// child's ask goes to the root's approval handler with parentCallId.
import {
  type AgentOptions,
  type ApprovalHandler,
  agentTool,
  createBareAgent,
  type Message,
  type PermissionResult,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { resultFor, resultText } from "../support/results.ts";
import { countingTool } from "../support/tools.ts";
import { collect, detailsOf, offered, toolEnds } from "./helpers.ts";

type Call = { id: string; name: string; input: unknown };

/**
 * parent --p1--> child (tools: note, other); the child's model makes `childCalls` in one reply,
 * then answers "child done". Options of each level are given.
 */
function twoLevels(
  childCalls: Call[],
  parentOptions: Partial<AgentOptions> = {},
  childOptions: Partial<AgentOptions> = {},
) {
  const note = countingTool("note");
  const other = countingTool("other");
  const childModel = scriptedModel([{ toolCalls: childCalls }, { text: "child done" }]);
  const child = createBareAgent({
    id: "child",
    model: childModel,
    tools: [note.tool, other.tool],
    ...childOptions,
  });
  const model = scriptedModel([
    { toolCalls: [{ id: "p1", name: "child", input: { prompt: "work" } }] },
    { text: "parent done" },
  ]);
  const parent = createBareAgent({
    model,
    tools: [agentTool(child, { description: "Works" })],
    ...parentOptions,
  });
  return { parent, model, childModel, note, other };
}

/** The child's transcript as its model last saw it. */
const childMessages = (childModel: { requests: { messages: Message[] }[] }) =>
  childModel.requests.at(-1)!.messages;

describe("rules combine across levels", () => {
  it("a parent's deny rule on the child's tool denies the child's call (pattern rule)", async () => {
    const { parent, childModel, note } = twoLevels(
      [
        { id: "c1", name: "note", input: { target: "secret" } },
        { id: "c2", name: "note", input: { target: "public" } },
      ],
      { permissions: { deny: ["note(secret)"] } },
    );
    const result = await parent.run("go");
    expect(result.subtype).toBe("success");
    expect(note.runs).toEqual(["public"]);
    const denied = resultFor(childMessages(childModel), "c1");
    expect(denied.is_error).toBe(true);
    expect(resultText(denied)).toMatch(/denied|not allowed|deny/i);
    // The child finished; its answer reached the parent.
    expect(resultText(resultFor(result.messages, "p1"))).toBe("child done");
  });

  it("a parent's deny beats the child's own allow rule", async () => {
    const { parent, note } = twoLevels(
      [{ id: "c1", name: "note", input: { target: "secret" } }],
      { permissions: { deny: ["note(secret)"] } },
      { permissions: { allow: ["note(secret)"] } },
    );
    await parent.run("go");
    expect(note.runs).toEqual([]);
  });

  it("the child's own deny beats the parent's ask (no approval is asked)", async () => {
    const asked: string[] = [];
    const { parent, note } = twoLevels(
      [{ id: "c1", name: "note", input: { target: "x" } }],
      {
        permissions: { ask: ["note"] },
        approval: (name) => {
          asked.push(name);
          return true;
        },
      },
      { permissions: { deny: ["note(x)"] } },
    );
    await parent.run("go");
    expect(note.runs).toEqual([]);
    expect(asked).toEqual([]);
  });
});

describe("a child's ask goes to the root's approval handler", () => {
  function askSetup(answer: PermissionResult) {
    const seen: { name: string; input: unknown; options: Parameters<ApprovalHandler>[2] }[] = [];
    const childOwn: string[] = [];
    const setup = twoLevels(
      [
        { id: "c1", name: "note", input: { target: "alpha" } },
        { id: "c2", name: "other", input: { target: "beta" } },
      ],
      {
        permissions: { ask: ["note"] },
        approval: (name, input, options) => {
          seen.push({ name, input, options });
          return answer;
        },
      },
      {
        // The child's own handler must not be used when it runs as a child.
        approval: (name) => {
          childOwn.push(name);
          return true;
        },
      },
    );
    return { ...setup, seen, childOwn };
  }

  it("with { callId: the child's call id, parentCallId, sessionId: the child's, reason }", async () => {
    const { parent, seen, childOwn, note, other } = askSetup(true);
    const result = await parent.run("go");
    expect(seen).toHaveLength(1);
    expect(seen[0]!.name).toBe("note");
    expect(seen[0]!.input).toEqual({ target: "alpha" });
    expect(seen[0]!.options).toMatchObject({
      callId: "c1",
      parentCallId: "p1",
      sessionId: detailsOf(result, "p1").sessionId,
    });
    expect(seen[0]!.options.sessionId).not.toBe(result.sessionId);
    expect(seen[0]!.options.signal).toBeInstanceOf(AbortSignal);
    expect(childOwn).toEqual([]);
    expect(note.runs).toEqual(["alpha"]);
    expect(other.runs).toEqual(["beta"]);
  });

  it("a denial means what it means at top level: the child's call is an error result, the child goes on", async () => {
    const { parent, childModel, note } = askSetup({ behavior: "deny", message: "not today" });
    const result = await parent.run("go");
    expect(note.runs).toEqual([]);
    expect(resultText(resultFor(childMessages(childModel), "c1"))).toContain("not today");
    expect(resultText(resultFor(result.messages, "p1"))).toBe("child done");
  });

  it("two levels down: the grandchild's ask reaches the root's handler tagged with the child's call id", async () => {
    const note = countingTool("note");
    const seen: Parameters<ApprovalHandler>[2][] = [];
    const middleOwn: string[] = [];
    const grandchild = createBareAgent({
      id: "grandchild",
      model: scriptedModel([
        { toolCalls: [{ id: "g1", name: "note", input: { target: "deep" } }] },
        { text: "g done" },
      ]),
      tools: [note.tool],
    });
    const child = createBareAgent({
      id: "child",
      model: scriptedModel([
        { toolCalls: [{ id: "c1", name: "grandchild", input: { prompt: "x" } }] },
        { text: "c done" },
      ]),
      tools: [agentTool(grandchild, { description: "G" })],
      approval: (name) => {
        middleOwn.push(name);
        return true;
      },
    });
    const parent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "p1", name: "child", input: { prompt: "y" } }] },
        { text: "p done" },
      ]),
      tools: [agentTool(child, { description: "C" })],
      permissions: { ask: ["note"] },
      approval: (_name, _input, options) => {
        seen.push(options);
        return true;
      },
    });
    await parent.run("go");
    expect(seen.map((options) => [options.callId, options.parentCallId])).toEqual([["g1", "c1"]]);
    expect(middleOwn).toEqual([]);
    expect(note.runs).toEqual(["deep"]);
  });
});

describe("hidden tools stay hidden; allowedTools narrows", () => {
  it("a parent's disallowedTools hides the tool from the child's model", async () => {
    const { parent, childModel } = twoLevels([], { disallowedTools: ["note"] });
    await parent.run("go");
    expect(offered(childModel)).toEqual(["other"]);
  });

  it("a parent's bare deny rule hides it too", async () => {
    const { parent, childModel } = twoLevels([], { permissions: { deny: ["note"] } });
    await parent.run("go");
    expect(offered(childModel)).toEqual(["other"]);
  });

  it("a parent's allowedTools narrows what the child's model sees", async () => {
    const { parent, childModel } = twoLevels([], { allowedTools: ["child", "other"] });
    await parent.run("go");
    expect(offered(childModel)).toEqual(["other"]);
  });

  it("a hidden tool called anyway is a not_found error result and does not run", async () => {
    const { parent, childModel, note } = twoLevels(
      [{ id: "c1", name: "note", input: { target: "x" } }],
      { disallowedTools: ["note"] },
    );
    const { events } = await collect(parent.stream("go"));
    expect(note.runs).toEqual([]);
    const block = resultFor(childMessages(childModel), "c1");
    expect(block.is_error).toBe(true);
    expect(resultText(block)).toMatch(/does not exist/);
    const end = toolEnds(events).find(
      (event) => event.callId === "c1" && event.parentCallId === "p1",
    );
    expect(end?.details).toMatchObject({ reason: "not_found" });
  });

  it("the parent's rules apply only to the child's run, not to the child run alone", async () => {
    const { note } = twoLevels([], { disallowedTools: ["note"] });
    const alone = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "n1", name: "note", input: { target: "solo" } }] },
        { text: "ok" },
      ]),
      tools: [note.tool],
    });
    await alone.run("go");
    expect(note.runs).toEqual(["solo"]);
  });
});

describe("allow only if every level allows", () => {
  it("a child's own allow rule does not get past a parent's ask", async () => {
    const asked: string[] = [];
    const { parent, note } = twoLevels(
      [{ id: "c1", name: "note", input: { target: "x" } }],
      {
        permissions: { ask: ["note"] },
        approval: (_name, _input, options) => {
          asked.push(options.callId);
          return false;
        },
      },
      { permissions: { allow: ["note"] } },
    );
    await parent.run("go");
    expect(asked).toEqual(["c1"]);
    expect(note.runs).toEqual([]);
  });

  it("the same child under two parents: one parent's rules never leak into the other's runs", async () => {
    const note = countingTool("note");
    const childModel = scriptedModel(() => ({ text: "child done" }));
    const child = createBareAgent({ id: "child", model: childModel, tools: [note.tool] });
    const parentWith = (options: Partial<AgentOptions>) =>
      createBareAgent({
        model: scriptedModel([
          { toolCalls: [{ id: "p1", name: "child", input: { prompt: "x" } }] },
          { text: "done" },
        ]),
        tools: [agentTool(child, { description: "C" })],
        ...options,
      });
    await parentWith({ disallowedTools: ["note"] }).run("go");
    await parentWith({}).run("go");
    await parentWith({ disallowedTools: ["note"] }).run("go");
    await child.run("alone");
    expect([0, 1, 2, 3].map((index) => offered(childModel, index))).toEqual([
      [],
      ["note"],
      [],
      ["note"],
    ]);
  });
});
