import { createBareAgent, type ToolContext, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { collect, labels } from "./helpers.ts";

describe("the ToolContext a handler gets", () => {
  it("names the call, the session and the raw call, and carries the run's signal", async () => {
    const contexts: ToolContext[] = [];
    const inspect = tool(
      "inspect",
      "Inspect",
      z.object({ n: z.number() }),
      async (_input, ctx) => {
        contexts.push(ctx);
        return "seen";
      },
      { isConcurrencySafe: () => true },
    );
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "one", name: "inspect", input: { n: "1" } },
          { id: "two", name: "inspect", input: { n: 2 } },
        ],
      },
      { text: "ok" },
    ]);
    const result = await createBareAgent({ model, tools: [inspect] }).run("go", {
      sessionId: "session-42",
    });
    expect(result.sessionId).toBe("session-42");
    expect(contexts.map((ctx) => [ctx.callId, ctx.sessionId])).toEqual([
      ["one", "session-42"],
      ["two", "session-42"],
    ]);
    expect(contexts.map((ctx) => ctx.call)).toEqual([
      { id: "one", name: "inspect", input: { n: "1" }, kind: "tool" },
      { id: "two", name: "inspect", input: { n: 2 }, kind: "tool" },
    ]);
    for (const ctx of contexts) {
      expect(ctx.signal).toBeInstanceOf(AbortSignal);
      expect(ctx.signal.aborted).toBe(false);
    }
  });

  it("gives every run its own session id when none is asked for", async () => {
    const agent = createBareAgent({ model: scriptedModel(() => ({ text: "hi" })) });
    const [first, second] = [await agent.run("a"), await agent.run("b")];
    expect(first.sessionId).toMatch(/\S/);
    expect(first.sessionId).not.toBe(second.sessionId);
  });
});

describe("the model's stream", () => {
  it("relays thinking before text, and keeps the thinking block in the message", async () => {
    const model = scriptedModel([{ thinking: "let me think", text: "answer" }]);
    const { events, result } = await collect(createBareAgent({ model }).stream("q"));
    expect(labels(events)).toEqual([
      "run_start",
      "turn_start",
      "thinking_delta",
      "text_delta",
      "message",
      "turn_end",
      "result",
    ]);
    expect(result.result).toBe("answer");
    expect(result.messages[1]!.content).toEqual([
      { type: "thinking", thinking: "let me think", signature: "scripted" },
      { type: "text", text: "answer" },
    ]);
  });

  it("accepts a prompt of content blocks as the first user message", async () => {
    const model = scriptedModel([{ text: "seen" }]);
    await createBareAgent({ model }).run([{ type: "text", text: "look at this" }]);
    expect(model.requests[0]!.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "look at this" }] },
    ]);
  });

  it("sends each request the whole transcript so far, and the tools as name, description and input_schema only", async () => {
    const echo = tool("echo", "Echoes", z.object({ text: z.string() }), async ({ text }) => text, {
      metadata: { owner: "team" },
      label: "Echo",
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "e", name: "echo", input: { text: "hi" } }] },
      { text: "done" },
    ]);
    const result = await createBareAgent({ model, tools: [echo] }).run("go");
    expect(model.requests[1]!.messages).toEqual(result.messages.slice(0, 3));
    expect(model.requests[0]!.tools).toEqual([
      { name: "echo", description: "Echoes", input_schema: expect.any(Object) },
    ]);
    expect(Object.keys(model.requests[0]!.tools[0]!)).toEqual([
      "name",
      "description",
      "input_schema",
    ]);
  });
});
