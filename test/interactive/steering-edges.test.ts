/**
 * Steering at the edges (design/interactive.md, "Steering and follow-ups" and "Decided after the
 * first implementation"): the handle of `resumeStream()` and of `query()`, a stream given its own
 * `Steering` (both feed the one run), an agent tool's child run (it finishes as it would), a
 * steering message after an invalid `output` answer, concurrent calls, a message queued while the
 * model streams, and follow-ups (they interrupt nothing).
 */
import {
  type AgentRun,
  agentTool,
  createBareAgent,
  createSteering,
  defineTool,
  query,
  type SDKResultMessage,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { expectValidTranscript } from "../support/results.ts";
import { collect, detailsOf, ofType, textOf, userText, workTool } from "./helpers.ts";

const STEER = "Stop: use the staging database instead.";

describe("the handles", () => {
  it("a stream given options.steering: the handle and the Steering feed the same run, in order", async () => {
    const steering = createSteering();
    let run!: AgentRun;
    const work = workTool({
      during: () => {
        steering.steer("from the Steering");
        run.steer("from the handle");
      },
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "work", input: { n: 1 } }] },
      { text: "ok" },
    ]);
    run = createBareAgent({ model, tools: [work.tool] }).stream("go", { steering });
    const { result } = await collect(run);
    expect(result.steps[0]!.userMessages!.map((entry) => entry.message)).toEqual([
      userText("from the Steering"),
      userText("from the handle"),
    ]);
  });

  it("resumeStream()'s handle steers the resumed run: its queued calls are interrupted", async () => {
    const external = defineTool({
      id: "ask_app",
      parameters: { type: "object", properties: {} },
      execute: false,
    });
    let resumed!: AgentRun;
    const work = workTool({ during: (n) => (n === 1 ? resumed.steer("Enough.") : undefined) });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "e1", name: "ask_app", input: {} },
          { id: "c1", name: "work", input: { n: 1 } },
          { id: "c2", name: "work", input: { n: 2 } },
        ],
      },
    ]);
    const tools = [external, work.tool];
    // The run pauses with all three waiting: e1 for the app, c1 and c2 for approval.
    const paused = await createBareAgent({
      model,
      tools,
      permissions: { ask: ["work"] },
    }).run("go");
    expect(paused.subtype).toBe("paused");
    const next = scriptedModel([{ text: "Stopped." }]);
    resumed = createBareAgent({ model: next, tools, permissions: { ask: ["work"] } }).resumeStream(
      paused.state!,
      { toolOutputs: { e1: "ok" }, approvals: { c1: true, c2: true } },
    );
    const { result } = await collect(resumed);
    expect(work.log).toEqual(["start:1", "end:1"]);
    expect(detailsOf(result, "c2").code).toBe("interrupted");
    expect(next.requests[0]!.messages.at(-1)).toEqual(userText("Enough."));
    expectValidTranscript(next.requests[0]!.messages);
  });

  it("query()'s handle and QueryOptions.steering", async () => {
    const steering = createSteering();
    steering.steer("Be brief.");
    const model = scriptedModel([{ text: "Brief." }, { text: "Briefer." }]);
    const run = query({ prompt: "Explain.", model, steering });
    run.followUp("Even briefer.");
    const { events, result } = await collect(run);
    expect(ofType(events, "user_message").map((event) => textOf(event.message))).toEqual([
      "Be brief.",
      "Even briefer.",
    ]);
    expect(result.result).toBe("Briefer.");
  });
});

describe("an agent tool's child run", () => {
  it("finishes as it would; the parent's queued calls are interrupted, then its model sees the message", async () => {
    let parentRun!: AgentRun;
    const childWork = workTool({
      name: "child_work",
      during: (n) => (n === 1 ? parentRun.steer("Change of plan.") : undefined),
    });
    const childModel = scriptedModel([
      {
        toolCalls: [
          { id: "k1", name: "child_work", input: { n: 1 } },
          { id: "k2", name: "child_work", input: { n: 2 } },
        ],
      },
      { text: "child done" },
    ]);
    const child = createBareAgent({ id: "helper", model: childModel, tools: [childWork.tool] });
    const parentWork = workTool();
    const parentModel = scriptedModel([
      {
        toolCalls: [
          { id: "a1", name: "helper", input: { prompt: "help" } },
          { id: "p2", name: "work", input: { n: 9 } },
        ],
      },
      { text: "Plan changed." },
    ]);
    parentRun = createBareAgent({
      model: parentModel,
      tools: [agentTool(child, { description: "A helper" }), parentWork.tool],
    }).stream("go");
    const { result, events } = await collect(parentRun);
    expect(childWork.log).toEqual(["start:1", "end:1", "start:2", "end:2"]);
    expect(childModel.requests).toHaveLength(2);
    expect(parentWork.log).toEqual([]);
    expect(detailsOf(result, "a1").code).toBeUndefined();
    expect(detailsOf(result, "p2").code).toBe("interrupted");
    expect(parentModel.requests[1]!.messages.at(-1)).toEqual(userText("Change of plan."));
    // The user_message is the parent's own event.
    const delivered = ofType(events, "user_message");
    expect(delivered).toHaveLength(1);
    expect(delivered[0]!.parentCallId).toBeUndefined();
  });
});

describe("with output", () => {
  it("a steering message after an invalid answer follows the errors, before the next call", async () => {
    const steering = createSteering();
    const model = scriptedModel((_, index) => {
      if (index === 0) {
        steering.steer("The capital, please.");
        return { text: "Somewhere nice." };
      }
      return { toolCalls: [{ id: "f1", name: "final_output", input: { city: "Paris" } }] };
    });
    const result = await createBareAgent({
      model,
      output: z.object({ city: z.string() }),
    }).run("Which city?", { steering });
    expect(result.structuredResult).toEqual({ city: "Paris" });
    const sent = model.requests[1]!.messages;
    expect(textOf(sent.at(-2))).toContain("final_output");
    expect(sent.at(-1)).toEqual(userText("The capital, please."));
  });
});

describe("interrupts", () => {
  it("concurrent calls already running finish; a call held back by maxConcurrency is interrupted", async () => {
    let run!: AgentRun;
    const work = workTool({ safe: true, during: (n) => (n === 2 ? run.steer(STEER) : undefined) });
    const model = scriptedModel([
      {
        toolCalls: [1, 2, 3].map((n) => ({ id: `c${n}`, name: "work", input: { n } })),
      },
      { text: "ok" },
    ]);
    const agent = createBareAgent({
      model,
      tools: [work.tool],
      toolConcurrency: { mode: "all", maxConcurrency: 2 },
    });
    run = agent.stream("go");
    const { result } = await collect(run);
    expect(work.log.filter((entry) => entry.startsWith("start")).sort()).toEqual([
      "start:1",
      "start:2",
    ]);
    expect(work.log.filter((entry) => entry.startsWith("end")).sort()).toEqual(["end:1", "end:2"]);
    expect(result.steps[0]!.toolCalls.map((call) => call.isError)).toEqual([false, false, true]);
    expect(detailsOf(result, "c3").code).toBe("interrupted");
  });

  it("a message queued while the model streams its calls: none of them starts", async () => {
    const steering = createSteering();
    const work = workTool();
    const model = scriptedModel((_, index) => {
      if (index === 0) {
        steering.steer(STEER);
        return {
          toolCalls: [
            { id: "c1", name: "work", input: { n: 1 } },
            { id: "c2", name: "work", input: { n: 2 } },
          ],
        };
      }
      return { text: "ok" };
    });
    const agent = createBareAgent({ model, tools: [work.tool] });
    const result = await agent.run("go", { steering });
    expect(work.log).toEqual([]);
    expect(result.steps[0]!.toolCalls.map((call) => detailsOf(result, call.callId).code)).toEqual([
      "interrupted",
      "interrupted",
    ]);
    expect(model.requests[1]!.messages.at(-1)).toEqual(userText(STEER));
    expectValidTranscript(model.requests[1]!.messages);
  });

  it("a follow-up interrupts nothing and is never delivered mid-batch", async () => {
    let run!: AgentRun;
    const work = workTool({
      during: (n) => (n === 1 ? run.followUp("And then tidy up.") : undefined),
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "c1", name: "work", input: { n: 1 } },
          { id: "c2", name: "work", input: { n: 2 } },
        ],
      },
      { text: "Migrated." },
      { text: "Tidied up." },
    ]);
    run = createBareAgent({ model, tools: [work.tool] }).stream("go");
    const { events, result } = await collect(run);
    expect(work.log).toEqual(["start:1", "end:1", "start:2", "end:2"]);
    // The request after the batch ends with the results: the follow-up is not there yet.
    expect(model.requests[1]!.messages.at(-1)!.role).toBe("user");
    expect(ofType(events, "user_message").map((event) => event.turn)).toEqual([2]);
    expect(model.requests[2]!.messages.at(-1)).toEqual(userText("And then tidy up."));
    expect(result.result).toBe("Tidied up.");
  });
});

describe("steering and agent tools", () => {
  it("an agent tool call of the batch that has not started is interrupted, not run", async () => {
    const childModel = scriptedModel([{ text: "child answer" }]);
    const child = createBareAgent({ id: "child", model: childModel });
    let run!: AgentRun;
    const first = tool("first", "Runs first", z.object({}), async () => {
      run.steer("stop, do something else");
      return "first done";
    });
    const parent = createBareAgent({
      model: scriptedModel([
        {
          toolCalls: [
            { id: "a", name: "first", input: {} },
            { id: "b", name: "child", input: { prompt: "go" } },
          ],
        },
        { text: "ok" },
      ]),
      tools: [first, agentTool(child, { description: "A child" })],
      toolConcurrency: { mode: "sequential" },
    });
    run = parent.stream("go");
    let result: SDKResultMessage | undefined;
    for await (const event of run) if (event.type === "result") result = event;
    const answered = result!.steps[0]!.toolCalls;
    expect(answered[0]!.result.content).toBe("first done");
    expect(answered[1]!.result.details).toMatchObject({ code: "interrupted" });
    expect(childModel.requests).toHaveLength(0);
  });
});
