import { AbortError, createBareAgent, defineTool, type Model, tool } from "skein";
import { type ScriptedTurn, scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { deferred } from "../support/promises.ts";
import { expectValidTranscript, resultText, toolResultsOf } from "../support/results.ts";
import { drain, Gates, noEager } from "./helpers.ts";

/**
 * Three calls: `a` and `b` are safe and overlap; `c` is unsafe, so it waits for both. `a` is let
 * finish; `b` runs until it sees the abort, then waits for `bSettles` before it throws.
 */
function threeCallRun(options: { bSettlesAfterDrain?: boolean } = {}) {
  const gates = new Gates();
  const trace = gates.trace;
  const bSawAbort = deferred();
  const bSettles = deferred();
  const bStarted = deferred();
  let bSignalAborted = false;
  const handler = async ({ id }: { id: string }, ctx: { signal: AbortSignal }) => {
    if (id !== "b") {
      await gates.pass(id);
      return `done ${id}`;
    }
    trace.push("start:b");
    bStarted.resolve();
    await new Promise<void>((resolve) =>
      ctx.signal.addEventListener("abort", () => resolve(), { once: true }),
    );
    bSignalAborted = ctx.signal.aborted;
    trace.push("b:saw-abort");
    bSawAbort.resolve();
    if (options.bSettlesAfterDrain) await drain();
    else await bSettles.promise;
    trace.push("b:settled");
    throw ctx.signal.reason;
  };
  const safe = tool("safe", "Safe", z.object({ id: z.string() }), handler, {
    isConcurrencySafe: () => true,
  });
  const unsafe = tool("unsafe", "Unsafe", z.object({ id: z.string() }), handler);
  const model = scriptedModel([
    {
      toolCalls: [
        { id: "a", name: "safe", input: { id: "a" } },
        { id: "b", name: "safe", input: { id: "b" } },
        { id: "c", name: "unsafe", input: { id: "c" } },
      ],
    },
    { text: "never asked" },
  ]);
  const agent = createBareAgent({ model, tools: [safe, unsafe] });
  return {
    agent,
    model,
    gates,
    trace,
    bStarted,
    bSawAbort,
    bSettles,
    bSignalAborted: () => bSignalAborted,
  };
}

function expectCancelledTranscript(messages: AbortError["messages"]) {
  expectValidTranscript(messages);
  expect(messages).toHaveLength(3);
  const blocks = toolResultsOf(messages[2]);
  expect(blocks.map((block) => [block.tool_use_id, block.is_error])).toEqual([
    ["a", false],
    ["b", true],
    ["c", true],
  ]);
  expect(resultText(blocks[0])).toBe("done a");
  expect(resultText(blocks[1])).toMatch(/cancelled/);
  expect(resultText(blocks[2])).toMatch(/cancelled/);
}

describe("aborting a run mid-batch (B10)", () => {
  it("stops the running call through its signal, never starts the queued one, and rejects only after the running one settled", async () => {
    const setup = threeCallRun();
    const controller = new AbortController();
    const run = setup.agent.run("go", { signal: controller.signal });
    let rejected = false;
    run.catch(() => {
      rejected = true;
      setup.trace.push("run:rejected");
    });
    await setup.bStarted.promise;
    await setup.gates.finish("a");
    controller.abort();
    await setup.bSawAbort.promise;
    await drain();
    expect(rejected).toBe(false);
    setup.bSettles.resolve();
    const error = await run.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(AbortError);
    expect((error as Error).name).toBe("AbortError");
    expect(setup.bSignalAborted()).toBe(true);
    expect(setup.gates.hasStarted("c")).toBe(false);
    expect(setup.trace).toEqual([
      "start:a",
      "start:b",
      "end:a",
      "b:saw-abort",
      "b:settled",
      "run:rejected",
    ]);
    const abort = error as AbortError;
    expectCancelledTranscript(abort.messages);
    expect(typeof abort.sessionId).toBe("string");
    expect(setup.model.requests).toHaveLength(1);
  });

  it("at maxConcurrency 2 stops both running calls and never starts the queued one", async () => {
    const gates = new Gates();
    const sawAbort: string[] = [];
    const work = tool("work", "Work", z.object({ id: z.string() }), async ({ id }, ctx) => {
      let onAbort = () => {};
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => {
          sawAbort.push(id);
          reject(ctx.signal.reason);
        };
        ctx.signal.addEventListener("abort", onAbort, { once: true });
      });
      try {
        await Promise.race([gates.pass(id), aborted]);
      } finally {
        ctx.signal.removeEventListener("abort", onAbort);
      }
      return `done ${id}`;
    });
    const model = scriptedModel([
      { toolCalls: ["a", "b", "c", "d"].map((id) => ({ id, name: "work", input: { id } })) },
    ]);
    const controller = new AbortController();
    const run = createBareAgent({
      model,
      tools: [work],
      toolConcurrency: { mode: "all", maxConcurrency: 2 },
    }).run("go", { signal: controller.signal });
    await gates.started("a", "b");
    await gates.finish("a");
    await gates.started("c");
    controller.abort(new Error("user pressed stop"));
    const error = (await run.catch((thrown: unknown) => thrown)) as AbortError;
    expect(error.name).toBe("AbortError");
    expect(sawAbort).toEqual(["b", "c"]);
    expect(gates.hasStarted("d")).toBe(false);
    expectValidTranscript(error.messages);
    expect(
      toolResultsOf(error.messages.at(-1)).map((block) => [block.tool_use_id, block.is_error]),
    ).toEqual([
      ["a", false],
      ["b", true],
      ["c", true],
      ["d", true],
    ]);
  });

  it("breaking out of for await over stream() aborts the same way and waits for the running call", async () => {
    const setup = threeCallRun({ bSettlesAfterDrain: true });
    for await (const event of setup.agent.stream("go")) {
      if (event.type === "tool_start" && event.callId === "c") {
        await setup.bStarted.promise;
        await setup.gates.finish("a");
        break;
      }
    }
    setup.trace.push("loop:exited");
    expect(setup.bSignalAborted()).toBe(true);
    expect(setup.gates.hasStarted("c")).toBe(false);
    expect(setup.trace).toEqual([
      "start:a",
      "start:b",
      "end:a",
      "b:saw-abort",
      "b:settled",
      "loop:exited",
    ]);
    expect(setup.model.requests).toHaveLength(1);
  });

  it("makes a stream with an aborted signal throw AbortError with a valid transcript", async () => {
    const setup = threeCallRun();
    const controller = new AbortController();
    const seen: string[] = [];
    const consume = async () => {
      for await (const event of setup.agent.stream("go", { signal: controller.signal })) {
        seen.push(event.type);
        if (event.type === "tool_start" && event.callId === "c") {
          await setup.bStarted.promise;
          await setup.gates.finish("a");
          controller.abort();
          await setup.bSawAbort.promise;
          setup.bSettles.resolve();
        }
      }
    };
    const error = (await consume().catch((thrown: unknown) => thrown)) as AbortError;
    expect(error).toBeInstanceOf(AbortError);
    expectCancelledTranscript(error.messages);
    expect(seen).toEqual([
      "run_start",
      "turn_start",
      // Eager execution: the calls are prepared as their blocks complete, before the reply is.
      "tool_start",
      "tool_start",
      "tool_start",
      "message",
      "tool_end",
      "tool_end",
      "tool_end",
      // The aborted turn still ends: every turn_start has its turn_end.
      "turn_end",
    ]);
  });
});

describe("aborting outside a batch", () => {
  it("rejects at once, without calling the model, when the signal is already aborted", async () => {
    const model = scriptedModel([{ text: "never" }]);
    const controller = new AbortController();
    controller.abort();
    const error = (await createBareAgent({ model })
      .run("hello", { signal: controller.signal })
      .catch((thrown: unknown) => thrown)) as AbortError;
    expect(error.name).toBe("AbortError");
    expect(model.requests).toHaveLength(0);
    expect(error.messages).toEqual([{ role: "user", content: "hello" }]);
  });

  it("rejects while the model is being called, and never runs the tools of its late answer", async () => {
    let ran = 0;
    const counted = tool("counted", "Counted", z.object({}), async () => {
      ran++;
      return "ran";
    });
    const answer = deferred<ScriptedTurn>();
    const asked = deferred();
    const model = scriptedModel(() => {
      asked.resolve();
      return answer.promise;
    });
    const controller = new AbortController();
    const run = createBareAgent({ model, tools: [counted] }).run("go", {
      signal: controller.signal,
    });
    await asked.promise;
    controller.abort();
    answer.resolve({ toolCalls: [{ id: "late", name: "counted", input: {} }] });
    const error = (await run.catch((thrown: unknown) => thrown)) as AbortError;
    expect(error.name).toBe("AbortError");
    expect(ran).toBe(0);
    expect(error.messages).toEqual([{ role: "user", content: "go" }]);
  });

  it("rejects when a signal-aware model stops on abort", async () => {
    const asked = deferred();
    const model: Model = {
      provider: "test",
      modelId: "waits",
      async *stream(_request, { signal }) {
        asked.resolve();
        await new Promise((_, reject) =>
          signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
        );
      },
    };
    const controller = new AbortController();
    const run = createBareAgent({ model }).run("go", { signal: controller.signal });
    await asked.promise;
    controller.abort();
    await expect(run).rejects.toMatchObject({ name: "AbortError" });
  });

  it("keeps the result of a handler that aborted the run and returned, and makes no further model call", async () => {
    const controller = new AbortController();
    const stopper = tool("stopper", "Stops", z.object({}), async () => {
      controller.abort();
      return "stopped it";
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "s", name: "stopper", input: {} }] },
      { text: "never" },
    ]);
    const error = (await createBareAgent({ model, tools: [stopper] })
      .run("go", { signal: controller.signal })
      .catch((thrown: unknown) => thrown)) as AbortError;
    expect(error.name).toBe("AbortError");
    expect(model.requests).toHaveLength(1);
    expectValidTranscript(error.messages);
    expect(toolResultsOf(error.messages.at(-1)).map(resultText)).toEqual(["stopped it"]);
  });
});

describe("aborting while the batch is being prepared", () => {
  /**
   * Three safe calls; the beforeToolCall hook of `b` waits until the test lets it return. `a`'s
   * handler, if it starts, runs until it sees the abort. The test aborts while `b`'s hook waits,
   * after the reply is complete (the stream's `message` event was seen).
   */
  function hookAbortRun({ eager }: { eager: boolean }) {
    const ran: string[] = [];
    const aSawAbort: boolean[] = [];
    const work = tool(
      "work",
      "Work",
      z.object({ id: z.string() }),
      async ({ id }, ctx) => {
        ran.push(id);
        if (id !== "a") return "ran";
        await new Promise<void>((resolve) =>
          ctx.signal.addEventListener("abort", () => resolve(), { once: true }),
        );
        aSawAbort.push(ctx.signal.aborted);
        throw ctx.signal.reason;
      },
      { isConcurrencySafe: () => true },
    );
    const inHook = deferred();
    const hookMayReturn = deferred();
    const replied = deferred();
    const model = scriptedModel([
      { toolCalls: ["a", "b", "c"].map((id) => ({ id, name: "work", input: { id } })) },
    ]);
    const controller = new AbortController();
    const seen: string[] = [];
    const consume = async () => {
      const stream = createBareAgent({
        model,
        tools: [work],
        ...(eager ? {} : { toolBatchPolicy: noEager }),
        hooks: {
          beforeToolCall: async ({ callId }) => {
            if (callId !== "b") return;
            inHook.resolve();
            await hookMayReturn.promise;
          },
        },
      }).stream("go", { signal: controller.signal });
      for await (const event of stream) {
        if (event.type === "message") replied.resolve();
        if (event.type === "tool_start" || event.type === "tool_end")
          seen.push(`${event.type}:${event.callId}`);
      }
    };
    const consumed = consume().catch((thrown: unknown) => thrown);
    const abortInHook = async () => {
      await Promise.all([inHook.promise, replied.promise]);
      controller.abort();
      hookMayReturn.resolve();
      return (await consumed) as AbortError;
    };
    return { ran, aSawAbort, seen, abortInHook };
  }

  it("without eager execution (pass-through batch policy), runs no handler when the abort comes during a beforeToolCall hook, and still answers every call", async () => {
    const { ran, seen, abortInHook } = hookAbortRun({ eager: false });
    const error = await abortInHook();
    expect(error.name).toBe("AbortError");
    expect(ran).toEqual([]);
    expect(seen).toEqual([
      "tool_start:a",
      "tool_start:b",
      "tool_start:c",
      "tool_end:a",
      "tool_end:b",
      "tool_end:c",
    ]);
    expectValidTranscript(error.messages);
    expect(toolResultsOf(error.messages.at(-1)).map((block) => block.is_error)).toEqual([
      true,
      true,
      true,
    ]);
  });

  it("with eager execution, cancels through its signal the safe call that started before a later call's hook, runs no other handler, and still answers every call", async () => {
    const { ran, aSawAbort, seen, abortInHook } = hookAbortRun({ eager: true });
    const error = await abortInHook();
    expect(error.name).toBe("AbortError");
    // `a` may start early (before `b`'s hook); `b` and `c` never start.
    expect(ran).toEqual(["a"]);
    expect(aSawAbort).toEqual([true]);
    expect(seen).toEqual([
      "tool_start:a",
      "tool_start:b",
      "tool_start:c",
      "tool_end:a",
      "tool_end:b",
      "tool_end:c",
    ]);
    expectValidTranscript(error.messages);
    const blocks = toolResultsOf(error.messages.at(-1));
    expect(blocks.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ["a", true],
      ["b", true],
      ["c", true],
    ]);
    expect(resultText(blocks[0])).toMatch(/cancelled while it was running/);
    expect(resultText(blocks[1])).toMatch(/cancelled before it started/);
    expect(resultText(blocks[2])).toMatch(/cancelled before it started/);
  });
});

describe("aborting a batch that also waits for the app", () => {
  it("answers the waiting call as cancelled instead of pausing", async () => {
    const started = deferred();
    const running = tool("running", "Runs until aborted", z.object({}), (_input, ctx) => {
      started.resolve();
      return new Promise<string>((_, reject) =>
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true }),
      );
    });
    const external = defineTool({ id: "external", execute: false, isConcurrencySafe: () => true });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "ext", name: "external", input: {} },
          { id: "run", name: "running", input: {} },
        ],
      },
    ]);
    const controller = new AbortController();
    const run = createBareAgent({
      model,
      tools: [running, external],
      toolConcurrency: { mode: "all" },
    }).run("go", { signal: controller.signal });
    await started.promise;
    controller.abort();
    const error = (await run.catch((thrown: unknown) => thrown)) as AbortError;
    expect(error.name).toBe("AbortError");
    expectValidTranscript(error.messages);
    const blocks = toolResultsOf(error.messages.at(-1));
    expect(blocks.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ["ext", true],
      ["run", true],
    ]);
    expect(resultText(blocks[0])).toMatch(/cancelled/);
  });
});
