import {
  type AgentEvent,
  type AgentOptions,
  createBareAgent,
  type IncompleteToolCall,
  type Model,
  type ModelRequest,
  type ModelStreamEvent,
  type SDKResultMessage,
  type ToolContext,
  type ToolDefinition,
  tool,
} from "skein";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type Deferred, deferred } from "../support/promises.ts";
import {
  expectValidTranscript,
  resultText,
  toolResultsOf,
  toolUseIds,
} from "../support/results.ts";
import { drain, Gates, label, noEager } from "./helpers.ts";

/*
 * Eager execution (DESIGN decision 5 and the bullets on `tool_call`): as each tool_use block
 * completes in the stream, its call is prepared in call order; a call that is concurrency-safe
 * under the agent's mode may start at once, while the model still streams; any other call waits
 * for the complete reply. It is off with a toolBatchPolicy, with mode "sequential", and when any
 * tool has executionMode "sequential".
 */

type Call = { id: string; name: string; input: unknown };

/** A model whose turns are async generators the test writes, so it can pause mid-stream. */
function streamedModel(turns: ((signal: AbortSignal) => AsyncGenerator<ModelStreamEvent>)[]) {
  const requests: ModelRequest[] = [];
  const model: Model = {
    provider: "test",
    modelId: "streamed",
    async *stream(request, { signal }) {
      const turn = turns[requests.length];
      requests.push(structuredClone(request));
      if (!turn) throw new Error(`the test scripted only ${turns.length} turns`);
      yield* turn(signal);
    },
  };
  return { model, requests };
}

const toolCall = (call: Call): ModelStreamEvent => ({ type: "tool_call", ...call });

function reply(calls: Call[], incompleteToolCalls?: IncompleteToolCall[]): ModelStreamEvent {
  return {
    type: "message",
    message: {
      role: "assistant",
      content: calls.map((call) => ({ type: "tool_use" as const, ...call })),
    },
    stopReason: "tool_use",
    ...(incompleteToolCalls ? { incompleteToolCalls } : {}),
  };
}

async function* finalText(): AsyncGenerator<ModelStreamEvent> {
  yield {
    type: "message",
    message: { role: "assistant", content: [{ type: "text", text: "done" }] },
    stopReason: "end_turn",
  };
}

/** Fails clearly instead of hanging when something the test waits for never happens. */
async function within<T>(promise: Promise<T>, what: string, ms = 2_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Consumes a run's stream, recording labels, and lets the test wait for a given event. */
function watch(stream: AsyncIterable<AgentEvent>) {
  const seen: string[] = [];
  const events: AgentEvent[] = [];
  const waiters = new Map<string, Deferred<void>>();
  const waiter = (key: string) => {
    let entry = waiters.get(key);
    if (!entry) {
      entry = deferred();
      waiters.set(key, entry);
    }
    return entry;
  };
  const done = (async () => {
    for await (const event of stream) {
      events.push(event);
      seen.push(label(event));
      waiter(label(event)).resolve();
    }
    return events.at(-1) as SDKResultMessage;
  })();
  done.catch(() => {});
  return {
    seen,
    events,
    done,
    until: (key: string) => within(waiter(key).promise, `the event ${key}`),
  };
}

/** `read` is concurrency-safe, `write` is not; both mark their start and wait on the gates. */
function gatedTools(gates: Gates) {
  const input = z.object({ id: z.string(), keys: z.array(z.string()).optional() });
  const handler = async ({ id }: { id: string }, ctx: ToolContext) => {
    ctx.emit({ type: "app.start", id });
    await gates.pass(id);
    return `done ${id}`;
  };
  const read = tool("read", "Read", input, handler, {
    isConcurrencySafe: () => true,
    resourceKeys: ({ keys }) => keys ?? [],
  });
  const write = tool("write", "Write", input, handler);
  return { read, write };
}

const read = (id: string, keys?: string[]): Call => ({
  id,
  name: "read",
  input: keys ? { id, keys } : { id },
});
const write = (id: string): Call => ({ id, name: "write", input: { id } });

function sentResults(requests: ModelRequest[], turn: number) {
  return toolResultsOf(requests[turn]!.messages.at(-1)).map((block) => [
    block.tool_use_id,
    resultText(block),
    block.is_error,
  ]);
}

describe("eager execution", () => {
  it("starts a safe call while the model is still streaming", async () => {
    const gates = new Gates();
    const { read: readTool } = gatedTools(gates);
    const rest = deferred();
    const { model, requests } = streamedModel([
      async function* () {
        yield toolCall(read("c1"));
        // The rest of the reply comes only once c1's handler has started.
        await rest.promise;
        yield toolCall(read("c2"));
        yield reply([read("c1"), read("c2")]);
      },
      finalText,
    ]);
    const run = watch(createBareAgent({ model, tools: [readTool] }).stream("go"));
    await within(gates.started("c1"), "c1's handler to start while the model streams");
    expect(run.seen).not.toContain("message");
    expect(gates.hasStarted("c2")).toBe(false);
    rest.resolve();
    await within(gates.started("c2"), "c2's handler");
    gates.release("c1", "c2");
    const result = await run.done;
    expect(result.subtype).toBe("success");
    expect(run.seen.indexOf("app.start:c1")).toBeLessThan(run.seen.indexOf("message"));
    expect(run.seen.filter((entry) => entry.startsWith("tool_"))).toEqual([
      "tool_start:c1",
      "tool_start:c2",
      "tool_end:c1",
      "tool_end:c2",
    ]);
    expect(sentResults(requests, 1)).toEqual([
      ["c1", "done c1", false],
      ["c2", "done c2", false],
    ]);
    expectValidTranscript(result.messages);
  });

  it("never starts an unsafe call before the reply is complete, nor a safe call after it", async () => {
    const gates = new Gates();
    const tools = gatedTools(gates);
    const rest = deferred();
    const streamed = deferred();
    const { model, requests } = streamedModel([
      async function* () {
        yield toolCall(read("s0"));
        yield toolCall(write("u1"));
        yield toolCall(read("s2"));
        streamed.resolve();
        await rest.promise;
        yield reply([read("s0"), write("u1"), read("s2")]);
      },
      finalText,
    ]);
    const run = watch(createBareAgent({ model, tools: [tools.read, tools.write] }).stream("go"));
    await within(gates.started("s0"), "s0's handler");
    await within(streamed.promise, "the three tool calls");
    await run.until("tool_start:s2");
    await drain();
    // While the model streams: the safe call before the unsafe one runs; nothing else.
    expect(gates.running()).toEqual(["s0"]);
    rest.resolve();
    await run.until("message");
    await drain();
    // The reply is complete, but u1 runs alone: not before s0 has finished.
    expect(gates.running()).toEqual(["s0"]);
    await gates.finish("s0");
    await within(gates.started("u1"), "u1's handler");
    await drain();
    expect(gates.running()).toEqual(["u1"]);
    await gates.finish("u1");
    await within(gates.started("s2"), "s2's handler");
    await gates.finish("s2");
    const result = await run.done;
    expect(gates.trace).toEqual(["start:s0", "end:s0", "start:u1", "end:u1", "start:s2", "end:s2"]);
    expect(run.seen.indexOf("message")).toBeLessThan(run.seen.indexOf("app.start:u1"));
    expect(sentResults(requests, 1)).toEqual([
      ["s0", "done s0", false],
      ["u1", "done u1", false],
      ["s2", "done s2", false],
    ]);
    expectValidTranscript(result.messages);
  });

  it('starts any call early in mode "all", where every call may overlap', async () => {
    const gates = new Gates();
    const { write: writeTool } = gatedTools(gates);
    const rest = deferred();
    const { model } = streamedModel([
      async function* () {
        yield toolCall(write("w1"));
        await rest.promise;
        yield reply([write("w1")]);
      },
      finalText,
    ]);
    const run = watch(
      createBareAgent({ model, tools: [writeTool], toolConcurrency: { mode: "all" } }).stream("go"),
    );
    await within(gates.started("w1"), "w1's handler to start while the model streams");
    expect(run.seen).not.toContain("message");
    rest.resolve();
    gates.release("w1");
    expect((await run.done).subtype).toBe("success");
  });

  describe("is off", () => {
    const cases: {
      name: string;
      options: Partial<AgentOptions>;
      extraTools?: (gates: Gates) => ToolDefinition[];
    }[] = [
      { name: "with a toolBatchPolicy (pass-through)", options: { toolBatchPolicy: noEager } },
      { name: 'with mode "sequential"', options: { toolConcurrency: { mode: "sequential" } } },
      {
        name: 'when any tool of the agent has executionMode "sequential", even one not called',
        options: {},
        extraTools: () => [
          tool("serial", "Serial", z.object({}), async () => "serial", {
            executionMode: "sequential",
          }),
        ],
      },
    ];
    for (const { name, options, extraTools } of cases) {
      it(`${name}: no call is prepared or started before the message event`, async () => {
        const gates = new Gates();
        const { read: readTool } = gatedTools(gates);
        const policyCalls: string[][] = [];
        const rest = deferred();
        const streamed = deferred();
        const { model, requests } = streamedModel([
          async function* () {
            yield toolCall(read("c1"));
            yield toolCall(read("c2"));
            streamed.resolve();
            await rest.promise;
            yield reply([read("c1"), read("c2")]);
          },
          finalText,
        ]);
        const agentOptions: AgentOptions = {
          model,
          tools: [readTool, ...(extraTools?.(gates) ?? [])],
          ...options,
        };
        if (options.toolBatchPolicy) {
          agentOptions.toolBatchPolicy = {
            validate: ({ toolCalls }) => {
              gates.trace.push("policy");
              policyCalls.push(toolCalls.map((call) => call.id));
              return { allowed: true };
            },
          };
        }
        gates.release("c1", "c2");
        const run = watch(createBareAgent(agentOptions).stream("go"));
        await within(streamed.promise, "the two tool calls");
        await drain();
        await drain();
        expect(run.seen).toEqual(["run_start", "turn_start"]);
        expect(gates.trace).toEqual([]);
        rest.resolve();
        const result = await run.done;
        expect(result.subtype).toBe("success");
        expect(run.seen.slice(0, 5)).toEqual([
          "run_start",
          "turn_start",
          "message",
          "tool_start:c1",
          "tool_start:c2",
        ]);
        if (options.toolBatchPolicy) {
          expect(policyCalls).toEqual([["c1", "c2"]]);
          expect(gates.trace[0]).toBe("policy");
        }
        expect(gates.trace.filter((entry) => entry.startsWith("start:"))).toEqual([
          "start:c1",
          "start:c2",
        ]);
        expect(sentResults(requests, 1)).toEqual([
          ["c1", "done c1", false],
          ["c2", "done c2", false],
        ]);
      });
    }
  });

  it("never starts early a call whose id repeats an earlier one, and answers it as a duplicate", async () => {
    const gates = new Gates();
    const { read: readTool } = gatedTools(gates);
    const rest = deferred();
    const streamed = deferred();
    const again: Call = { id: "x", name: "read", input: { id: "x-again" } };
    const { model, requests } = streamedModel([
      async function* () {
        yield toolCall(read("x"));
        yield reply([read("x")]);
      },
      async function* () {
        yield toolCall(again);
        yield toolCall(read("y"));
        streamed.resolve();
        await rest.promise;
        yield reply([again, read("y")]);
      },
      finalText,
    ]);
    gates.release("x", "y");
    const run = watch(createBareAgent({ model, tools: [readTool] }).stream("go"));
    await within(streamed.promise, "the second reply's tool calls");
    await drain();
    await drain();
    expect(gates.hasStarted("x-again")).toBe(false);
    rest.resolve();
    const result = await run.done;
    expect(result.subtype).toBe("success");
    expect(gates.trace.filter((entry) => entry.startsWith("start:"))).toEqual([
      "start:x",
      "start:y",
    ]);
    expect(toolUseIds(result.messages[3])).toEqual(["x~2", "y"]);
    const blocks = toolResultsOf(requests[2]!.messages.at(-1));
    expect(blocks.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ["x~2", true],
      ["y", false],
    ]);
    expect(resultText(blocks[0])).toMatch(/reused the id "x"/);
    expect(run.events.find((event) => label(event) === "tool_end:x~2")).toMatchObject({
      isError: true,
      details: { reason: "duplicate_id" },
    });
    expectValidTranscript(result.messages);
  });

  // DESIGN decision 5: tool_start events run in call order, even when an earlier call of the
  // reply cannot be claimed early (here, a repeated id) and a later one could.
  it("keeps tool_start in call order when an earlier call of the reply repeats an id", async () => {
    const again: Call = { id: "x", name: "read", input: { id: "x-again" } };
    const gates = new Gates();
    const { read: readTool } = gatedTools(gates);
    gates.release("x", "y");
    const { model } = streamedModel([
      async function* () {
        yield toolCall(read("x"));
        yield reply([read("x")]);
      },
      async function* () {
        yield toolCall(again);
        yield toolCall(read("y"));
        yield reply([again, read("y")]);
      },
      finalText,
    ]);
    const run = watch(createBareAgent({ model, tools: [readTool] }).stream("go"));
    await run.done;
    const turnStarts = run.seen.flatMap((entry, index) => (entry === "turn_start" ? [index] : []));
    const secondTurn = run.seen.slice(turnStarts[1], turnStarts[2]);
    expect(secondTurn.filter((entry) => entry.startsWith("tool_start:"))).toEqual([
      "tool_start:x~2",
      "tool_start:y",
    ]);
  });

  // DESIGN decision 5 again, on the built-in providers' path: both report a call whose input is
  // not valid JSON only on the final message (no tool_call event), while a later complete call
  // of the same reply is a tool_call before it. c1's tool_start must still come first.
  // The Model contract: tool_call events come in block order, and none after a block that will
  // not be announced (cut short). Both providers keep it (test/providers/incomplete-order.test.ts).
  it("keeps tool_start in call order when an earlier call of the reply is incomplete", async () => {
    const gates = new Gates();
    const { read: readTool } = gatedTools(gates);
    gates.release("c2");
    const { model, requests } = streamedModel([
      async function* () {
        yield reply(
          [{ id: "c1", name: "read", input: {} }, read("c2")],
          [{ id: "c1", name: "read", reason: "its input was not valid JSON" }],
        );
      },
      finalText,
    ]);
    const run = watch(createBareAgent({ model, tools: [readTool] }).stream("go"));
    await run.done;
    expect(sentResults(requests, 1).map(([id, , isError]) => [id, isError])).toEqual([
      ["c1", true],
      ["c2", false],
    ]);
    expect(run.seen.filter((entry) => entry.startsWith("tool_start:"))).toEqual([
      "tool_start:c1",
      "tool_start:c2",
    ]);
  });

  // DESIGN decision 4: a call without a concurrency rule runs alone, in order, even when the
  // stream gave it no id (so it cannot be claimed early) and a later safe call could be.
  it("runs an unsafe call whose block had no id alone and in call order, before a later safe call", async () => {
    const gates = new Gates();
    const tools = gatedTools(gates);
    gates.release("u1", "s2");
    const noId: Call = { id: "", name: "write", input: { id: "u1" } };
    const { model } = streamedModel([
      async function* () {
        yield toolCall(noId);
        yield toolCall(read("s2"));
        yield reply([noId, read("s2")]);
      },
      finalText,
    ]);
    const run = watch(createBareAgent({ model, tools: [tools.read, tools.write] }).stream("go"));
    const result = await run.done;
    expect(result.subtype).toBe("success");
    expect(gates.trace).toEqual(["start:u1", "end:u1", "start:s2", "end:s2"]);
  });

  /** c1 arrives as a tool_call, yet the final message lists it as incomplete; c2 is complete. */
  function incompleteAfterToolCall(c1: Call) {
    const gates = new Gates();
    const tools = gatedTools(gates);
    gates.release("c1", "c2");
    const { model, requests } = streamedModel([
      async function* () {
        yield toolCall(c1);
        yield toolCall(read("c2"));
        yield reply(
          [c1, read("c2")],
          [{ id: "c1", name: c1.name, reason: "the reply hit max_tokens while writing it" }],
        );
      },
      finalText,
    ]);
    const run = watch(createBareAgent({ model, tools: [tools.read, tools.write] }).stream("go"));
    return { gates, requests, run };
  }

  // DESIGN: a call listed in incompleteToolCalls is answered with an error and never run. An
  // unsafe call had not started when the reply ended, so nothing forces it to run.
  it("never runs an unsafe call that the final message lists as incomplete, even after its tool_call event", async () => {
    const { gates, requests, run } = incompleteAfterToolCall(write("c1"));
    const result = await run.done;
    expect(result.subtype).toBe("success");
    expect(gates.hasStarted("c1")).toBe(false);
    expect(sentResults(requests, 1).map(([id, , isError]) => [id, isError])).toEqual([
      ["c1", true],
      ["c2", false],
    ]);
    expect(resultText(toolResultsOf(requests[1]!.messages.at(-1))[0])).toMatch(/was not run/);
    expect(run.seen.filter((entry) => /^tool_(start|end):/.test(entry))).toEqual([
      "tool_start:c1",
      "tool_start:c2",
      "tool_end:c1",
      "tool_end:c2",
    ]);
  });

  // A safe call may already have started when the final message calls it incomplete (only a
  // Model that breaks its own contract says both: the built-in providers never announce a call
  // they later list as incomplete). What must hold: it ends exactly once, and the model is not
  // told "not run" about a call that ran.
  it("ends exactly once, with its own result, a safe call that started early and is then listed as incomplete", async () => {
    const { gates, requests, run } = incompleteAfterToolCall(read("c1"));
    const result = await run.done;
    expect(result.subtype).toBe("success");
    expect(gates.trace.filter((entry) => entry.startsWith("start:"))).toEqual([
      "start:c1",
      "start:c2",
    ]);
    expect(sentResults(requests, 1)).toEqual([
      ["c1", "done c1", false],
      ["c2", "done c2", false],
    ]);
    expect(run.seen.filter((entry) => /^tool_(start|end):/.test(entry))).toEqual([
      "tool_start:c1",
      "tool_start:c2",
      "tool_end:c1",
      "tool_end:c2",
    ]);
    expectValidTranscript(result.messages);
  });

  it("keeps calls sharing a resource key apart across early and late calls", async () => {
    const gates = new Gates();
    const { read: readTool } = gatedTools(gates);
    const rest = deferred();
    const late: Call = { id: "", name: "read", input: { id: "e4", keys: ["f"] } };
    const { model, requests } = streamedModel([
      async function* () {
        yield toolCall(read("e1", ["f"]));
        await gates.started("e1");
        yield toolCall(read("e2", ["f"]));
        yield toolCall(read("e3", ["g"]));
        await rest.promise;
        // The last block has no id: it cannot be claimed early, and is scheduled after the reply.
        yield toolCall(late);
        yield reply([read("e1", ["f"]), read("e2", ["f"]), read("e3", ["g"]), late]);
      },
      finalText,
    ]);
    const run = watch(createBareAgent({ model, tools: [readTool] }).stream("go"));
    await within(gates.started("e1", "e3"), "e1 and e3 to start while the model streams");
    await drain();
    expect(gates.running()).toEqual(["e1", "e3"]);
    rest.resolve();
    await run.until("message");
    await drain();
    expect(gates.running()).toEqual(["e1", "e3"]);
    await gates.finish("e1");
    await within(gates.started("e2"), "e2 after e1");
    await drain();
    expect(gates.running()).toEqual(["e3", "e2"]);
    await gates.finish("e2");
    await within(gates.started("e4"), "the late call after e2");
    await gates.finish("e3");
    await gates.finish("e4");
    const result = await run.done;
    expect(result.subtype).toBe("success");
    const starts = gates.trace.filter((entry) => /^(start|end):e[124]$/.test(entry));
    expect(starts).toEqual(["start:e1", "end:e1", "start:e2", "end:e2", "start:e4", "end:e4"]);
    const ids = toolUseIds(result.messages[1]);
    expect(ids.slice(0, 3)).toEqual(["e1", "e2", "e3"]);
    expect(ids[3]).toMatch(/\S/);
    expect(sentResults(requests, 1).map(([, text]) => text)).toEqual([
      "done e1",
      "done e2",
      "done e3",
      "done e4",
    ]);
  });

  it("never runs more than maxConcurrency calls, while the model streams or after", async () => {
    const gates = new Gates();
    const { read: readTool } = gatedTools(gates);
    const rest = deferred();
    const ids = ["c1", "c2", "c3", "c4", "c5"];
    const { model, requests } = streamedModel([
      async function* () {
        for (const id of ids) yield toolCall(read(id));
        await rest.promise;
        yield reply(ids.map((id) => read(id)));
      },
      finalText,
    ]);
    const run = watch(
      createBareAgent({
        model,
        tools: [readTool],
        toolConcurrency: { mode: "safe", maxConcurrency: 2 },
      }).stream("go"),
    );
    await within(gates.started("c1", "c2"), "c1 and c2");
    await run.until("tool_start:c5");
    await drain();
    expect(gates.running()).toEqual(["c1", "c2"]);
    await gates.finish("c1");
    await within(gates.started("c3"), "c3 while the model streams");
    await drain();
    expect(gates.running()).toEqual(["c2", "c3"]);
    expect(run.seen).not.toContain("message");
    rest.resolve();
    await run.until("message");
    await drain();
    expect(gates.running()).toEqual(["c2", "c3"]);
    for (const id of ["c2", "c3", "c4", "c5"]) {
      await within(gates.started(id), id);
      await gates.finish(id);
    }
    const result = await run.done;
    expect(result.subtype).toBe("success");
    expect(gates.peak).toBe(2);
    expect(sentResults(requests, 1).map(([id]) => id)).toEqual(ids);
  });

  it("cancels a call started early when the run is aborted while the model still streams", async () => {
    const started = deferred();
    const sawAbort: boolean[] = [];
    const slow = tool(
      "slow",
      "Slow",
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
    const { model, requests } = streamedModel([
      async function* (signal) {
        yield toolCall({ id: "s1", name: "slow", input: {} });
        await new Promise((_, reject) =>
          signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
        );
      },
    ]);
    const controller = new AbortController();
    const run = watch(
      createBareAgent({ model, tools: [slow] }).stream("go", { signal: controller.signal }),
    );
    await within(started.promise, "the early call's handler");
    controller.abort();
    const error = await run.done.then(
      () => undefined,
      (thrown: unknown) => thrown as { name: string; messages: unknown[] },
    );
    expect(error?.name).toBe("AbortError");
    expect(sawAbort).toEqual([true]);
    expect(error?.messages).toEqual([{ role: "user", content: "go" }]);
    expect(run.seen).toEqual([
      "run_start",
      "turn_start",
      "tool_start:s1",
      "tool_end:s1",
      "turn_end",
    ]);
    expect(run.events.at(-2)).toMatchObject({
      type: "tool_end",
      isError: true,
      details: { reason: "aborted" },
    });
    expect(requests).toHaveLength(1);
  });
});
