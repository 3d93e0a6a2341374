// Child events in the parent's stream (design/agents.md, "Events"): inside the call, tagged
// parentCallId = the call that started the run they come from, over two levels; the child's
// result is not forwarded; the parent's own events never carry the tag.
import { type AgentEvent, agentTool, createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { noEager } from "../run/helpers.ts";
import { collect, noteTool, ownCallBounds, parentOf } from "./helpers.ts";

/** parent --p1--> child --c1--> grandchild --g1--> note. */
function threeLevels(
  ids: { p: string | undefined; c: string | undefined; g: string | undefined },
  options: { eager?: boolean } = {},
) {
  // A batch policy turns eager starts off, so a call starts after its reply's message event.
  const policy = options.eager ? {} : { toolBatchPolicy: noEager };
  const note = noteTool();
  const grandchildModel = scriptedModel([
    { toolCalls: [{ ...(ids.g ? { id: ids.g } : {}), name: "note", input: { note: "deep" } }] },
    { text: "grandchild text" },
  ]);
  const grandchild = createBareAgent({
    id: "grandchild",
    model: grandchildModel,
    tools: [note.tool],
    ...policy,
  });
  const childModel = scriptedModel([
    {
      text: "child thinking",
      toolCalls: [
        { ...(ids.c ? { id: ids.c } : {}), name: "grandchild", input: { prompt: "dig" } },
      ],
    },
    { text: "child text" },
  ]);
  const child = createBareAgent({
    id: "child",
    model: childModel,
    tools: [agentTool(grandchild, { description: "Digs" })],
    ...policy,
  });
  const model = scriptedModel([
    {
      text: "parent calls",
      toolCalls: [{ ...(ids.p ? { id: ids.p } : {}), name: "child", input: { prompt: "look" } }],
    },
    { text: "parent text" },
  ]);
  const parent = createBareAgent({
    model,
    tools: [agentTool(child, { description: "Looks" })],
    ...policy,
  });
  return { parent, note };
}

function summary(events: AgentEvent[]): string[] {
  return events.map((event) => {
    const record = event as { callId?: string };
    const tag = parentOf(event) ? ` <${parentOf(event)}>` : "";
    return `${event.type}${record.callId ? `:${record.callId}` : ""}${tag}`;
  });
}

describe("child events in the parent's stream", () => {
  it("come between the agent call's tool_start and tool_end, each tagged (eager starts too)", async () => {
    const { parent } = threeLevels({ p: "p1", c: "c1", g: "g1" }, { eager: true });
    const { events } = await collect(parent.stream("go"));
    const [start, end] = ownCallBounds(events, "p1");
    expect(start).toBeGreaterThan(-1);
    expect(end).toBeGreaterThan(start);
    // With eager starts the parent's own message event may come inside the call; nothing else
    // of the parent's does.
    const inside = events
      .slice(start + 1, end)
      .filter((event) => !(event.type === "message" && parentOf(event) === undefined));
    expect(inside.length).toBeGreaterThan(10);
    for (const event of inside) expect(["p1", "c1"]).toContain(parentOf(event));
    // Nothing of a child run comes outside the call.
    for (const event of [...events.slice(0, start + 1), ...events.slice(end)])
      expect(parentOf(event), `${event.type} outside the call`).toBeUndefined();
  });

  it("over two levels: the child's events name p1, the grandchild's name c1, in order", async () => {
    const { parent } = threeLevels({ p: "p1", c: "c1", g: "g1" });
    const { events } = await collect(parent.stream("go"));
    const lines = summary(events).filter((line) => !line.startsWith("text_delta"));
    const expected = [
      "run_start",
      "turn_start",
      "message",
      "tool_start:p1",
      "run_start <p1>",
      "turn_start <p1>",
      "message <p1>",
      "tool_start:c1 <p1>",
      "run_start <c1>",
      "turn_start <c1>",
      "message <c1>",
      "tool_start:g1 <c1>",
      "tool_end:g1 <c1>",
      "turn_end <c1>",
      "turn_start <c1>",
      "message <c1>",
      "turn_end <c1>",
      "tool_end:c1 <p1>",
      "turn_end <p1>",
      "turn_start <p1>",
      "message <p1>",
      "turn_end <p1>",
      "tool_end:p1",
      "turn_end",
      "turn_start",
      "message",
      "turn_end",
      "result",
    ];
    expect(lines).toEqual(expected);
  });

  it("text deltas of each level carry their level's tag", async () => {
    const { parent } = threeLevels({ p: "p1", c: "c1", g: "g1" });
    const { events } = await collect(parent.stream("go"));
    const deltas = events
      .filter((event) => event.type === "text_delta")
      .map((event) => [(event as { text: string }).text, parentOf(event)]);
    expect(deltas).toEqual([
      ["parent calls", undefined],
      ["child thinking", "p1"],
      ["grandchild text", "c1"],
      ["child text", "p1"],
      ["parent text", undefined],
    ]);
  });

  it("the children's result events are not forwarded: one result, the parent's, last", async () => {
    const { parent } = threeLevels({ p: "p1", c: "c1", g: "g1" });
    const { events, result } = await collect(parent.stream("go"));
    const results = events.filter((event) => event.type === "result");
    expect(results).toHaveLength(1);
    expect(events.at(-1)).toBe(result);
    expect(result.result).toBe("parent text");
    expect(parentOf(result)).toBeUndefined();
  });

  it("the child's run_start carries the child's own sessionId, not the parent's", async () => {
    const { parent } = threeLevels({ p: "p1", c: "c1", g: "g1" });
    const { events, result } = await collect(parent.stream("go"));
    const starts = events.filter((event) => event.type === "run_start") as Extract<
      AgentEvent,
      { type: "run_start" }
    >[];
    expect(starts.map(parentOf)).toEqual([undefined, "p1", "c1"]);
    expect(starts[0]!.sessionId).toBe(result.sessionId);
    expect(new Set(starts.map((start) => start.sessionId)).size).toBe(3);
  });

  it("with default ids at every level (all toolu_1_1), the tags still tell the levels apart", async () => {
    const { parent, note } = threeLevels({ p: undefined, c: undefined, g: undefined });
    const { events, result } = await collect(parent.stream("go"));
    expect(result.subtype).toBe("success");
    expect(note.runs).toHaveLength(1);
    const starts = events.filter((event) => event.type === "tool_start");
    expect(starts.map((event) => [(event as { callId: string }).callId, parentOf(event)])).toEqual([
      ["toolu_1_1", undefined],
      ["toolu_1_1", "toolu_1_1"],
      ["toolu_1_1", "toolu_1_1"],
    ]);
    // The parent's own tool_end is the last tool_end, untagged.
    const ends = events.filter((event) => event.type === "tool_end");
    expect(ends.map(parentOf)).toEqual(["toolu_1_1", "toolu_1_1", undefined]);
  });

  it("run() (no stream) gives the same result", async () => {
    const { parent, note } = threeLevels({ p: "p1", c: "c1", g: "g1" });
    const result = await parent.run("go");
    expect(result.result).toBe("parent text");
    expect(note.runs.map((run) => run.callId)).toEqual(["g1"]);
  });
});

describe("a child tool's custom events and progress", () => {
  it("ctx.emit and ctx.update inside the child reach the parent's stream, tagged", async () => {
    const progress = tool("progress", "Reports", z.object({}), async (_input, ctx) => {
      ctx.emit({ type: "app.progress", percent: 50 });
      ctx.update({ step: 1 });
      return "reported";
    });
    const child = createBareAgent({
      id: "child",
      model: scriptedModel([
        { toolCalls: [{ id: "c1", name: "progress", input: {} }] },
        { text: "child done" },
      ]),
      tools: [progress],
    });
    const parent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "p1", name: "child", input: { prompt: "go" } }] },
        { text: "done" },
      ]),
      tools: [agentTool(child, { description: "C" })],
    });
    const { events } = await collect(parent.stream("go"));
    const custom = events.find((event) => event.type === "app.progress");
    expect(custom).toMatchObject({ type: "app.progress", percent: 50, parentCallId: "p1" });
    const update = events.find((event) => event.type === "tool_update");
    expect(update).toMatchObject({ callId: "c1", update: { step: 1 }, parentCallId: "p1" });
    const [start, end] = ownCallBounds(events, "p1");
    expect(events.indexOf(custom!)).toBeGreaterThan(start);
    expect(events.indexOf(custom!)).toBeLessThan(end);
  });
});
