/**
 * Steering and follow-ups across a run's life (design/interactive.md, "Steering and follow-ups"):
 * messages refused once the result is decided (`RunEndedError`), a `Steering` for one run only,
 * bad messages refused at once, queued messages carried in a paused state (plain JSON) and
 * delivered by the resumed run after its batch, a failed run's `undelivered`, and the calls a
 * steering message interrupts or leaves waiting.
 */
import {
  AbortError,
  type AgentRun,
  ConfigurationError,
  createBareAgent,
  createSteering,
  defineTool,
  RunEndedError,
  type RunState,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { rejectionOf } from "../support/promises.ts";
import { expectValidTranscript, resultFor, resultText } from "../support/results.ts";
import { collect, detailsOf, ofType, trace, userText, workTool } from "./helpers.ts";

const ended = (subtype: string, method = "steer") =>
  `${method}(): the run has ended (${subtype}); start a new run, or resume its state with a new Steering.`;

function thrown(action: () => void): Error {
  try {
    action();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a throw");
}

describe("once the run has ended", () => {
  it("steer and followUp on the stream's handle throw RunEndedError after the result event", async () => {
    const model = scriptedModel([{ text: "Done." }]);
    const run = createBareAgent({ model }).stream("go");
    const { result } = await collect(run);
    expect(result.subtype).toBe("success");
    const error = thrown(() => run.steer("too late"));
    expect(error).toBeInstanceOf(RunEndedError);
    expect(error.name).toBe("RunEndedError");
    expect(error.message).toBe(ended("success"));
    expect(thrown(() => run.followUp("too late")).message).toBe(ended("success", "followUp"));
  });

  it("on a createSteering() queue after run() resolves, for every subtype (failed, paused, max turns)", async () => {
    const failing = createSteering();
    await createBareAgent({ model: scriptedModel([new Error("boom")]) }).run("go", {
      steering: failing,
    });
    expect(thrown(() => failing.steer("x")).message).toBe(ended("error_during_execution"));

    const paused = createSteering();
    const external = defineTool({
      id: "external",
      parameters: { type: "object", properties: {} },
      execute: false,
    });
    const pausedModel = scriptedModel([{ toolCalls: [{ id: "e1", name: "external", input: {} }] }]);
    const result = await createBareAgent({ model: pausedModel, tools: [external] }).run("go", {
      steering: paused,
    });
    expect(result.subtype).toBe("paused");
    expect(thrown(() => paused.followUp("x")).message).toBe(ended("paused", "followUp"));

    const capped = createSteering();
    const work = workTool();
    const loopModel = scriptedModel([{ toolCalls: [{ id: "c1", name: "work", input: { n: 1 } }] }]);
    await createBareAgent({ model: loopModel, tools: [work.tool], maxTurns: 1 }).run("go", {
      steering: capped,
    });
    expect(thrown(() => capped.steer("x")).message).toBe(ended("error_max_turns"));
  });

  it("after an abort: RunEndedError naming the abort", async () => {
    const controller = new AbortController();
    const steering = createSteering();
    const model = scriptedModel(() => {
      controller.abort();
      return new Promise(() => {});
    });
    const error = await rejectionOf(
      createBareAgent({ model }).run("go", { steering, signal: controller.signal }),
    );
    expect(error).toBeInstanceOf(AbortError);
    const refused = thrown(() => steering.steer("x"));
    expect(refused).toBeInstanceOf(RunEndedError);
    expect(refused.message).toBe(ended("aborted"));
  });
});

describe("one Steering, one run", () => {
  it("a Steering that served a run is refused by run, stream and resume with ConfigurationError", async () => {
    const steering = createSteering();
    const agent = createBareAgent({ model: scriptedModel([{ text: "a" }, { text: "b" }]) });
    await agent.run("first", { steering });
    const byRun = await rejectionOf(agent.run("second", { steering }));
    expect(byRun).toBeInstanceOf(ConfigurationError);
    expect(byRun.message).toMatch(/steering/i);
    expect(() => agent.stream("second", { steering })).toThrow(ConfigurationError);
    const state: RunState = {
      version: 1,
      sessionId: "s",
      numTurns: 0,
      usage: {
        inputTokens: 0,
        outputTokens: 0,
        cacheReadInputTokens: 0,
        cacheCreationInputTokens: 0,
      },
      messages: [{ role: "user", content: "hi" }],
      steps: [],
    };
    await expect(agent.resume(state, { steering })).rejects.toBeInstanceOf(ConfigurationError);
  });

  it("a Steering already serving a running run is refused too", async () => {
    const steering = createSteering();
    let second: unknown;
    const agent = createBareAgent({
      model: scriptedModel(async () => {
        second = await agent.run("again", { steering }).catch((error: unknown) => error);
        return { text: "done" };
      }),
    });
    await agent.run("first", { steering });
    expect(second).toBeInstanceOf(ConfigurationError);
  });

  it("a steering object skein did not make is refused", async () => {
    const agent = createBareAgent({ model: scriptedModel([{ text: "a" }]) });
    const fake = { steer() {}, followUp() {} };
    const error = await rejectionOf(agent.run("go", { steering: fake }));
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error.message).toContain("createSteering()");
  });

  it("a message that is not a Prompt throws ConfigurationError at once, and queues nothing", async () => {
    const steering = createSteering();
    const error = thrown(() => steering.steer(42 as never));
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error.message).toBe(
      "steer(message): the message must be a string or an array of content blocks, received 42.",
    );
    expect(thrown(() => steering.followUp(42 as never)).message).toBe(
      "followUp(message): the message must be a string or an array of content blocks, received 42.",
    );
    const run = createBareAgent({ model: scriptedModel([{ text: "ok" }]) }).stream("go", {
      steering,
    });
    expect(thrown(() => run.steer({ text: "hi" } as never)).message).toBe(
      "steer(message): the message must be a string or an array of content blocks, received an object.",
    );
    const { events } = await collect(run);
    expect(ofType(events, "user_message")).toEqual([]);
  });
});

describe("queued messages survive pause and resume", () => {
  const external = defineTool({
    id: "ask_app",
    parameters: { type: "object", properties: {} },
    execute: false,
  });

  async function pausedWithQueue() {
    let run!: AgentRun;
    const work = workTool({
      during: () => {
        run.steer("Steer after the pause.");
        run.followUp("Follow up at the end.");
      },
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "c1", name: "work", input: { n: 1 } },
          { id: "e1", name: "ask_app", input: {} },
        ],
      },
    ]);
    run = createBareAgent({ model, tools: [work.tool, external] }).stream("go");
    const { result } = await collect(run);
    return { result, work };
  }

  it("a call waiting for the app keeps waiting; the queue is in state.queued, as JSON", async () => {
    const { result } = await pausedWithQueue();
    expect(result.subtype).toBe("paused");
    expect(result.pending?.map((call) => [call.id, call.reason])).toEqual([["e1", "external"]]);
    const state = result.state!;
    expect(state.queued).toEqual([
      { origin: "steer", message: userText("Steer after the pause.") },
      { origin: "follow_up", message: userText("Follow up at the end.") },
    ]);
    expect(JSON.parse(JSON.stringify(state))).toEqual(state);
  });

  it("the resumed run delivers them after the resumed batch: steering first, the follow-up at the end", async () => {
    const { result, work } = await pausedWithQueue();
    const state = JSON.parse(JSON.stringify(result.state)) as RunState;
    const model = scriptedModel([{ text: "Steered." }, { text: "Followed up." }]);
    const resumed = createBareAgent({ model, tools: [work.tool, external] }).resumeStream(state, {
      toolOutputs: { e1: "the app's answer" },
    });
    const { events, result: end } = await collect(resumed);
    expect(trace(events)).toEqual([
      "run_start",
      "turn_start:1",
      "tool_end:e1",
      "turn_end:1",
      "user_message:steer:1",
      "turn_start:2",
      "message",
      "turn_end:2",
      "user_message:follow_up:2",
      "turn_start:3",
      "message",
      "turn_end:3",
      "result",
    ]);
    const first = model.requests[0]!.messages;
    expectValidTranscript(first);
    expect(resultText(resultFor(first, "e1"))).toBe("the app's answer");
    expect(first.at(-1)).toEqual(userText("Steer after the pause."));
    expect(model.requests[1]!.messages.at(-1)).toEqual(userText("Follow up at the end."));
    expect(end.result).toBe("Followed up.");
    expect(work.log).toEqual(["start:1", "end:1"]);
  });

  it("a resumed run with a new Steering: what the state carried goes first", async () => {
    const { result, work } = await pausedWithQueue();
    const steering = createSteering();
    steering.steer("New message.");
    const model = scriptedModel([{ text: "ok" }, { text: "done" }]);
    await createBareAgent({ model, tools: [work.tool, external] }).resume(result.state!, {
      toolOutputs: { e1: "x" },
      steering,
    });
    expect(model.requests[0]!.messages.slice(-2)).toEqual([
      userText("Steer after the pause."),
      userText("New message."),
    ]);
  });

  it("a run stopped at maxTurns carries its queue; resumed, the message comes before the next call", async () => {
    const steering = createSteering();
    const work = workTool({ during: () => steering.steer("Keep going, but carefully.") });
    const model = scriptedModel([{ toolCalls: [{ id: "c1", name: "work", input: { n: 1 } }] }]);
    const capped = await createBareAgent({ model, tools: [work.tool], maxTurns: 1 }).run("go", {
      steering,
    });
    expect(capped.subtype).toBe("error_max_turns");
    expect(capped.state!.queued).toEqual([
      { origin: "steer", message: userText("Keep going, but carefully.") },
    ]);
    const next = scriptedModel([{ text: "Carefully done." }]);
    const resumed = await createBareAgent({ model: next, tools: [work.tool], maxTurns: 5 }).resume(
      JSON.parse(JSON.stringify(capped.state)),
    );
    expect(resumed.subtype).toBe("success");
    expect(next.requests[0]!.messages.at(-1)).toEqual(userText("Keep going, but carefully."));
  });
});

describe("a failed run", () => {
  it("lists the follow-ups it never delivered in result.undelivered", async () => {
    const steering = createSteering();
    steering.followUp("Then deploy.");
    const model = scriptedModel([new Error("the model is down")]);
    const result = await createBareAgent({ model }).run("go", { steering });
    expect(result.subtype).toBe("error_during_execution");
    expect(result.undelivered).toEqual([
      { origin: "follow_up", message: userText("Then deploy.") },
    ]);
  });

  it("has no undelivered when everything was delivered", async () => {
    const steering = createSteering();
    steering.steer("Hi.");
    const model = scriptedModel([new Error("down")]);
    const result = await createBareAgent({ model }).run("go", { steering });
    expect(result.subtype).toBe("error_during_execution");
    expect(result.messages.at(-1)).toEqual(userText("Hi."));
    expect(result.undelivered).toBeUndefined();
  });
});

describe("calls waiting for approval", () => {
  it("are interrupted by a steering message, as queued calls are (the run does not pause)", async () => {
    let run!: AgentRun;
    const work = workTool({
      during: (n) => (n === 1 ? run.steer("Never mind the deploy.") : undefined),
    });
    const deploy = workTool({ name: "deploy" });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "c1", name: "work", input: { n: 1 } },
          { id: "d1", name: "deploy", input: { n: 2 } },
        ],
      },
      { text: "Not deploying." },
    ]);
    const agent = createBareAgent({
      model,
      tools: [work.tool, deploy.tool],
      permissions: { ask: ["deploy"] },
    });
    run = agent.stream("go");
    const { result } = await collect(run);
    expect(result.subtype).toBe("success");
    expect(deploy.log).toEqual([]);
    expect(detailsOf(result, "d1").code).toBe("interrupted");
    expect(model.requests[1]!.messages.at(-1)).toEqual(userText("Never mind the deploy."));
  });
});
