import { type AgentEvent, type AgentHooks, createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { resultText, toolResultsOf } from "../support/results.ts";
import { collect, labels } from "./helpers.ts";

function setup(hooks: AgentHooks, calls = [{ id: "c1", input: { n: 1 } as unknown }]) {
  const handled: unknown[] = [];
  const count = tool(
    "count",
    "Counts",
    z.object({ n: z.number() }),
    async (input) => {
      handled.push(input);
      return `counted ${input.n}`;
    },
    { isConcurrencySafe: () => true },
  );
  const model = scriptedModel([
    { toolCalls: calls.map(({ id, input }) => ({ id, name: "count", input })) },
    { text: "after" },
  ]);
  const agent = createBareAgent({ model, tools: [count], hooks });
  return { agent, model, handled };
}

/** The tool_result blocks the model received after the first batch. */
function sent(model: ReturnType<typeof scriptedModel>) {
  return toolResultsOf(model.requests[1]!.messages.at(-1));
}

describe("beforeToolCall", () => {
  it("{ block: true, reason } gives an error result with the reason and skips the handler", async () => {
    const { agent, model, handled } = setup({
      beforeToolCall: () => ({ block: true, reason: "counting is closed today" }),
    });
    const result = await agent.run("go");
    expect(handled).toEqual([]);
    const [block] = sent(model);
    expect(block!.is_error).toBe(true);
    expect(resultText(block)).toContain("counting is closed today");
    expect(result.subtype).toBe("success");
  });

  it("{ input } replaces the input, validated (and coerced) again", async () => {
    const { agent, model, handled } = setup({ beforeToolCall: () => ({ input: { n: "5" } }) });
    await agent.run("go");
    expect(handled).toEqual([{ n: 5 }]);
    expect(sent(model).map(resultText)).toEqual(["counted 5"]);
  });

  it("an invalid replacement input is an error result and the handler does not run", async () => {
    const { agent, model, handled } = setup({ beforeToolCall: () => ({ input: { n: "many" } }) });
    const result = await agent.run("go");
    expect(handled).toEqual([]);
    const [block] = sent(model);
    expect(block!.is_error).toBe(true);
    expect(resultText(block)).toMatch(/Invalid input for tool "count"[\s\S]*- n: /);
    expect(result.subtype).toBe("success");
  });

  it("a throwing hook is an error result for that call only", async () => {
    const { agent, model, handled } = setup(
      {
        beforeToolCall: ({ callId }) => {
          if (callId === "c1") throw new Error("hook exploded");
        },
      },
      [
        { id: "c1", input: { n: 1 } },
        { id: "c2", input: { n: 2 } },
      ],
    );
    const result = await agent.run("go");
    expect(handled).toEqual([{ n: 2 }]);
    const blocks = sent(model);
    expect(blocks.map((block) => block.is_error)).toEqual([true, false]);
    expect(resultText(blocks[0])).toContain("hook exploded");
    expect(result.subtype).toBe("success");
  });

  it("returning nothing, or something else, leaves the call as it was", async () => {
    const { agent, model, handled } = setup({
      beforeToolCall: async () => ({ unrelated: true }) as never,
    });
    await agent.run("go");
    expect(handled).toEqual([{ n: 1 }]);
    expect(sent(model).map(resultText)).toEqual(["counted 1"]);
  });

  it("sees the validated input", async () => {
    const seen: unknown[] = [];
    const { agent } = setup({ beforeToolCall: ({ input }) => void seen.push(input) }, [
      { id: "c1", input: { n: "7" } },
    ]);
    await agent.run("go");
    expect(seen).toEqual([{ n: 7 }]);
  });
});

describe("afterToolCall", () => {
  it("{ result } replaces the result the model sees", async () => {
    const { agent, model } = setup({
      afterToolCall: ({ result }) => ({ result: `${String(result.content)} (checked)` }),
    });
    const { events } = await collect(agent.stream("go"));
    expect(sent(model).map(resultText)).toEqual(["counted 1 (checked)"]);
    const end = events.find((event) => event.type === "tool_end") as Extract<
      AgentEvent,
      { type: "tool_end" }
    >;
    expect(end.result.content).toBe("counted 1 (checked)");
  });

  it("{ stop: true } ends the run after the batch with success and that call's text, no further model call", async () => {
    const { agent, model, handled } = setup(
      { afterToolCall: ({ callId }) => (callId === "c2" ? { stop: true } : undefined) },
      [
        { id: "c1", input: { n: 1 } },
        { id: "c2", input: { n: 2 } },
        { id: "c3", input: { n: 3 } },
      ],
    );
    const result = await agent.run("go");
    expect(handled).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(model.requests).toHaveLength(1);
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("counted 2");
    expect(toolResultsOf(result.messages.at(-1)).map(resultText)).toEqual([
      "counted 1",
      "counted 2",
      "counted 3",
    ]);
  });

  it("a throwing hook turns that call's result into an error result", async () => {
    const { agent, model } = setup({
      afterToolCall: () => {
        throw new Error("audit failed");
      },
    });
    const result = await agent.run("go");
    const [block] = sent(model);
    expect(block!.is_error).toBe(true);
    expect(resultText(block)).toContain("audit failed");
    expect(result.subtype).toBe("success");
  });

  it("runs only for calls that reached their handler", async () => {
    const seen: string[] = [];
    const { agent } = setup(
      {
        beforeToolCall: ({ callId }) =>
          callId === "blocked" ? { block: true, reason: "no" } : undefined,
        afterToolCall: ({ callId }) => void seen.push(callId),
      },
      [
        { id: "ok", input: { n: 1 } },
        { id: "blocked", input: { n: 2 } },
        { id: "invalid", input: { n: "x" } },
      ],
    );
    await agent.run("go");
    expect(seen).toEqual(["ok"]);
  });
});

describe("onToolResult", () => {
  it("observes every final result in call order, errors included", async () => {
    const seen: string[] = [];
    const { agent } = setup(
      { onToolResult: ({ callId, isError }) => void seen.push(`${callId}:${isError}`) },
      [
        { id: "ok", input: { n: 1 } },
        { id: "invalid", input: { n: "x" } },
      ],
    );
    await agent.run("go");
    expect(seen).toEqual(["ok:false", "invalid:true"]);
  });

  it("a throwing hook emits hook_error and leaves the result unchanged", async () => {
    const { agent, model } = setup({
      onToolResult: () => {
        throw new Error("logger down");
      },
    });
    const { events, result } = await collect(agent.stream("go"));
    expect(labels(events)).toEqual([
      "run_start",
      "turn_start",
      // Eager execution: the call is prepared as its block completes, before the reply is.
      "tool_start:c1",
      "message",
      "hook_error:c1",
      "tool_end:c1",
      "turn_end",
      "turn_start",
      "text_delta",
      "message",
      "turn_end",
      "result",
    ]);
    const hookError = events.find((event) => event.type === "hook_error");
    expect(hookError).toMatchObject({
      hook: "onToolResult",
      callId: "c1",
      name: "count",
      error: { message: "logger down" },
    });
    const [block] = sent(model);
    expect(block!.is_error).toBe(false);
    expect(resultText(block)).toBe("counted 1");
    expect(result.subtype).toBe("success");
  });
});

describe("hooks that return something unreadable", () => {
  const unreadable = () =>
    new Proxy(
      {},
      {
        get() {
          throw new Error("getter trap");
        },
        has() {
          throw new Error("has trap");
        },
      },
    );

  it("a beforeToolCall whose decision cannot be read fails that call only; the run goes on", async () => {
    const { agent, model, handled } = setup(
      { beforeToolCall: ({ callId }) => (callId === "c1" ? (unreadable() as never) : undefined) },
      [
        { id: "c1", input: { n: 1 } },
        { id: "c2", input: { n: 2 } },
      ],
    );
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");
    expect(model.requests).toHaveLength(2);
    expect(handled).toEqual([{ n: 2 }]);
    expect(sent(model).map((block) => block.is_error)).toEqual([true, false]);
  });

  it("an afterToolCall whose decision cannot be read fails that call only; the run goes on", async () => {
    const { agent, model } = setup({ afterToolCall: () => unreadable() as never });
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");
    expect(sent(model).map((block) => block.is_error)).toEqual([true]);
  });
});
