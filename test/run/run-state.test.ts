import { type AgentOptions, createBareAgent, defineTool, type RunState, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { expectValidTranscript } from "../support/results.ts";

/** Turn 1 runs a tool whose details and progress are not JSON; turn 2 pauses on an external call. */
function pausingAfterOddDetails() {
  const circular: Record<string, unknown> = { name: "loop" };
  circular.self = circular;
  const odd = tool("odd", "Odd details", z.object({}), async (_input, ctx) => {
    ctx.update({ big: 10n });
    return { content: "fine", details: { big: 10n, circular, fn: () => 1 } };
  });
  const external = defineTool({ id: "external", execute: false });
  const model = scriptedModel([
    { toolCalls: [{ id: "o", name: "odd", input: {} }] },
    { toolCalls: [{ id: "x", name: "external", input: {} }] },
    { text: "done" },
  ]);
  const options: AgentOptions = { model, tools: [odd, external] };
  return { options, model };
}

describe("the run state", () => {
  it("of a paused run survives JSON.stringify/parse unchanged", async () => {
    const external = defineTool({ id: "external", execute: false });
    const plain = tool("plain", "Plain", z.object({}), async () => ({
      content: "p",
      details: { rows: 2 },
    }));
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "p", name: "plain", input: {} },
          { id: "x", name: "external", input: {} },
        ],
      },
    ]);
    const result = await createBareAgent({ model, tools: [plain, external] }).run("go");
    expect(result.subtype).toBe("paused");
    expect(JSON.parse(JSON.stringify(result.state))).toEqual(result.state);
  });

  it("is JSON-serialisable even when an earlier call's details or progress are not JSON", async () => {
    const { options } = pausingAfterOddDetails();
    const result = await createBareAgent(options).run("go");
    expect(result.subtype).toBe("paused");
    let text = "";
    expect(() => {
      text = JSON.stringify(result.state);
    }).not.toThrow();
    const resumed = await createBareAgent(options).resume(text, { toolOutputs: { x: "ok" } });
    expect(resumed.subtype).toBe("success");
    expectValidTranscript(resumed.messages);
  });

  it("of a run stopped at maxTurns is JSON-serialisable too", async () => {
    const odd = tool("odd", "Odd details", z.object({}), async () => ({
      content: "fine",
      details: { big: 10n },
    }));
    const model = scriptedModel(() => ({ toolCalls: [{ name: "odd", input: {} }] }));
    const result = await createBareAgent({ model, tools: [odd], maxTurns: 1 }).run("go");
    expect(result.subtype).toBe("error_max_turns");
    expect(() => JSON.stringify(result.state)).not.toThrow();
  });

  it("is not changed by resuming from it, so it can be resumed again", async () => {
    const external = defineTool({ id: "external", execute: false });
    const plain = tool("plain", "Plain", z.object({}), async () => "p");
    const model = scriptedModel(() => ({ text: "done" }));
    const first = await createBareAgent({
      model: scriptedModel([
        {
          toolCalls: [
            { id: "p", name: "plain", input: {} },
            { id: "x", name: "external", input: {} },
          ],
        },
      ]),
      tools: [plain, external],
    }).run("go");
    const state = first.state as RunState;
    const before = JSON.parse(JSON.stringify(state));
    const stepsBefore = JSON.parse(JSON.stringify(first.steps));
    const agent = createBareAgent({ model, tools: [plain, external] });
    const once = await agent.resume(state, { toolOutputs: { x: "one" } });
    expect(once.subtype).toBe("success");
    expect(JSON.parse(JSON.stringify(state))).toEqual(before);
    expect(JSON.parse(JSON.stringify(first.steps))).toEqual(stepsBefore);
    const twice = await agent.resume(state, { toolOutputs: { x: "two" } });
    expect(twice.subtype).toBe("success");
    expect(JSON.stringify(twice.messages)).toContain("two");
    expect(JSON.stringify(twice.messages)).not.toContain('"one"');
  });
});
