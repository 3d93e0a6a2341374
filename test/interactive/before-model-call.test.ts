/**
 * `hooks.beforeModelCall` (design/interactive.md, "beforeModelCall"): awaited before every model
 * call (resumed runs included), `turn` equal to `turn_start.turn`; what it returns is for that
 * call only; `tools` narrows what the request offers (a call to another tool is `not_found`);
 * a throwing hook or bad tool names end the run with `HookError` before the call is made.
 */
import {
  createBareAgent,
  defineTool,
  type Message,
  type ModelCallContext,
  type RunState,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { resultFor, resultText } from "../support/results.ts";
import { collect, detailsOf, ofType, workTool } from "./helpers.ts";

const threeTurns = () =>
  scriptedModel([
    {
      toolCalls: [{ id: "c1", name: "work", input: { n: 1 } }],
      usage: { inputTokens: 10, outputTokens: 2 },
    },
    {
      toolCalls: [{ id: "c2", name: "work", input: { n: 2 } }],
      usage: { inputTokens: 20, outputTokens: 3 },
    },
    { text: "done", usage: { inputTokens: 30, outputTokens: 4 } },
  ]);

describe("when it runs, and what it sees", () => {
  it("runs before every model call, after turn_start; turn equals turn_start.turn", async () => {
    const model = threeTurns();
    const seen: { turn: number; callsBefore: number }[] = [];
    const work = workTool();
    const agent = createBareAgent({
      model,
      tools: [work.tool],
      hooks: {
        beforeModelCall: ({ turn }) => {
          seen.push({ turn, callsBefore: model.requests.length });
        },
      },
    });
    const { events } = await collect(agent.stream("go"));
    expect(seen).toEqual([
      { turn: 1, callsBefore: 0 },
      { turn: 2, callsBefore: 1 },
      { turn: 3, callsBefore: 2 },
    ]);
    expect(ofType(events, "turn_start").map((event) => event.turn)).toEqual([1, 2, 3]);
  });

  it("sees the full transcript in a new array, the tool names, the model, the settings and the usage so far", async () => {
    const model = threeTurns();
    const contexts: ModelCallContext[] = [];
    const work = workTool();
    const other = workTool({ name: "other" });
    const agent = createBareAgent({
      model,
      tools: [work.tool, other.tool],
      modelSettings: { temperature: 0.3 },
      hooks: {
        beforeModelCall: (context) => {
          contexts.push({ ...context, messages: structuredClone(context.messages) });
          // The array is the hook's own: changing it changes nothing of the run.
          context.messages.length = 0;
        },
      },
    });
    const result = await agent.run("go", { sessionId: "sess-1" });
    expect(result.subtype).toBe("success");
    expect(contexts.map((context) => context.messages.length)).toEqual([1, 3, 5]);
    expect(contexts[2]!.messages).toEqual(result.messages.slice(0, 5));
    expect(model.requests[2]!.messages).toEqual(result.messages.slice(0, 5));
    for (const context of contexts) {
      expect(context.tools).toEqual(["work", "other"]);
      expect(context.model).toBe(model);
      expect(context.modelSettings).toEqual({ temperature: 0.3 });
      expect(context.sessionId).toBe(result.sessionId);
      expect(context.signal).toBeInstanceOf(AbortSignal);
    }
    expect(contexts.map((context) => context.usage.inputTokens)).toEqual([0, 10, 30]);
    expect(contexts.map((context) => context.usage.outputTokens)).toEqual([0, 2, 5]);
  });

  it("runs before the first call after a resume, turn continuing", async () => {
    const external = defineTool({
      id: "ask_app",
      parameters: { type: "object", properties: {} },
      execute: false,
    });
    const turns: number[] = [];
    const hooks = { beforeModelCall: ({ turn }: ModelCallContext) => void turns.push(turn) };
    const first = scriptedModel([{ toolCalls: [{ id: "e1", name: "ask_app", input: {} }] }]);
    const paused = await createBareAgent({ model: first, tools: [external], hooks }).run("go");
    expect(paused.subtype).toBe("paused");
    expect(turns).toEqual([1]);
    const second = scriptedModel([{ text: "resumed" }]);
    const { events } = await collect(
      createBareAgent({ model: second, tools: [external], hooks }).resumeStream(
        JSON.parse(JSON.stringify(paused.state)) as RunState,
        { toolOutputs: { e1: "ok" } },
      ),
    );
    expect(turns).toEqual([1, 2]);
    expect(ofType(events, "turn_start").map((event) => event.turn)).toEqual([1, 2]);
  });
});

describe("what it returns is for that call only", () => {
  it("messages: sent for this call; the result, steps, events and the next call keep the full transcript", async () => {
    const model = threeTurns();
    const work = workTool();
    const seenLengths: number[] = [];
    const agent = createBareAgent({
      model,
      tools: [work.tool],
      hooks: {
        beforeModelCall: ({ turn, messages }) => {
          seenLengths.push(messages.length);
          if (turn !== 2) return;
          // Only the newest exchange, with a note in front.
          const note: Message = { role: "user", content: "(earlier turns left out)" };
          return { messages: [note, ...messages.slice(-2)] };
        },
      },
    });
    const { events, result } = await collect(agent.stream("go"));
    expect(model.requests[1]!.messages).toHaveLength(3);
    expect(model.requests[1]!.messages[0]).toEqual({
      role: "user",
      content: "(earlier turns left out)",
    });
    expect(model.requests[2]!.messages).toEqual(result.messages.slice(0, 5));
    expect(seenLengths).toEqual([1, 3, 5]);
    expect(result.messages[0]).toEqual({ role: "user", content: "go" });
    expect(result.steps).toHaveLength(3);
    expect(ofType(events, "message")).toHaveLength(3);
  });

  it("tools: the request offers only those; a call to another tool is not_found and does not run", async () => {
    const work = workTool();
    const other = workTool({ name: "other" });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "c1", name: "work", input: { n: 1 } },
          { id: "o1", name: "other", input: { n: 2 } },
        ],
      },
      { text: "done" },
    ]);
    const agent = createBareAgent({
      model,
      tools: [work.tool, other.tool],
      hooks: { beforeModelCall: ({ turn }) => (turn === 1 ? { tools: ["work"] } : undefined) },
    });
    const result = await agent.run("go");
    expect(model.requests[0]!.tools.map((spec) => spec.name)).toEqual(["work"]);
    expect(model.requests[1]!.tools.map((spec) => spec.name)).toEqual(["work", "other"]);
    expect(other.log).toEqual([]);
    expect(work.log).toEqual(["start:1", "end:1"]);
    expect(resultFor(result.messages, "o1").is_error).toBe(true);
    expect(detailsOf(result, "o1").reason).toBe("not_found");
    expect(resultText(resultFor(result.messages, "o1"))).toContain("other");
  });

  it("model: replaces the model for this call only", async () => {
    const agentModel = scriptedModel([{ text: "from the agent's model" }]);
    const swapped = scriptedModel([{ toolCalls: [{ id: "c1", name: "work", input: { n: 1 } }] }]);
    const work = workTool();
    const agent = createBareAgent({
      model: agentModel,
      tools: [work.tool],
      hooks: { beforeModelCall: ({ turn }) => (turn === 1 ? { model: swapped } : undefined) },
    });
    const result = await agent.run("go");
    expect(swapped.requests).toHaveLength(1);
    expect(agentModel.requests).toHaveLength(1);
    expect(result.result).toBe("from the agent's model");
  });

  it("an async hook is awaited", async () => {
    const model = scriptedModel([{ text: "ok" }]);
    const agent = createBareAgent({
      model,
      hooks: {
        beforeModelCall: async () => {
          await new Promise((resolve) => setTimeout(resolve, 5));
          return { messages: [{ role: "user", content: "replaced" }] };
        },
      },
    });
    await agent.run("go");
    expect(model.requests[0]!.messages).toEqual([{ role: "user", content: "replaced" }]);
  });
});

describe("a hook that fails ends the run before the model call (HookError)", () => {
  it("a throwing hook: error_during_execution, HookError, message starting beforeModelCall with the thrown message", async () => {
    const model = scriptedModel([{ text: "never" }]);
    const agent = createBareAgent({
      model,
      hooks: {
        beforeModelCall: () => {
          throw new Error("the budget service is down");
        },
      },
    });
    const { events, result } = await collect(agent.stream("go"));
    expect(model.requests).toHaveLength(0);
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("HookError");
    expect(result.error?.message).toMatch(/^beforeModelCall/);
    expect(result.error?.message).toContain("the budget service is down");
    // The turn it opened is closed.
    expect(ofType(events, "turn_start")).toHaveLength(1);
    expect(ofType(events, "turn_end")).toHaveLength(1);
  });

  it("a later turn's throw keeps what came before", async () => {
    const work = workTool();
    const model = scriptedModel([{ toolCalls: [{ id: "c1", name: "work", input: { n: 1 } }] }]);
    const agent = createBareAgent({
      model,
      tools: [work.tool],
      hooks: {
        beforeModelCall: ({ turn }) => {
          if (turn === 2) return Promise.reject(new Error("rejected"));
        },
      },
    });
    const result = await agent.run("go");
    expect(model.requests).toHaveLength(1);
    expect(result.error?.name).toBe("HookError");
    expect(result.error?.message).toContain("rejected");
    expect(work.log).toEqual(["start:1", "end:1"]);
  });

  it("tool names not in context.tools: HookError naming them", async () => {
    const model = scriptedModel([{ text: "never" }]);
    const work = workTool();
    const agent = createBareAgent({
      model,
      tools: [work.tool],
      hooks: { beforeModelCall: () => ({ tools: ["work", "rm_rf", "final_output"] }) },
    });
    const result = await agent.run("go");
    expect(model.requests).toHaveLength(0);
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("HookError");
    expect(result.error?.message).toMatch(/^beforeModelCall/);
    expect(result.error?.message).toContain("rm_rf");
    expect(result.error?.message).toContain("final_output");
  });
});

describe("hidden tools", () => {
  it("context.tools lists only the tools sent; a hidden one cannot be brought back", async () => {
    const work = workTool();
    const other = workTool({ name: "other" });
    const seen: string[][] = [];
    const model = scriptedModel([{ text: "never" }]);
    const result = await createBareAgent({
      model,
      tools: [work.tool, other.tool],
      disallowedTools: ["other"],
      hooks: {
        beforeModelCall: ({ tools }) => {
          seen.push(tools);
          return { tools: ["other"] };
        },
      },
    }).run("go");
    expect(seen).toEqual([["work"]]);
    expect(result.error?.name).toBe("HookError");
    expect(result.error?.message).toContain("other");
    expect(model.requests).toHaveLength(0);
  });
});

describe("with output", () => {
  it("context.tools never lists final_output; narrowed to none, the request still offers it", async () => {
    const seen: string[][] = [];
    const work = workTool();
    const model = scriptedModel([
      { toolCalls: [{ id: "f1", name: "final_output", input: { city: "Oslo" } }] },
    ]);
    const agent = createBareAgent({
      model,
      tools: [work.tool],
      output: z.object({ city: z.string() }),
      hooks: {
        beforeModelCall: ({ tools }) => {
          seen.push(tools);
          return { tools: [] };
        },
      },
    });
    const result = await agent.run("go");
    expect(seen).toEqual([["work"]]);
    expect(model.requests[0]!.tools.map((spec) => spec.name)).toEqual(["final_output"]);
    expect(result.structuredResult).toEqual({ city: "Oslo" });
  });
});
