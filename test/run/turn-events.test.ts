/**
 * Every turn_start has its turn_end in the same stream, whatever ends the turn: a model call
 * that fails, an abort while the model streams, an abort while the batch runs, a pause, and a
 * resumed run (which opens the paused turn again for the rest of its batch).
 */
import {
  AbortError,
  type AgentEvent,
  APIConnectionError,
  createBareAgent,
  defineTool,
  type Model,
  type ModelStreamEvent,
  type RunState,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { deferred } from "../support/promises.ts";
import { collect } from "./helpers.ts";

function types(events: AgentEvent[]): string[] {
  return events.map((event) => event.type);
}

/** Reads a stream to its end or its AbortError, aborting through `controller` when `when` says so. */
async function consume(
  stream: AsyncIterable<AgentEvent>,
  controller: AbortController,
  when: (event: AgentEvent) => boolean,
): Promise<{ events: AgentEvent[]; error: unknown }> {
  const events: AgentEvent[] = [];
  try {
    for await (const event of stream) {
      events.push(event);
      if (when(event)) controller.abort();
    }
    return { events, error: undefined };
  } catch (error) {
    return { events, error };
  }
}

describe("turn_start and turn_end pair up", () => {
  it("when the model call fails: the failed turn ends before the result", async () => {
    const model = scriptedModel([new APIConnectionError("the connection broke")]);
    const { events, result } = await collect(createBareAgent({ model }).stream("go"));
    expect(types(events)).toEqual(["run_start", "turn_start", "turn_end", "result"]);
    expect(result.subtype).toBe("error_during_execution");
    // No reply to report: an empty one, marked incomplete (it never joins the transcript).
    expect(events[2]).toEqual({
      type: "turn_end",
      turn: 1,
      message: { role: "assistant", content: [], incomplete: true },
      toolResults: [],
    });
    expect(result.messages).toEqual([{ role: "user", content: "go" }]);
  });

  it("when the run is aborted while the model streams: turn_end carries the partial reply", async () => {
    const model: Model = {
      provider: "test",
      modelId: "endless",
      async *stream(_request, { signal }): AsyncGenerator<ModelStreamEvent> {
        yield { type: "text_delta", text: "half a sen" };
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        throw signal.reason;
      },
    };
    const controller = new AbortController();
    const { events, error } = await consume(
      createBareAgent({ model }).stream("go", { signal: controller.signal }),
      controller,
      (event) => event.type === "text_delta",
    );
    expect(error).toBeInstanceOf(AbortError);
    expect(types(events)).toEqual(["run_start", "turn_start", "text_delta", "turn_end"]);
    const partial = { role: "assistant", content: [{ type: "text", text: "half a sen" }] };
    expect(events[3]).toEqual({
      type: "turn_end",
      turn: 1,
      message: { ...partial, incomplete: true },
      toolResults: [],
    });
  });

  it("when the run is aborted while the batch runs: turn_end carries the batch's results", async () => {
    const started = deferred();
    const slow = tool("slow", "Waits for its signal", z.object({}), async (_input, ctx) => {
      started.resolve();
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      return "late";
    });
    const model = scriptedModel([{ toolCalls: [{ id: "s1", name: "slow", input: {} }] }]);
    const controller = new AbortController();
    const stream = createBareAgent({ model, tools: [slow] }).stream("go", {
      signal: controller.signal,
    });
    const run = consume(stream, controller, () => false);
    await started.promise;
    controller.abort();
    const { events, error } = await run;
    expect(error).toBeInstanceOf(AbortError);
    expect(types(events)).toEqual([
      "run_start",
      "turn_start",
      "tool_start",
      "message",
      "tool_end",
      "turn_end",
    ]);
    const end = events.at(-1) as Extract<AgentEvent, { type: "turn_end" }>;
    expect(end.turn).toBe(1);
    // The results that answer the turn's calls, as the AbortError's transcript holds them.
    expect(end.toolResults.map((block) => block.tool_use_id)).toEqual(["s1"]);
    expect((error as AbortError).messages.at(-1)).toEqual({
      role: "user",
      content: end.toolResults,
    });
  });

  it("across a pause and its resume: each stream closes the turns it opened", async () => {
    const approve = defineTool({
      id: "approve",
      description: "A person approves in the app.",
      parameters: { type: "object", properties: {} },
      execute: false,
    });
    const lookup = tool("lookup", "Looks up", z.object({}), async () => "found");
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "l1", name: "lookup", input: {} },
          { id: "a1", name: "approve", input: {} },
        ],
      },
      { text: "Approved." },
    ]);
    const options = {
      model,
      tools: [lookup, approve],
      toolBatchPolicy: { validate: () => ({ allowed: true as const }) },
    };
    const first = await collect(createBareAgent(options).stream("go"));
    expect(first.result.subtype).toBe("paused");
    expect(types(first.events)).toEqual([
      "run_start",
      "turn_start",
      "message",
      "tool_start",
      "tool_start",
      "tool_end",
      "turn_end",
      "result",
    ]);
    // The paused turn's end lists the results it has so far.
    const pausedEnd = first.events.at(-2) as Extract<AgentEvent, { type: "turn_end" }>;
    expect(pausedEnd.toolResults.map((block) => block.tool_use_id)).toEqual(["l1"]);

    const state = JSON.parse(JSON.stringify(first.result.state)) as RunState;
    const second = await collect(
      createBareAgent(options).resumeStream(state, { toolOutputs: { a1: "yes" } }),
    );
    expect(second.result.subtype).toBe("success");
    expect(types(second.events)).toEqual([
      "run_start",
      // The paused turn (same number), opened again for the rest of its batch.
      "turn_start",
      "tool_end",
      "turn_end",
      "turn_start",
      "text_delta",
      "message",
      "turn_end",
      "result",
    ]);
    const turns = second.events.flatMap((event) =>
      event.type === "turn_start" || event.type === "turn_end"
        ? [`${event.type}:${event.turn}`]
        : [],
    );
    expect(turns).toEqual(["turn_start:1", "turn_end:1", "turn_start:2", "turn_end:2"]);
  });
});
