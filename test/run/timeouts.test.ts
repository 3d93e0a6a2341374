import { createBareAgent, defineTool, ToolTimeoutError, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { deferred } from "../support/promises.ts";
import { expectValidTranscript, resultText, toolResultsOf } from "../support/results.ts";
import { collect, drain, labels } from "./helpers.ts";

/** A handler that ignores its signal and settles only when the test says so (B2). */
function stubborn() {
  const late = deferred<string>();
  const handler = async () => late.promise;
  return { late, handler };
}

describe('tool() timeouts: timeoutBehavior "error_result" by default', () => {
  it("answers with an error result naming the tool and the milliseconds, and the run continues", async () => {
    const { late, handler } = stubborn();
    const slow = tool("slow_lookup", "Slow", z.object({}), handler, { timeoutMs: 25 });
    const model = scriptedModel([
      { toolCalls: [{ id: "s", name: "slow_lookup", input: {} }] },
      { text: "recovered" },
    ]);
    const result = await createBareAgent({ model, tools: [slow] }).run("go");
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("recovered");
    const [block] = toolResultsOf(model.requests[1]!.messages.at(-1));
    expect(block!.is_error).toBe(true);
    expect(resultText(block)).toContain("slow_lookup");
    expect(resultText(block)).toContain("25 ms");
    expect(result.steps[0]!.toolCalls[0]!.result.details).toEqual({
      reason: "timeout",
      timeoutMs: 25,
    });
    late.resolve("too late");
  });

  it("drops the late result of a handler that ignored its signal (B2): nothing is appended after the run", async () => {
    const { late, handler } = stubborn();
    let context: { update(partial: unknown): void } | undefined;
    const slow = tool(
      "slow",
      "Slow",
      z.object({}),
      async (_input, ctx) => {
        context = ctx;
        return handler();
      },
      { timeoutMs: 25 },
    );
    const model = scriptedModel([
      { toolCalls: [{ id: "s", name: "slow", input: {} }] },
      { text: "moved on" },
    ]);
    const { events, result } = await collect(
      createBareAgent({ model, tools: [slow] }).stream("go"),
    );
    const before = JSON.stringify(result.messages);
    late.resolve("LATE RESULT");
    context!.update("late progress");
    await drain();
    expect(JSON.stringify(result.messages)).toBe(before);
    expect(before).not.toContain("LATE RESULT");
    expect(labels(events).filter((entry) => entry.startsWith("tool_"))).toEqual([
      "tool_start:s",
      "tool_end:s",
    ]);
    expect(result.steps[0]!.toolCalls[0]!.preliminaryResults).toEqual([]);
  });

  it("tells a timeout from a user abort through ctx.signal.reason (B3)", async () => {
    const reasons: unknown[] = [];
    const aborted = deferred();
    const honest = tool(
      "honest",
      "Honours its signal",
      z.object({}),
      (_input, ctx) =>
        new Promise<string>((_, reject) => {
          ctx.signal.addEventListener("abort", () => {
            reasons.push(ctx.signal.reason);
            aborted.resolve();
            reject(ctx.signal.reason);
          });
        }),
      { timeoutMs: 25 },
    );
    const timedOut = await createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "t", name: "honest", input: {} }] },
        { text: "ok" },
      ]),
      tools: [honest],
    }).run("go");
    expect(timedOut.subtype).toBe("success");
    const [timeoutBlock] = toolResultsOf(timedOut.messages[2]);
    expect(resultText(timeoutBlock)).toMatch(/timed out/);

    const controller = new AbortController();
    const userReason = new Error("user pressed stop");
    const started = deferred();
    const withAbort = tool(
      "honest",
      "Honours its signal",
      z.object({}),
      (_input, ctx) => {
        started.resolve();
        return new Promise<string>((_, reject) => {
          ctx.signal.addEventListener("abort", () => {
            reasons.push(ctx.signal.reason);
            reject(ctx.signal.reason);
          });
        });
      },
      { timeoutMs: 10_000 },
    );
    const run = createBareAgent({
      model: scriptedModel([{ toolCalls: [{ id: "u", name: "honest", input: {} }] }]),
      tools: [withAbort],
    }).run("go", { signal: controller.signal });
    await started.promise;
    controller.abort(userReason);
    const error = (await run.catch((thrown: unknown) => thrown)) as Error;
    expect(error.name).toBe("AbortError");

    expect(reasons).toHaveLength(2);
    expect(reasons[0]).toBeInstanceOf(ToolTimeoutError);
    expect((reasons[0] as Error).name).toBe("ToolTimeoutError");
    expect(reasons[1]).toBe(userReason);
  });
});

describe('defineTool() timeouts: timeoutBehavior "fail_run" by default', () => {
  it("resolves (does not throw) as error_during_execution with ToolTimeoutError; the batch's other calls settle and are recorded", async () => {
    const late = deferred<string>();
    const timeoutFired = deferred();
    const fetchTicket = defineTool({
      id: "fetch-ticket",
      timeoutMs: 25,
      execute(_input, context) {
        context.signal.addEventListener("abort", () => timeoutFired.resolve());
        return late.promise; // ignores its signal
      },
    });
    const otherMayFinish = deferred();
    const other = defineTool({
      id: "other",
      async execute() {
        await otherMayFinish.promise;
        return { other: "done" };
      },
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "t", name: "fetch-ticket", input: {} },
          { id: "o", name: "other", input: {} },
        ],
      },
      { text: "never asked" },
    ]);
    const run = createBareAgent({
      model,
      tools: [fetchTicket, other],
      toolConcurrency: { mode: "all" },
    }).run("go");
    // The other call finishes only after the timeout fired: it must still be recorded.
    await timeoutFired.promise;
    otherMayFinish.resolve();
    const result = await run;
    expect(result.subtype).toBe("error_during_execution");
    expect(result.isError).toBe(true);
    expect(result.error!.name).toBe("ToolTimeoutError");
    expect(result.error!.message).toContain("fetch-ticket");
    expect(model.requests).toHaveLength(1);
    expectValidTranscript(result.messages);
    const blocks = toolResultsOf(result.messages.at(-1));
    expect(blocks.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ["t", true],
      ["o", false],
    ]);
    expect(resultText(blocks[0])).toContain("25 ms");
    expect(resultText(blocks[1])).toBe('{"other":"done"}');
    expect(result.steps[0]!.toolCalls.map((call) => call.isError)).toEqual([true, false]);
    late.resolve("late");
  });

  it("can be switched to error_result", async () => {
    const { late, handler } = stubborn();
    const lenient = defineTool({
      id: "lenient",
      timeoutMs: 20,
      timeoutBehavior: "error_result",
      execute: handler,
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "l", name: "lenient", input: {} }] },
      { text: "fine" },
    ]);
    const result = await createBareAgent({ model, tools: [lenient] }).run("go");
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("fine");
    late.resolve("late");
  });

  it("and tool() can be switched to fail_run", async () => {
    const { late, handler } = stubborn();
    const strict = tool("strict", "Strict", z.object({}), handler, {
      timeoutMs: 20,
      timeoutBehavior: "fail_run",
    });
    const model = scriptedModel([{ toolCalls: [{ id: "s", name: "strict", input: {} }] }]);
    const result = await createBareAgent({ model, tools: [strict] }).run("go");
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error).toMatchObject({ name: "ToolTimeoutError" });
    late.resolve("late");
  });
});
