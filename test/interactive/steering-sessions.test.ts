/**
 * Steering with a session store (design/interactive.md, "Decided after the first
 * implementation"): delivered messages are logged as user messages before the model call that
 * sees them, queued ones travel in the logged pause state: a crash loses none.
 */
import {
  type AgentRun,
  createBareAgent,
  createSteering,
  defineTool,
  loadSession,
  memoryStore,
  RunEndedError,
  type SessionStore,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { deferred } from "../support/promises.ts";
import { expectValidTranscript } from "../support/results.ts";
import { collect, crashableStore, entryTypes, userText, workTool } from "./helpers.ts";

describe("steering with a session store", () => {
  it("delivered steering messages and follow-ups are in the stored transcript, where the run put them", async () => {
    const store = memoryStore();
    let run!: AgentRun;
    const work = workTool({
      during: () => {
        run.steer("Use staging.");
        run.followUp("Then report.");
      },
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "work", input: { n: 1 } }] },
      { text: "Used staging." },
      { text: "Report: done." },
    ]);
    const agent = createBareAgent({ model, tools: [work.tool], sessionStore: store });
    run = agent.stream("go", { sessionId: "s" });
    const { result } = await collect(run);
    expect(result.subtype).toBe("success");
    const loaded = await loadSession(store, "s");
    expect(loaded?.status).toBe("idle");
    expect(loaded!.messages).toEqual(result.messages);
    expect(loaded!.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "user",
      "user",
      "assistant",
      "user",
      "assistant",
    ]);
    expect(loaded!.messages[3]).toEqual(userText("Use staging."));
    expect(loaded!.messages[5]).toEqual(userText("Then report."));
    expectValidTranscript(loaded!.messages);

    // The next run of the session continues from that transcript.
    const next = scriptedModel([{ text: "Continued." }]);
    await createBareAgent({ model: next, sessionStore: store }).run("more", { sessionId: "s" });
    expect(next.requests[0]!.messages.slice(0, -1)).toEqual(result.messages);
  });

  it("a message queued before the run starts is logged after the prompt, before the first reply", async () => {
    const store = memoryStore();
    const steering = createSteering();
    steering.steer("Answer in French.");
    const model = scriptedModel([{ text: "Bonjour." }]);
    await createBareAgent({ model, sessionStore: store }).run("Say hello.", {
      sessionId: "s",
      steering,
    });
    const loaded = await loadSession(store, "s");
    expect(loaded!.messages).toEqual([
      { role: "user", content: "Say hello." },
      userText("Answer in French."),
      { role: "assistant", content: [{ type: "text", text: "Bonjour." }] },
    ]);
  });

  it("a message is logged before the model call that sees it; after a crash there, recovery sends it", async () => {
    const store = crashableStore();
    let run!: AgentRun;
    let loggedBeforeCall: string[] = [];
    const work = workTool({ during: () => run.steer("Use staging.") });
    const model = scriptedModel(async (_, index) => {
      if (index === 0) return { toolCalls: [{ id: "c1", name: "work", input: { n: 1 } }] };
      // The process dies during the call that sees the message: nothing more reaches the log.
      loggedBeforeCall = await entryTypes(store.inner, "s");
      store.failing.on = true;
      return { text: "never logged" };
    });
    run = createBareAgent({ model, tools: [work.tool], sessionStore: store }).stream("go", {
      sessionId: "s",
    });
    const { result } = await collect(run);
    expect(result.subtype).toBe("error_during_execution");
    expect(loggedBeforeCall.at(-1)).toBe("user_message");
    const loaded = await loadSession(store.inner, "s");
    expect(loaded?.status).toBe("interrupted");
    expect(loaded!.messages.at(-1)).toEqual(userText("Use staging."));

    store.failing.on = false;
    const after = scriptedModel([{ text: "Recovered on staging." }]);
    const recovered = await createBareAgent({
      model: after,
      tools: [work.tool],
      sessionStore: store,
    }).resume({ sessionId: "s" });
    expect(recovered.subtype).toBe("success");
    expect(after.requests).toHaveLength(1);
    expect(after.requests[0]!.messages.at(-1)).toEqual(userText("Use staging."));
    expectValidTranscript(after.requests[0]!.messages);
    expect(work.log).toEqual(["start:1", "end:1"]);
  });

  it("queued messages travel in the logged pause state: resume({ sessionId }) delivers them", async () => {
    const store = memoryStore();
    const external = defineTool({
      id: "ask_app",
      parameters: { type: "object", properties: {} },
      execute: false,
    });
    const steering = createSteering();
    const work = workTool({ during: () => steering.followUp("Afterwards, say bye.") });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "c1", name: "work", input: { n: 1 } },
          { id: "e1", name: "ask_app", input: {} },
        ],
      },
    ]);
    const tools = [work.tool, external];
    const paused = await createBareAgent({ model, tools, sessionStore: store }).run("go", {
      sessionId: "s",
      steering,
    });
    expect(paused.subtype).toBe("paused");
    expect((await loadSession(store, "s"))?.status).toBe("paused");

    // Another agent (another process, as far as the store knows) resumes from the store alone.
    const next = scriptedModel([{ text: "Answered." }, { text: "Bye." }]);
    const resumed = await createBareAgent({ model: next, tools, sessionStore: store }).resume(
      { sessionId: "s" },
      { toolOutputs: { e1: "ok" } },
    );
    expect(resumed.subtype).toBe("success");
    expect(resumed.result).toBe("Bye.");
    expect(next.requests[1]!.messages.at(-1)).toEqual(userText("Afterwards, say bye."));
    const loaded = await loadSession(store, "s");
    expect(loaded!.messages.at(-2)).toEqual(userText("Afterwards, say bye."));
  });
});

describe("while the run's end is being logged", () => {
  /** A memoryStore that holds the append of the run's end (or paused) entry until the test releases it. */
  function slowEndStore(type = "end") {
    const inner = memoryStore();
    const reached = deferred();
    const release = deferred();
    const store: SessionStore = {
      async append(sessionId, seq, entries) {
        if (entries.some((entry) => JSON.parse(entry).type === type)) {
          reached.resolve();
          await release.promise;
        }
        return inner.append(sessionId, seq, entries);
      },
      read: (sessionId, options) => inner.read(sessionId, options),
      list: () => inner.list(),
      delete: (sessionId) => inner.delete(sessionId),
      close: () => inner.close(),
    };
    return { store, reached, release };
  }

  it("a follow-up is refused (RunEndedError) or not lost: delivered, or listed on the result", async () => {
    const { store, reached, release } = slowEndStore();
    const steering = createSteering();
    const model = scriptedModel([{ text: "Done." }, { text: "Late one handled." }]);
    const running = createBareAgent({ model, sessionStore: store }).run("go", {
      sessionId: "s",
      steering,
    });
    await reached.promise;
    let refused = false;
    try {
      steering.followUp("One late thing.");
    } catch (error) {
      refused = error instanceof RunEndedError;
      if (!refused) throw error;
    }
    release.resolve();
    const result = await running;
    if (refused) return;
    const delivered = result.messages.some((message) =>
      JSON.stringify(message).includes("One late thing."),
    );
    const listed = JSON.stringify(result.undelivered ?? []).includes("One late thing.");
    expect(
      delivered || listed,
      "accepted after the result was decided, then neither delivered nor listed: lost",
    ).toBe(true);
  });

  it("a paused run: a message accepted while the pause is logged is in the state, or refused", async () => {
    const { store, reached, release } = slowEndStore("paused");
    const steering = createSteering();
    const external = defineTool({
      id: "ask_app",
      parameters: { type: "object", properties: {} },
      execute: false,
    });
    const model = scriptedModel([{ toolCalls: [{ id: "e1", name: "ask_app", input: {} }] }]);
    const running = createBareAgent({ model, tools: [external], sessionStore: store }).run("go", {
      sessionId: "s",
      steering,
    });
    await reached.promise;
    let refused = false;
    try {
      steering.steer("While you wait: use staging.");
    } catch (error) {
      refused = error instanceof RunEndedError;
      if (!refused) throw error;
    }
    release.resolve();
    const result = await running;
    expect(result.subtype).toBe("paused");
    if (refused) return;
    expect(
      JSON.stringify(result.state?.queued ?? []),
      "accepted after the pause was decided, then not in the state: lost",
    ).toContain("While you wait");
  });
});
