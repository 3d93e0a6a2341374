// agent.resume(state) (a RunState the app kept) on an agent with a session store: the continued
// run is logged in its session, and the session stays whole and recoverable.
import { createBareAgent, loadSession, memoryStore } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { expectValidTranscript } from "../support/results.ts";
import { countingTool } from "../support/tools.ts";
import { failingStore } from "./agent-helpers.ts";

describe("resume(state) with a session store", () => {
  it("a paused run resumed from the app's state is logged in its session, which is then idle", async () => {
    const store = memoryStore();
    const charge = countingTool("charge");
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "charge", input: { target: "a" } }] },
      { text: "Charged." },
      { text: "Next." },
    ]);
    const options = { model, tools: [charge.tool], permissions: { ask: ["charge"] } };
    const agent = createBareAgent({ ...options, sessionStore: store });
    const paused = await agent.run("Charge a.", { sessionId: "s" });
    const state = JSON.parse(JSON.stringify(paused.state));
    const resumed = await agent.resume(state, { approvals: { c1: true } });
    expect(resumed.subtype).toBe("success");
    const loaded = await loadSession(store, "s");
    expect(loaded?.status).toBe("idle");
    expect(loaded?.messages).toEqual(resumed.messages);
    await agent.run("And then?", { sessionId: "s" });
    expectValidTranscript(model.requests.at(-1)!.messages);
    expect(charge.callIds).toEqual(["c1"]);
  });

  it("a run stopped at maxTurns, resumed from its state with a higher maxTurns, continues the session", async () => {
    const store = memoryStore();
    const charge = countingTool("charge");
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "charge", input: { target: "a" } }] },
      { toolCalls: [{ id: "c2", name: "charge", input: { target: "b" } }] },
      { text: "Both charged." },
      { text: "Next." },
    ]);
    const short = createBareAgent({
      model,
      tools: [charge.tool],
      sessionStore: store,
      maxTurns: 1,
    });
    const stopped = await short.run("Charge a and b.", { sessionId: "s" });
    expect(stopped.subtype).toBe("error_max_turns");
    const longer = createBareAgent({ model, tools: [charge.tool], sessionStore: store });
    const resumed = await longer.resume(stopped.state!);
    expect(resumed.subtype).toBe("success");
    expect((await loadSession(store, "s"))?.messages).toEqual(resumed.messages);
    await longer.run("And then?", { sessionId: "s" });
    expectValidTranscript(model.requests.at(-1)!.messages);
    expect(charge.callIds).toEqual(["c1", "c2"]);
  });

  // The resume marker written after the run's `end` reopens that run in the log, so when the
  // continued run stops mid-batch (the store fails on a result; a kill -9 is the same) the
  // session reads "interrupted" and recovers, rather than "idle" with c2 left unanswered.
  it("a run resumed from a maxTurns state that the store then stops stays recoverable", async () => {
    let failResults = false;
    const store = failingStore(({ types }) =>
      failResults && types.includes("result") ? new Error("database unavailable") : undefined,
    );
    const charge = countingTool("charge");
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "charge", input: { target: "a" } }] },
      { toolCalls: [{ id: "c2", name: "charge", input: { target: "b" } }] },
      { text: "Both charged." },
      { text: "Next." },
    ]);
    const short = createBareAgent({
      model,
      tools: [charge.tool],
      sessionStore: store,
      maxTurns: 1,
    });
    const stopped = await short.run("Charge a and b.", { sessionId: "s" });
    const longer = createBareAgent({ model, tools: [charge.tool], sessionStore: store });
    failResults = true;
    const failed = await longer.resume(stopped.state!);
    expect(failed.error?.name).toBe("SessionStoreError");
    failResults = false;

    expect((await loadSession(store, "s"))?.status).toBe("interrupted");
    const recovered = await longer.resume({ sessionId: "s" });
    expect(recovered.subtype).toBe("success");
    expect(charge.callIds).toEqual(["c1", "c2"]);
    expectValidTranscript(recovered.messages);
  });

  // A paused state runs once: replayed after its run was resumed and ended, it is refused
  // (ResumeError) before the approved call could run again or the transcript gain an orphan.
  it("replaying a paused state after its run ended neither runs the call again nor breaks the session", async () => {
    const store = memoryStore();
    const charge = countingTool("charge");
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "charge", input: { target: "a" } }] },
      { text: "Charged." },
      { text: "Charged again?" },
      { text: "Next." },
    ]);
    const agent = createBareAgent({
      model,
      tools: [charge.tool],
      sessionStore: store,
      permissions: { ask: ["charge"] },
    });
    const paused = await agent.run("Charge a.", { sessionId: "s" });
    const state = JSON.parse(JSON.stringify(paused.state));
    await agent.resume(state, { approvals: { c1: true } });
    await agent.resume(state, { approvals: { c1: true } }).catch(() => undefined);
    expect(charge.callIds).toEqual(["c1"]);
    expectValidTranscript((await loadSession(store, "s"))!.messages);
  });
});
