// Aborts reach the child (design/agents.md, "Abort"): the parent's signal, breaking out of
// stream(), and the agent tool's own timeoutMs. The child's handlers see the signal, it makes no
// further model call, and what it spent is not lost.
import { AbortError, agentTool, createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { rejectionOf, sleep } from "../support/promises.ts";
import { expectValidTranscript, resultFor, resultText } from "../support/results.ts";
import { detailsOf, parentOf, tokens, turn, waitingTool } from "./helpers.ts";

/** parent --p1--> child, whose first turn calls `wait` (which waits for the abort). */
function setup(toolOptions: { timeoutMs?: number } = {}) {
  const wait = waitingTool();
  const childModel = scriptedModel([
    turn({ toolCalls: [{ id: "w1", name: "wait", input: {} }] }, 7, 2),
    { text: "child never gets here" },
  ]);
  const child = createBareAgent({ id: "child", model: childModel, tools: [wait.tool] });
  const model = scriptedModel([
    turn({ toolCalls: [{ id: "p1", name: "child", input: { prompt: "work" } }] }, 5, 1),
    { text: "parent goes on" },
  ]);
  const parent = createBareAgent({
    model,
    tools: [agentTool(child, { description: "Works", ...toolOptions })],
  });
  return { parent, model, childModel, wait };
}

describe("aborting the parent's run", () => {
  it("aborts the child: its handler sees the signal, no further child model call, AbortError", async () => {
    const { parent, model, childModel, wait } = setup();
    const controller = new AbortController();
    const run = parent.run("go", { signal: controller.signal });
    await wait.started.promise;
    controller.abort(new Error("user pressed stop"));
    const error = await rejectionOf(run);
    expect(error).toBeInstanceOf(AbortError);
    expect(wait.state.aborted).toBe(true);
    expect(childModel.requests).toHaveLength(1);
    expect(model.requests).toHaveLength(1);
    const abort = error as AbortError;
    expectValidTranscript(abort.messages);
    const block = resultFor(abort.messages, "p1");
    expect(block.is_error).toBe(true);
    expect(resultText(block)).toMatch(/cancelled/);
  });

  it("the AbortError's totalUsage includes what the child spent; usage stays the parent's own", async () => {
    const { parent, wait } = setup();
    const controller = new AbortController();
    const run = parent.run("go", { signal: controller.signal });
    await wait.started.promise;
    controller.abort();
    const error = (await rejectionOf(run)) as AbortError;
    expect(error.usage).toEqual(tokens(5, 1));
    expect(error.totalUsage).toEqual(tokens(12, 3));
  });

  it("a signal already aborted before the call starts no child at all", async () => {
    const { parent, childModel } = setup();
    const controller = new AbortController();
    controller.abort();
    await rejectionOf(parent.run("go", { signal: controller.signal }));
    expect(childModel.requests).toHaveLength(0);
  });
});

describe("breaking out of stream()", () => {
  it("aborts the child the same way, and the loop exits after the child settled", async () => {
    const { parent, model, childModel, wait } = setup();
    const trace: string[] = [];
    wait.sawAbort.promise.then(() => trace.push("child saw abort"));
    for await (const event of parent.stream("go")) {
      if (event.type === "tool_start" && parentOf(event) === "p1") {
        await wait.started.promise;
        break;
      }
    }
    trace.push("loop exited");
    expect(wait.state.aborted).toBe(true);
    expect(trace).toEqual(["child saw abort", "loop exited"]);
    expect(childModel.requests).toHaveLength(1);
    expect(model.requests).toHaveLength(1);
  });
});

describe("the agent tool's timeoutMs", () => {
  it("answers the call with a timeout error, aborts the child, and the parent goes on", async () => {
    const { parent, model, childModel, wait } = setup({ timeoutMs: 30 });
    const result = await parent.run("go");
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("parent goes on");
    const block = resultFor(result.messages, "p1");
    expect(block.is_error).toBe(true);
    expect(resultText(block)).toMatch(/timed out after 30 ms/);
    expect(detailsOf(result, "p1")).toMatchObject({ reason: "timeout" });
    await wait.sawAbort.promise;
    expect(wait.state.aborted).toBe(true);
    expect(childModel.requests).toHaveLength(1);
    expect(model.requests).toHaveLength(2);
  });

  it("what the timed-out child spent still counts in the parent's totalUsage", async () => {
    const { parent, wait } = setup({ timeoutMs: 30 });
    const result = await parent.run("go");
    await wait.sawAbort.promise;
    expect(result.usage).toEqual(tokens(5, 1));
    expect(result.totalUsage).toEqual(tokens(12, 3));
  });
});

describe("a timed-out child that takes a while to settle", () => {
  it("its model usage, spent before the timeout, still counts in the parent's totalUsage", async () => {
    const lingering = tool("wait", "Waits", z.object({}), async (_input, ctx) => {
      await new Promise<void>((resolve) =>
        ctx.signal.addEventListener("abort", () => resolve(), { once: true }),
      );
      // Cleaning up after the abort takes a little while.
      await sleep(60);
      throw ctx.signal.reason;
    });
    const childModel = scriptedModel([
      turn({ toolCalls: [{ id: "w1", name: "wait", input: {} }] }, 7, 2),
    ]);
    const child = createBareAgent({ id: "child", model: childModel, tools: [lingering] });
    const model = scriptedModel([
      turn({ toolCalls: [{ id: "p1", name: "child", input: { prompt: "work" } }] }, 5, 1),
      { text: "parent goes on" },
    ]);
    const parent = createBareAgent({
      model,
      tools: [agentTool(child, { description: "Works", timeoutMs: 20 })],
    });
    const result = await parent.run("go");
    expect(resultFor(result.messages, "p1").is_error).toBe(true);
    expect(result.totalUsage).toEqual(tokens(12, 3));
  });
});

describe("two levels down", () => {
  it("aborting the root reaches the grandchild's handler; the AbortError counts every level's usage", async () => {
    const wait = waitingTool();
    const grandchildModel = scriptedModel([
      turn({ toolCalls: [{ id: "g1", name: "wait", input: {} }] }, 100, 10),
    ]);
    const grandchild = createBareAgent({
      id: "grandchild",
      model: grandchildModel,
      tools: [wait.tool],
    });
    const childModel = scriptedModel([
      turn({ toolCalls: [{ id: "c1", name: "grandchild", input: { prompt: "x" } }] }, 20, 2),
    ]);
    const child = createBareAgent({
      id: "child",
      model: childModel,
      tools: [agentTool(grandchild, { description: "G" })],
    });
    const model = scriptedModel([
      turn({ toolCalls: [{ id: "p1", name: "child", input: { prompt: "y" } }] }, 3, 1),
    ]);
    const parent = createBareAgent({ model, tools: [agentTool(child, { description: "C" })] });
    const controller = new AbortController();
    const run = parent.run("go", { signal: controller.signal });
    await wait.started.promise;
    controller.abort();
    const error = (await rejectionOf(run)) as AbortError;
    expect(error).toBeInstanceOf(AbortError);
    expect(wait.state.aborted).toBe(true);
    expect([model, childModel, grandchildModel].map((m) => m.requests.length)).toEqual([1, 1, 1]);
    expect(error.totalUsage).toEqual(tokens(123, 13));
  });
});
