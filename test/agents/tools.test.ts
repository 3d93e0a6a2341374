// Agent tools are tools (design/agents.md, "Agent tools are tools"): concurrency, hooks, rules by
// the tool's name, maxResultChars, labels, input validation; definitions get their own tools only.
import { agentTool, createAgent, createBareAgent, defineAgent, type RunState, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Gates } from "../run/helpers.ts";
import { resultFor, resultText, stepCall } from "../support/results.ts";
import { countingTool } from "../support/tools.ts";
import { collect, noteTool, offered, scriptedChild, toolStarts } from "./helpers.ts";

/** A child whose `block` tool waits at the gate named by its input. */
function gatedChild(id: string, gates: Gates) {
  const block = tool("block", "Blocks", z.object({ key: z.string() }), async ({ key }) => {
    await gates.pass(key);
    return `passed ${key}`;
  });
  return scriptedChild(
    id,
    (request, index) =>
      index === 0 || request.messages.length === 1
        ? { toolCalls: [{ name: "block", input: { key: id } }] }
        : { text: `${id} done` },
    { tools: [block] },
  );
}

function twoCalls(options: { isConcurrencySafe?: () => boolean } = {}) {
  const gates = new Gates();
  const a = gatedChild("a", gates);
  const b = gatedChild("b", gates);
  const model = scriptedModel([
    {
      toolCalls: [
        { id: "p1", name: "a", input: { prompt: "x" } },
        { id: "p2", name: "b", input: { prompt: "y" } },
      ],
    },
    { text: "parent done" },
  ]);
  const parent = createBareAgent({
    model,
    tools: [
      agentTool(a.agent, { description: "A", ...options }),
      agentTool(b.agent, { description: "B", ...options }),
    ],
    toolConcurrency: { mode: "safe" },
  });
  return { parent, gates, a, b };
}

describe("concurrency", () => {
  it("agent calls run one at a time by default", async () => {
    const { parent, gates, b } = twoCalls();
    const run = parent.run("go");
    await gates.started("a");
    // a's child is inside its tool; b's child has not even asked its model.
    await new Promise((resolve) => setImmediate(resolve));
    expect(b.model.requests).toHaveLength(0);
    gates.release("a", "b");
    await run;
    expect(gates.peak).toBe(1);
    expect(gates.trace).toEqual(["start:a", "end:a", "start:b", "end:b"]);
  });

  it("with isConcurrencySafe they overlap", async () => {
    const { parent, gates } = twoCalls({ isConcurrencySafe: () => true });
    const run = parent.run("go");
    await gates.started("a", "b");
    expect(gates.peak).toBe(2);
    gates.release("a", "b");
    const result = await run;
    expect(resultText(resultFor(result.messages, "p1"))).toBe("a done");
    expect(resultText(resultFor(result.messages, "p2"))).toBe("b done");
  });

  it("two concurrent calls of the same child each get a fresh transcript of their own", async () => {
    const child = scriptedChild("echo", (request) => ({
      text: `echo: ${request.messages[0]!.content as string} (${request.messages.length} message)`,
    }));
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "p1", name: "echo", input: { prompt: "one" } },
          { id: "p2", name: "echo", input: { prompt: "two" } },
        ],
      },
      { text: "done" },
    ]);
    const parent = createBareAgent({
      model,
      tools: [agentTool(child.agent, { description: "Echoes", isConcurrencySafe: () => true })],
    });
    const result = await parent.run("go");
    expect(resultText(resultFor(result.messages, "p1"))).toBe("echo: one (1 message)");
    expect(resultText(resultFor(result.messages, "p2"))).toBe("echo: two (1 message)");
  });
});

function oneCall(
  parentOptions: Record<string, unknown> = {},
  toolOptions: Record<string, unknown> = {},
) {
  const child = scriptedChild("researcher", () => ({ text: "x".repeat(500) }));
  const model = scriptedModel([
    { toolCalls: [{ id: "p1", name: "researcher", input: { prompt: "q" } }] },
    { text: "parent done" },
    { text: "parent again" },
  ]);
  const parent = createBareAgent({
    model,
    tools: [agentTool(child.agent, { description: "Researches", ...toolOptions })],
    ...parentOptions,
  });
  return { parent, model, child };
}

describe("hooks, rules by name, caps and labels apply to the agent call", () => {
  it("beforeToolCall can block it: the child never runs", async () => {
    const { parent, child } = oneCall({
      hooks: { beforeToolCall: () => ({ block: true as const, reason: "not now" }) },
    });
    const result = await parent.run("go");
    expect(child.model.requests).toHaveLength(0);
    expect(resultText(resultFor(result.messages, "p1"))).toContain("not now");
  });

  it("afterToolCall can replace its result", async () => {
    const { parent } = oneCall({
      hooks: { afterToolCall: () => ({ result: "replaced" }) },
    });
    const result = await parent.run("go");
    expect(resultText(resultFor(result.messages, "p1"))).toBe("replaced");
  });

  it("a deny rule naming the tool hides it; the child never runs", async () => {
    const { parent, model, child } = oneCall({ permissions: { deny: ["researcher"] } });
    await parent.run("go");
    expect(offered(model)).toEqual([]);
    expect(child.model.requests).toHaveLength(0);
  });

  it("an ask rule naming the tool asks about the agent call itself (input { prompt })", async () => {
    const asked: [string, unknown, string | undefined][] = [];
    const { parent, child } = oneCall({
      permissions: { ask: ["researcher"] },
      approval: (name: string, input: unknown, options: { parentCallId?: string }) => {
        asked.push([name, input, options.parentCallId]);
        return false;
      },
    });
    const result = await parent.run("go");
    expect(asked).toEqual([["researcher", { prompt: "q" }, undefined]]);
    expect(child.model.requests).toHaveLength(0);
    expect(resultFor(result.messages, "p1").is_error).toBe(true);
  });

  it("without a handler the agent call itself waits (listed, no parentCallId); approved, the child runs", async () => {
    const { parent, child } = oneCall({ permissions: { ask: ["researcher"] } });
    const paused = await parent.run("go");
    expect(paused.subtype).toBe("paused");
    expect(paused.pending).toEqual([
      expect.objectContaining({ id: "p1", name: "researcher", reason: "approval" }),
    ]);
    expect(paused.pending![0]!.parentCallId).toBeUndefined();
    expect(child.model.requests).toHaveLength(0);
    const state = JSON.parse(JSON.stringify(paused.state)) as RunState;
    const resumed = await parent.resume(state, { approvals: { p1: true } });
    expect(resumed.subtype).toBe("success");
    expect(child.model.requests).toHaveLength(1);
    expect(resultText(resultFor(resumed.messages, "p1"))).toBe("x".repeat(500));
  });

  it("maxResultChars caps what the parent's model reads; tool_end and the steps keep it whole", async () => {
    const { parent, model } = oneCall({ maxResultChars: 100 });
    const { events, result } = await collect(parent.stream("go"));
    const sent = resultText(resultFor(model.requests[1]!.messages, "p1"));
    expect(sent.length).toBeLessThan(500);
    expect(sent.startsWith("x".repeat(50))).toBe(true);
    expect(resultText(stepCall(result, "p1").result as never)).toBe("x".repeat(500));
    const end = events.find((event) => event.type === "tool_end" && event.callId === "p1");
    expect(JSON.stringify(end)).toContain("x".repeat(500));
  });

  it("its label is on tool_start", async () => {
    const { parent } = oneCall({}, { label: "Researching…" });
    const { events } = await collect(parent.stream("go"));
    const start = toolStarts(events).find((event) => event.callId === "p1");
    expect(start?.label).toBe("Researching…");
  });

  it("input that is not { prompt: string } is an invalid_input result; the child never runs", async () => {
    for (const input of [{}, { prompt: 7 }, { prompt: "q", extra: true }]) {
      const child = scriptedChild("researcher", () => ({ text: "never" }));
      const model = scriptedModel([
        { toolCalls: [{ id: "p1", name: "researcher", input }] },
        { text: "parent done" },
      ]);
      const result = await createBareAgent({
        model,
        tools: [agentTool(child.agent, { description: "Researches" })],
      }).run("go");
      expect(child.model.requests).toHaveLength(0);
      expect(resultFor(result.messages, "p1").is_error).toBe(true);
      expect(stepCall(result, "p1").result.details).toMatchObject({ reason: "invalid_input" });
    }
  });
});

describe("a definition is assembled with its own tools only", () => {
  it("agentTool(definition): the child's model sees its own tools, no built-ins", async () => {
    const note = noteTool();
    const childModel = scriptedModel([{ text: "ok" }]);
    const definition = defineAgent({ id: "helper", model: childModel, tools: [note.tool] });
    const model = scriptedModel([
      { toolCalls: [{ id: "p1", name: "helper", input: { prompt: "q" } }] },
      { text: "done" },
    ]);
    await createBareAgent({ model, tools: [agentTool(definition, { description: "Helps" })] }).run(
      "go",
    );
    expect(offered(childModel)).toEqual(["note"]);
  });

  it("agentTool(createAgent(definition)): the built-ins too", async () => {
    const note = noteTool();
    const childModel = scriptedModel([{ text: "ok" }]);
    const definition = defineAgent({ id: "helper", model: childModel, tools: [note.tool] });
    const model = scriptedModel([
      { toolCalls: [{ id: "p1", name: "helper", input: { prompt: "q" } }] },
      { text: "done" },
    ]);
    await createBareAgent({
      model,
      tools: [agentTool(createAgent(definition), { description: "Helps" })],
    }).run("go");
    expect(offered(childModel)).toEqual(expect.arrayContaining(["Read", "Grep", "note"]));
  });
});

describe("approval answers for a child's call mean what they mean at top level", () => {
  it('{ behavior: "allow", updatedInput } runs the child\'s call with the new input', async () => {
    const deploy = countingTool("deploy");
    const child = scriptedChild(
      "ops",
      [{ toolCalls: [{ id: "c1", name: "deploy", input: { target: "prod" } }] }, { text: "ok" }],
      { tools: [deploy.tool] },
    );
    const model = scriptedModel([
      { toolCalls: [{ id: "p1", name: "ops", input: { prompt: "ship" } }] },
      { text: "done" },
    ]);
    await createBareAgent({
      model,
      tools: [agentTool(child.agent, { description: "Ops" })],
      permissions: { ask: ["deploy"] },
      approval: () => ({ behavior: "allow", updatedInput: { target: "staging" } }),
    }).run("go");
    expect(deploy.runs).toEqual(["staging"]);
  });
});
