import {
  createBareAgent,
  type Model,
  type ModelStreamEvent,
  type SDKResultMessage,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { deferred } from "../support/promises.ts";
import { expectValidTranscript } from "../support/results.ts";
import { collect, drain, labels, noEager } from "./helpers.ts";

const ping = tool("ping", "Ping", z.object({}), async () => "pong");

describe("maxTurns", () => {
  it("stops a model that calls tools forever with error_max_turns, a state, and exactly maxTurns model calls", async () => {
    const model = scriptedModel(() => ({ toolCalls: [{ name: "ping", input: {} }] }));
    const result = await createBareAgent({ model, tools: [ping], maxTurns: 3 }).run("loop");
    expect(result.subtype).toBe("error_max_turns");
    expect(result.isError).toBe(true);
    expect(result.numTurns).toBe(3);
    expect(model.requests).toHaveLength(3);
    expect(result.state).toBeDefined();
    expect(result.state!.numTurns).toBe(3);
    expect(result.state!.messages).toEqual(result.messages);
    expect(result.result).toBe("");
    expect(result.error).toEqual({
      name: "MaxTurnsError",
      message: expect.stringMatching(/after 3 model calls \(maxTurns 3\)/),
    });
    expect(result.messages).toHaveLength(7);
    expectValidTranscript(result.messages);
  });

  it("leaves a state that a new agent with a higher maxTurns can resume", async () => {
    const model = scriptedModel((_request, index) =>
      index < 2 ? { toolCalls: [{ name: "ping", input: {} }] } : { text: "finally" },
    );
    const first = await createBareAgent({ model, tools: [ping], maxTurns: 2 }).run("loop");
    expect(first.subtype).toBe("error_max_turns");
    const state = JSON.parse(JSON.stringify(first.state));
    const resumed = await createBareAgent({ model, tools: [ping], maxTurns: 5 }).resume(state);
    expect(resumed.subtype).toBe("success");
    expect(resumed.result).toBe("finally");
    expect(resumed.numTurns).toBe(3);
    expect(model.requests).toHaveLength(3);
  });

  it("counts model calls, not tool calls: maxTurns 1 allows one model call", async () => {
    const model = scriptedModel([{ toolCalls: [{ name: "ping", input: {} }] }, { text: "no" }]);
    const result = await createBareAgent({ model, tools: [ping], maxTurns: 1 }).run("go");
    expect(result.subtype).toBe("error_max_turns");
    expect(model.requests).toHaveLength(1);
  });
});

describe("a model that fails", () => {
  it("resolves with error_during_execution and the error's name, message and status", async () => {
    const overloaded = Object.assign(new Error("the model is overloaded"), {
      name: "OverloadedError",
      status: 529,
    });
    const result = await createBareAgent({ model: scriptedModel([overloaded]) }).run("hi");
    expect(result.subtype).toBe("error_during_execution");
    expect(result.isError).toBe(true);
    expect(result.error).toEqual({
      name: "OverloadedError",
      message: "the model is overloaded",
      status: 529,
    });
  });

  it("reports no status when the error has none", async () => {
    const result = await createBareAgent({
      model: scriptedModel([new TypeError("fetch failed")]),
    }).run("hi");
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error).toEqual({ name: "TypeError", message: "fetch failed" });
  });

  it("fails with a message saying so when the script runs out", async () => {
    const model = scriptedModel([{ toolCalls: [{ name: "ping", input: {} }] }]);
    const result = await createBareAgent({ model, tools: [ping] }).run("go");
    expect(result.subtype).toBe("error_during_execution");
    expect(result.isError).toBe(true);
    expect(result.error!.name).toBe("ScriptExhaustedError");
    expect(result.error!.message).toMatch(/script has only 1 turn/);
    expect(result.result).toBe("");
    expectValidTranscript(result.messages);
  });

  /** A stream that sends some text and a complete tool call, then fails. */
  function failingAfterToolCall(beforeFailing: () => Promise<void> = async () => {}): Model {
    return {
      provider: "test",
      modelId: "flaky",
      async *stream(): AsyncGenerator<ModelStreamEvent> {
        yield { type: "text_delta", text: "Half an ans" };
        yield { type: "tool_call", id: "t1", name: "counted", input: {} };
        await beforeFailing();
        throw Object.assign(new Error("connection reset"), { status: 502 });
      },
    };
  }

  function expectFailedTurn(result: SDKResultMessage) {
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error).toEqual({ name: "Error", message: "connection reset", status: 502 });
    // The call is in no transcript the model will see: only the partial text is kept.
    expect(result.messages).toEqual([
      { role: "user", content: "go" },
      { role: "assistant", content: [{ type: "text", text: "Half an ans" }], incomplete: true },
    ]);
    expect(result.steps).toEqual([]);
  }

  it("without eager execution (pass-through batch policy), keeps partial text as an incomplete assistant message and never runs or reports the failed turn's tool calls", async () => {
    let ran = 0;
    const counted = tool("counted", "Counted", z.object({}), async () => {
      ran++;
      return "ran";
    });
    const { events, result } = await collect(
      createBareAgent({
        model: failingAfterToolCall(),
        tools: [counted],
        toolBatchPolicy: noEager,
      }).stream("go"),
    );
    expect(ran).toBe(0);
    expectFailedTurn(result);
    expect(labels(events)).toEqual(["run_start", "turn_start", "text_delta", "turn_end", "result"]);
  });

  it("with eager execution, never runs an unsafe call of the failed turn, but reports its end as cancelled", async () => {
    let ran = 0;
    const counted = tool("counted", "Counted", z.object({}), async () => {
      ran++;
      return "ran";
    });
    const { events, result } = await collect(
      createBareAgent({ model: failingAfterToolCall(), tools: [counted] }).stream("go"),
    );
    expect(ran).toBe(0);
    expectFailedTurn(result);
    expect(labels(events)).toEqual([
      "run_start",
      "turn_start",
      "text_delta",
      "tool_start:t1",
      "tool_end:t1",
      "turn_end",
      "result",
    ]);
    expect(events.find((event) => event.type === "tool_end")).toMatchObject({
      isError: true,
      result: { content: expect.stringMatching(/cancelled/), isError: true },
      details: { reason: "aborted" },
    });
  });

  it("with eager execution, cancels through its signal a safe call that started before the reply failed", async () => {
    const started = deferred();
    const sawAbort: boolean[] = [];
    const counted = tool(
      "counted",
      "Counted",
      z.object({}),
      async (_input, ctx) => {
        started.resolve();
        await new Promise<void>((resolve) =>
          ctx.signal.addEventListener("abort", () => resolve(), { once: true }),
        );
        sawAbort.push(ctx.signal.aborted);
        throw ctx.signal.reason;
      },
      { isConcurrencySafe: () => true },
    );
    // The stream fails only once the call's handler is running.
    const model = failingAfterToolCall(() => started.promise);
    const { events, result } = await collect(
      createBareAgent({ model, tools: [counted] }).stream("go"),
    );
    expect(sawAbort).toEqual([true]);
    expectFailedTurn(result);
    expect(labels(events)).toEqual([
      "run_start",
      "turn_start",
      "text_delta",
      "tool_start:t1",
      "tool_end:t1",
      "turn_end",
      "result",
    ]);
    expect(events.find((event) => event.type === "tool_end")).toMatchObject({
      isError: true,
      result: { content: expect.stringMatching(/cancelled/), isError: true },
      details: { reason: "aborted" },
    });
  });

  it("with eager execution, keeps the real result on tool_end of a safe call that finished before the reply failed", async () => {
    const finished = deferred();
    let ran = 0;
    const counted = tool(
      "counted",
      "Counted",
      z.object({}),
      async () => {
        ran++;
        finished.resolve();
        return "ran";
      },
      { isConcurrencySafe: () => true },
    );
    const model = failingAfterToolCall(async () => {
      await finished.promise;
      await drain();
    });
    const { events, result } = await collect(
      createBareAgent({ model, tools: [counted] }).stream("go"),
    );
    expect(ran).toBe(1);
    expectFailedTurn(result);
    expect(labels(events)).toEqual([
      "run_start",
      "turn_start",
      "text_delta",
      "tool_start:t1",
      "tool_end:t1",
      "turn_end",
      "result",
    ]);
    // It did run: the app is told so. It never reaches the transcript, whose reply is incomplete.
    expect(events.find((event) => event.type === "tool_end")).toMatchObject({
      isError: false,
      result: { content: "ran" },
    });
    expect(JSON.stringify(result.messages)).not.toContain("tool_result");
  });

  it("fails, rather than finishing the turn, when the stream ends without its final message", async () => {
    const model: Model = {
      provider: "test",
      modelId: "cut",
      async *stream(): AsyncGenerator<ModelStreamEvent> {
        yield { type: "text_delta", text: "cut sho" };
      },
    };
    const result = await createBareAgent({ model }).run("go");
    expect(result.subtype).toBe("error_during_execution");
    expect(result.messages.at(-1)).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "cut sho" }],
      incomplete: true,
    });
  });

  it("does not throw from run(): a model failure resolves", async () => {
    const agent = createBareAgent({ model: scriptedModel([new Error("boom")]) });
    await expect(agent.run("hi")).resolves.toMatchObject({ subtype: "error_during_execution" });
  });
});

describe("the default maxTurns", () => {
  it("is 100 model calls", async () => {
    const model = scriptedModel(() => ({ toolCalls: [{ name: "ping", input: {} }] }));
    const result = await createBareAgent({ model, tools: [ping] }).run("loop");
    expect(result.subtype).toBe("error_max_turns");
    expect(model.requests).toHaveLength(100);
    expect(result.numTurns).toBe(100);
  });
});
