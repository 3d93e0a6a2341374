// Turn budgets, depth and usage roll-up (design/agents.md, "Budgets", "Depth", "Usage").
import { agentTool, createBareAgent, delegateTool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { resultFor, resultText } from "../support/results.ts";
import { detailsOf, noteTool, scriptedChild, tokens, turn } from "./helpers.ts";

/** A child whose model calls `note` forever: it stops only at its turn budget. */
function endlessChild(maxTurns?: number) {
  const note = noteTool();
  return {
    ...scriptedChild(
      "looper",
      () => ({ toolCalls: [{ name: "note", input: { note: "again" } }] }),
      {
        tools: [note.tool],
        ...(maxTurns ? { maxTurns } : {}),
      },
    ),
    note,
  };
}

describe("the child's turn budget", () => {
  it("is bounded by the parent's turns left: maxTurns 3, one used, the child gets 2", async () => {
    const child = endlessChild();
    const model = scriptedModel([
      { toolCalls: [{ id: "p1", name: "looper", input: { prompt: "loop" } }] },
      { text: "parent done" },
    ]);
    const parent = createBareAgent({
      model,
      maxTurns: 3,
      tools: [agentTool(child.agent, { description: "Loops" })],
    });
    const result = await parent.run("go");
    expect(child.model.requests).toHaveLength(2);
    expect(resultFor(result.messages, "p1").is_error).toBe(true);
    expect(detailsOf(result, "p1")).toMatchObject({
      subtype: "error_max_turns",
      numTurns: 2,
      reason: "agent_failed",
    });
    // numTurns counts only the parent's own model calls.
    expect(result.subtype).toBe("success");
    expect(result.numTurns).toBe(2);
  });

  it("a call on the parent's last turn leaves the child no model call at all", async () => {
    const child = endlessChild();
    const note = noteTool("parent_note");
    const model = scriptedModel([
      { toolCalls: [{ id: "n1", name: "parent_note", input: { note: "x" } }] },
      { toolCalls: [{ id: "p1", name: "looper", input: { prompt: "loop" } }] },
      { text: "never" },
    ]);
    const parent = createBareAgent({
      model,
      maxTurns: 2,
      tools: [note.tool, agentTool(child.agent, { description: "Loops" })],
    });
    const result = await parent.run("go");
    expect(child.model.requests).toHaveLength(0);
    expect(resultFor(result.messages, "p1").is_error).toBe(true);
    expect(detailsOf(result, "p1")).toMatchObject({ subtype: "error_max_turns", numTurns: 0 });
    expect(result.subtype).toBe("error_max_turns");
    expect(result.numTurns).toBe(2);
  });

  it("the agent tool's maxTurns bounds it (agentTool)", async () => {
    const child = endlessChild();
    const model = scriptedModel([
      { toolCalls: [{ id: "p1", name: "looper", input: { prompt: "loop" } }] },
      { text: "parent done" },
    ]);
    const tool = agentTool(child.agent, { description: "Loops", maxTurns: 1 });
    const result = await createBareAgent({ model, tools: [tool] }).run("go");
    expect(child.model.requests).toHaveLength(1);
    expect(detailsOf(result, "p1")).toMatchObject({ subtype: "error_max_turns", numTurns: 1 });
  });

  it("the delegate tool's maxTurns bounds it (delegateTool)", async () => {
    const child = endlessChild();
    const model = scriptedModel([
      { toolCalls: [{ id: "p1", name: "delegate", input: { agent: "looper", prompt: "loop" } }] },
      { text: "parent done" },
    ]);
    const tool = delegateTool({ looper: child.agent }, { maxTurns: 2 });
    const result = await createBareAgent({ model, tools: [tool] }).run("go");
    expect(child.model.requests).toHaveLength(2);
    expect(detailsOf(result, "p1")).toMatchObject({
      agent: "looper",
      subtype: "error_max_turns",
      numTurns: 2,
    });
  });

  it("and by the child's own maxTurns", async () => {
    const child = endlessChild(3);
    const model = scriptedModel([
      { toolCalls: [{ id: "p1", name: "looper", input: { prompt: "loop" } }] },
      { text: "parent done" },
    ]);
    const tool = agentTool(child.agent, { description: "Loops", maxTurns: 10 });
    const result = await createBareAgent({ model, tools: [tool] }).run("go");
    expect(child.model.requests).toHaveLength(3);
    expect(resultText(resultFor(result.messages, "p1"))).toMatch(/^Agent "looper" failed: /);
  });
});

/**
 * A chain of agents L0 -> L1 -> ... -> L5, each of which delegates once to the next (the same
 * "keep delegating" a self-recursive agent does) and then answers. `maxDepth[i]` is Li's own.
 */
function chain(maxDepth: (number | undefined)[] = []) {
  const models = Array.from({ length: 6 }, (_, level) =>
    scriptedModel([
      { toolCalls: [{ id: `call${level}`, name: "deeper", input: { prompt: "go deeper" } }] },
      { text: `L${level} done` },
    ]),
  );
  let below: ReturnType<typeof createBareAgent> | undefined;
  const agents: ReturnType<typeof createBareAgent>[] = [];
  for (let level = 5; level >= 0; level--) {
    const depth = maxDepth[level];
    below = createBareAgent({
      id: `L${level}`,
      model: models[level]!,
      tools: below ? [agentTool(below, { name: "deeper", description: "Goes deeper" })] : [],
      ...(depth !== undefined ? { maxDepth: depth } : {}),
    });
    agents.unshift(below);
  }
  return { root: agents[0]!, models };
}

/** How many model calls each level made. */
const calls = (models: { requests: unknown[] }[]) => models.map((model) => model.requests.length);

describe("depth", () => {
  it("default 3: L0..L3 run, L3's call is refused and starts nothing; every level answers", async () => {
    const { root, models } = chain();
    const result = await root.run("go");
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("L0 done");
    expect(calls(models)).toEqual([2, 2, 2, 2, 0, 0]);
    const block = resultFor(models[3]!.requests[1]!.messages, "call3");
    expect(block.is_error).toBe(true);
    expect(resultText(block)).toMatch(/depth limit/);
  });

  it("the refusal is an error result whose text names the depth limit", async () => {
    // Two levels only: root maxDepth 1, so the child's call to the grandchild is refused.
    const { root, models } = chain([1]);
    const result = await root.run("go");
    expect(calls(models)).toEqual([2, 2, 0, 0, 0, 0]);
    const childTranscript = models[1]!.requests[1]!.messages;
    const block = resultFor(childTranscript, "call1");
    expect(block.is_error).toBe(true);
    expect(resultText(block)).toMatch(/depth limit/);
    expect(resultText(resultFor(result.messages, "call0"))).toBe("L1 done");
  });

  it("details.reason is max_depth (seen on the child's tool_end in the parent's stream)", async () => {
    const { root } = chain([1]);
    const ends = [];
    for await (const event of root.stream("go"))
      if (event.type === "tool_end" && event.callId === "call1") ends.push(event);
    expect(ends).toHaveLength(1);
    expect(ends[0]!.isError).toBe(true);
    expect(ends[0]!.details).toMatchObject({ reason: "max_depth" });
  });

  it("a child's own maxDepth lowers the limit for the runs under it", async () => {
    const { root, models } = chain([undefined, 1]);
    await root.run("go");
    expect(calls(models)).toEqual([2, 2, 0, 0, 0, 0]);
  });

  it("a child's own maxDepth cannot raise it", async () => {
    const { root, models } = chain([2, 10, 10, 10]);
    await root.run("go");
    expect(calls(models)).toEqual([2, 2, 2, 0, 0, 0]);
  });

  it("a higher maxDepth on every level lets the chain go deeper", async () => {
    // (Each agent's own maxDepth defaults to 3 and the least along the chain applies, so here
    // every level sets it.)
    const { root, models } = chain([4, 4, 4, 4, 4, 4]);
    await root.run("go");
    expect(calls(models)).toEqual([2, 2, 2, 2, 2, 0]);
  });
});

describe("usage roll-up", () => {
  it("totalUsage = usage + every child's totalUsage, at any depth; usage stays the run's own", async () => {
    const grandchild = scriptedChild("grandchild", [turn({ text: "g" }, 100, 10)]);
    const child = scriptedChild(
      "child",
      [
        turn({ toolCalls: [{ id: "c1", name: "grandchild", input: { prompt: "x" } }] }, 20, 2),
        turn({ text: "c" }, 30, 3),
      ],
      { tools: [agentTool(grandchild.agent, { description: "G" })] },
    );
    const model = scriptedModel([
      turn({ toolCalls: [{ id: "p1", name: "child", input: { prompt: "y" } }] }, 1, 1),
      turn({ text: "p" }, 4, 0),
    ]);
    const parent = createBareAgent({
      model,
      tools: [agentTool(child.agent, { description: "C" })],
    });
    const result = await parent.run("go");
    expect(result.usage).toEqual(tokens(5, 1));
    expect(result.totalUsage).toEqual(tokens(155, 16));
    // Per call: the child's totalUsage (its own and the grandchild's).
    expect(detailsOf(result, "p1").usage).toEqual(tokens(150, 15));
  });

  it("a failed child's usage counts too", async () => {
    const child = scriptedChild(
      "child",
      [
        turn({ toolCalls: [{ id: "c1", name: "note", input: { note: "n" } }] }, 40, 4),
        new Error("model down"),
      ],
      { tools: [noteTool().tool] },
    );
    const model = scriptedModel([
      turn({ toolCalls: [{ id: "p1", name: "child", input: { prompt: "y" } }] }, 1, 1),
      { text: "p" },
    ]);
    const result = await createBareAgent({
      model,
      tools: [agentTool(child.agent, { description: "C" })],
    }).run("go");
    expect(resultFor(result.messages, "p1").is_error).toBe(true);
    expect(result.usage).toEqual(tokens(1, 1));
    expect(result.totalUsage).toEqual(tokens(41, 5));
    expect(detailsOf(result, "p1").usage).toEqual(tokens(40, 4));
  });

  it("a run without agent tools has totalUsage equal to usage", async () => {
    const model = scriptedModel([turn({ text: "hi" }, 3, 4)]);
    const result = await createBareAgent({ model }).run("go");
    expect(result.totalUsage).toEqual(result.usage);
    expect(result.usage).toEqual(tokens(3, 4));
  });
});
