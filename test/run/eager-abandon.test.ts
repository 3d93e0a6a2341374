import { createBareAgent, defineTool, type Model, type ToolContext, tool } from "skein";
import { expect, it } from "vitest";
import { z } from "zod";

/*
 * A reply that fails after some of its calls started early (eager execution): every early call
 * ends with a result, whatever it was doing, and the run ends with the model's failure.
 */

function failingAfter(calls: { id: string; name: string }[]): Model {
  return {
    provider: "test",
    modelId: "failing",
    async *stream() {
      for (const call of calls) yield { type: "tool_call", ...call, input: {} };
      // Long enough for the early calls to be prepared and started.
      await new Promise((resolve) => setTimeout(resolve, 20));
      throw new Error("the model's connection broke");
    },
  };
}

it("an early call that waits for the app (execute: false) is cancelled when the reply fails", async () => {
  const external = defineTool({ id: "external", execute: false, isConcurrencySafe: () => true });
  const ends: unknown[] = [];
  const agent = createBareAgent({
    model: failingAfter([{ id: "ext", name: "external" }]),
    tools: [external],
  });
  for await (const event of agent.stream("go")) {
    if (event.type === "tool_end") ends.push([event.callId, event.isError]);
    if (event.type === "result") {
      expect(event.subtype).toBe("error_during_execution");
      expect(event.error).toEqual({ name: "Error", message: "the model's connection broke" });
    }
  }
  expect(ends).toEqual([["ext", true]]);
});

it("an early call that finished keeps its result when the reply fails", async () => {
  let signal: AbortSignal | undefined;
  const quick = tool(
    "quick",
    "Answers at once",
    z.object({}),
    (_input, ctx: ToolContext) => {
      signal = ctx.signal;
      return "done";
    },
    { isConcurrencySafe: () => true },
  );
  const ends: unknown[] = [];
  const agent = createBareAgent({
    model: failingAfter([{ id: "q", name: "quick" }]),
    tools: [quick],
  });
  for await (const event of agent.stream("go")) {
    if (event.type === "tool_end") ends.push([event.callId, event.isError, event.result.content]);
  }
  expect(ends).toEqual([["q", false, "done"]]);
  expect(signal?.aborted).toBe(true);
});
