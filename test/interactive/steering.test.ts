/**
 * Steering and follow-ups, delivery (design/interactive.md, "Steering and follow-ups"): a
 * steering message interrupts the calls of the batch whose handler has not started (every
 * tool_use is still answered), running calls finish, then the model sees the message; follow-ups
 * wait for the run to end with success; each delivered message is its own user message, a
 * `user_message` event after the turn's `turn_end`, and an entry of the step's `userMessages`.
 */
import { type AgentRun, createBareAgent, createSteering } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { expectValidTranscript, resultFor, resultText } from "../support/results.ts";
import { collect, detailsOf, ofType, trace, userText, workTool } from "./helpers.ts";

const STEER = "Stop: use the staging database instead.";

describe("steering mid-batch: one call running, one queued", () => {
  async function steeredMidBatch() {
    let run!: AgentRun;
    // The first call's handler steers while it runs; the second call (not concurrency-safe) is queued.
    const work = workTool({ during: (n) => (n === 1 ? run.steer(STEER) : undefined) });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "c1", name: "work", input: { n: 1 } },
          { id: "c2", name: "work", input: { n: 2 } },
        ],
      },
      { text: "Switched to staging." },
    ]);
    run = createBareAgent({ model, tools: [work.tool] }).stream("Migrate the database.");
    const { events, result } = await collect(run);
    return { events, result, model, log: work.log };
  }

  it("the running call finishes normally; the queued one never starts and is answered interrupted", async () => {
    const { result, log } = await steeredMidBatch();
    expect(log).toEqual(["start:1", "end:1"]);
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("Switched to staging.");
    const done = resultFor(result.messages, "c1");
    expect(done.is_error).toBeFalsy();
    expect(resultText(done)).toBe("work 1 done");
    const interrupted = resultFor(result.messages, "c2");
    expect(interrupted.is_error).toBe(true);
    expect(resultText(interrupted)).toContain("interrupted");
    expect(detailsOf(result, "c2").code).toBe("interrupted");
    expect(result.steps[0]!.toolCalls.map((call) => [call.callId, call.isError])).toEqual([
      ["c1", false],
      ["c2", true],
    ]);
  });

  it("the interrupted call gets its tool_start and tool_end like any call that never ran", async () => {
    const { events } = await steeredMidBatch();
    const ends = ofType(events, "tool_end");
    expect(ends.map((end) => [end.callId, end.isError])).toEqual([
      ["c1", false],
      ["c2", true],
    ]);
    expect((ends[1]!.details as { code?: string }).code).toBe("interrupted");
    expect(ofType(events, "tool_start").map((start) => start.callId)).toEqual(["c1", "c2"]);
  });

  it("every tool_use is answered, then the model sees the message as its own user message", async () => {
    const { model, result } = await steeredMidBatch();
    expect(model.requests).toHaveLength(2);
    const sent = model.requests[1]!.messages;
    expectValidTranscript(sent);
    expect(sent.map((message) => message.role)).toEqual(["user", "assistant", "user", "user"]);
    expect(sent.at(-2)!.content).toHaveLength(2);
    expect(sent.at(-1)).toEqual(userText(STEER));
    expectValidTranscript(result.messages);
    expect(result.messages.slice(0, 4)).toEqual(sent);
  });

  it("user_message (origin steer, turn 1) comes after turn 1's turn_end and before turn 2's turn_start", async () => {
    const { events, result } = await steeredMidBatch();
    expect(trace(events)).toEqual([
      "run_start",
      "turn_start:1",
      "tool_start:c1",
      "tool_start:c2",
      "message",
      "tool_end:c1",
      "tool_end:c2",
      "turn_end:1",
      "user_message:steer:1",
      "turn_start:2",
      "message",
      "turn_end:2",
      "result",
    ]);
    const [delivered] = ofType(events, "user_message");
    expect(delivered).toEqual({
      type: "user_message",
      origin: "steer",
      message: userText(STEER),
      turn: 1,
    });
    expect(result.steps[0]!.userMessages).toEqual([{ origin: "steer", message: userText(STEER) }]);
    expect(result.steps[1]!.userMessages).toBeUndefined();
  });
});

describe("delivery points", () => {
  it("(0) messages queued before the run starts come before the first model call, turn 0", async () => {
    const steering = createSteering();
    steering.steer("Answer in French.");
    steering.steer([{ type: "text", text: "Keep it short." }]);
    const model = scriptedModel([{ text: "Bonjour." }]);
    const run = createBareAgent({ model }).stream("Say hello.", { steering });
    const { events, result } = await collect(run);
    expect(model.requests[0]!.messages).toEqual([
      { role: "user", content: "Say hello." },
      userText("Answer in French."),
      { role: "user", content: [{ type: "text", text: "Keep it short." }] },
    ]);
    expect(trace(events).slice(0, 4)).toEqual([
      "run_start",
      "user_message:steer:0",
      "user_message:steer:0",
      "turn_start:1",
    ]);
    expect(result.numTurns).toBe(1);
  });

  it("content blocks are delivered as given; steering messages in the order given", async () => {
    let run!: AgentRun;
    const blocks = [
      { type: "text" as const, text: "Look at" },
      { type: "text" as const, text: " this." },
    ];
    const work = workTool({
      during: () => {
        run.steer("first");
        run.steer(blocks);
      },
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "work", input: { n: 1 } }] },
      { text: "ok" },
    ]);
    run = createBareAgent({ model, tools: [work.tool] }).stream("go");
    const { result } = await collect(run);
    expect(model.requests[1]!.messages.slice(-2)).toEqual([
      userText("first"),
      { role: "user", content: blocks },
    ]);
    expect(result.steps[0]!.userMessages!.map((entry) => entry.message)).toEqual([
      userText("first"),
      { role: "user", content: blocks },
    ]);
  });

  it("(2/3) a reply with no tool calls: a queued steering message goes first, the run goes on", async () => {
    const steering = createSteering();
    const model = scriptedModel((_, index) => {
      if (index === 0) {
        steering.followUp("Then summarise.");
        steering.steer("Also mention the cost.");
        return { text: "Here it is." };
      }
      return { text: index === 1 ? "With the cost." : "Summary." };
    });
    const run = createBareAgent({ model }).stream("Report.", { steering });
    const { events, result } = await collect(run);
    expect(ofType(events, "user_message").map((event) => [event.origin, event.turn])).toEqual([
      ["steer", 1],
      ["follow_up", 2],
    ]);
    expect(model.requests[1]!.messages.at(-1)).toEqual(userText("Also mention the cost."));
    expect(model.requests[2]!.messages.at(-1)).toEqual(userText("Then summarise."));
    expect(result.result).toBe("Summary.");
    expect(result.numTurns).toBe(3);
    expect(result.steps.map((step) => step.userMessages?.map((entry) => entry.origin))).toEqual([
      ["steer"],
      ["follow_up"],
      undefined,
    ]);
    expect(trace(events).slice(-6)).toEqual([
      "turn_end:2",
      "user_message:follow_up:2",
      "turn_start:3",
      "message",
      "turn_end:3",
      "result",
    ]);
  });

  it("(3) a follow-up runs when the run would end, in the same run; the result comes after it", async () => {
    const steering = createSteering();
    steering.followUp("Now in German.");
    steering.followUp([{ type: "text", text: "Und kurz." }]);
    const model = scriptedModel([{ text: "Hello." }, { text: "Hallo." }]);
    const run = createBareAgent({ model }).stream("Greet.", { steering });
    const { events, result } = await collect(run);
    // Both follow-ups, in order, at the one delivery point; then one more model call.
    expect(model.requests).toHaveLength(2);
    expect(model.requests[1]!.messages.slice(-3)).toEqual([
      { role: "assistant", content: [{ type: "text", text: "Hello." }] },
      userText("Now in German."),
      userText("Und kurz."),
    ]);
    expect(result.result).toBe("Hallo.");
    expect(result.subtype).toBe("success");
    expect(trace(events)).toEqual([
      "run_start",
      "turn_start:1",
      "message",
      "turn_end:1",
      "user_message:follow_up:1",
      "user_message:follow_up:1",
      "turn_start:2",
      "message",
      "turn_end:2",
      "result",
    ]);
    expect(result.messages.at(-1)).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "Hallo." }],
    });
  });

  it("(3) an afterToolCall stop is an end too: a follow-up goes on from it", async () => {
    const steering = createSteering();
    steering.followUp("One more thing.");
    const work = workTool();
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "work", input: { n: 1 } }] },
      { text: "Done, one more thing handled." },
    ]);
    const agent = createBareAgent({
      model,
      tools: [work.tool],
      hooks: { afterToolCall: () => ({ stop: true }) },
    });
    const result = await agent.run("go", { steering });
    expect(model.requests).toHaveLength(2);
    expect(model.requests[1]!.messages.at(-1)).toEqual(userText("One more thing."));
    expect(result.result).toBe("Done, one more thing handled.");
  });

  it("a delivered message counts the next call against maxTurns", async () => {
    const steering = createSteering();
    steering.followUp("Again.");
    const model = scriptedModel([{ text: "Once." }, { text: "Twice." }]);
    const result = await createBareAgent({ model, maxTurns: 1 }).run("go", { steering });
    expect(result.subtype).toBe("error_max_turns");
    expect(model.requests).toHaveLength(1);
    expect(result.messages.at(-1)).toEqual(userText("Again."));
  });

  it("run() users: createSteering() fed from outside while the run works", async () => {
    const steering = createSteering();
    const work = workTool({ during: () => steering.steer("Hurry.") });
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "work", input: { n: 1 } }] },
      { text: "Hurried." },
    ]);
    const result = await createBareAgent({ model, tools: [work.tool] }).run("go", { steering });
    expect(result.steps[0]!.userMessages).toEqual([
      { origin: "steer", message: userText("Hurry.") },
    ]);
    expect(result.messages.at(-2)).toEqual(userText("Hurry."));
  });
});
