// forkSession and loadSession: a copy from a checkpoint (or of the finished runs), the original
// untouched, and what a stored session tells about itself.
import {
  ConfigurationError,
  createBareAgent,
  forkSession,
  loadSession,
  memoryStore,
  SessionConflictError,
  SessionError,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { rejectionOf } from "../support/promises.ts";
import { countingTool } from "../support/tools.ts";
import { entryTypes, failingStore, lastSeqOf } from "./agent-helpers.ts";

/** Session "orig": run 1 charges order 7 (a tool call), run 2 is a plain question. */
async function twoRuns() {
  const store = memoryStore();
  const charge = countingTool("charge");
  const model = scriptedModel([
    { toolCalls: [{ id: "c1", name: "charge", input: { target: "order-7" } }] },
    { text: "Charged order 7." },
    { text: "It was order 7." },
    // What the forks are answered.
    { text: "Fork answer." },
    { text: "Fork answer." },
  ]);
  const agent = createBareAgent({
    model,
    tools: [charge.tool],
    sessionStore: store,
    permissions: { ask: ["charge"] },
    approval: () => true,
  });
  const first = await agent.run("Charge order 7.", { sessionId: "orig" });
  const second = await agent.run("Which order?", { sessionId: "orig" });
  return { store, model, agent, first, second };
}

describe("forkSession", () => {
  it("at a checkpoint: the entries before that run's input; the original keeps its lastSeq", async () => {
    const { store, model, agent, first, second } = await twoRuns();
    const lastSeq = await lastSeqOf(store, "orig");
    const fork = await forkSession(store, "orig", { checkpointId: second.checkpointId! });
    expect(fork).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
    expect(fork).not.toBe("orig");
    expect(await lastSeqOf(store, "orig")).toBe(lastSeq);
    expect((await entryTypes(store, fork))[0]).toBe("origin");

    const loaded = await loadSession(store, fork);
    expect(loaded?.status).toBe("idle");
    expect(loaded?.messages).toEqual(first.messages);
    expect(loaded?.checkpoints).toEqual([{ id: first.checkpointId, prompt: "Charge order 7." }]);

    // The fork goes its own way from there.
    const branched = await agent.run("Something else?", { sessionId: fork });
    expect(model.requests.at(-1)!.messages).toEqual([
      ...first.messages,
      { role: "user", content: "Something else?" },
    ]);
    expect(branched.result).toBe("Fork answer.");
    expect(await lastSeqOf(store, "orig")).toBe(lastSeq);
  });

  it("without a checkpoint: every finished run, under the id asked for", async () => {
    const { store, second } = await twoRuns();
    expect(await forkSession(store, "orig", { sessionId: "copy-1" })).toBe("copy-1");
    const copy = await loadSession(store, "copy-1");
    expect(copy?.messages).toEqual(second.messages);
    expect(copy?.checkpoints.map((c) => c.prompt)).toEqual(["Charge order 7.", "Which order?"]);
    // A fork of the fork names its own origin first, once.
    await forkSession(store, "copy-1", { sessionId: "copy-2" });
    expect((await entryTypes(store, "copy-2")).filter((t) => t === "origin")).toHaveLength(1);
    expect((await loadSession(store, "copy-2"))?.messages).toEqual(second.messages);
  });

  it("does not copy an unfinished tail: a paused last run stays behind", async () => {
    const { store, second } = await twoRuns();
    const asking = createBareAgent({
      model: scriptedModel([{ toolCalls: [{ id: "c9", name: "charge", input: { target: "x" } }] }]),
      tools: [countingTool("charge").tool],
      sessionStore: store,
      permissions: { ask: ["charge"] },
    });
    expect((await asking.run("Charge x.", { sessionId: "orig" })).subtype).toBe("paused");
    const fork = await forkSession(store, "orig");
    const loaded = await loadSession(store, fork);
    expect(loaded?.status).toBe("idle");
    expect(loaded?.messages).toEqual(second.messages);
    expect((await loadSession(store, "orig"))?.status).toBe("paused");
  });

  it("refuses an unknown session or checkpoint (not_found), an existing target id, and bad options", async () => {
    const { store } = await twoRuns();
    const lastSeq = await lastSeqOf(store, "orig");
    const nobody = await rejectionOf(forkSession(store, "nobody"));
    expect((nobody as SessionError).code).toBe("not_found");
    const noCheckpoint = await rejectionOf(forkSession(store, "orig", { checkpointId: "cp_no" }));
    expect(noCheckpoint).toBeInstanceOf(SessionError);
    expect((noCheckpoint as SessionError).code).toBe("not_found");
    expect(await rejectionOf(forkSession(store, "orig", { sessionId: "orig" }))).toBeInstanceOf(
      SessionConflictError,
    );
    const bad = await rejectionOf(forkSession(store, "orig", { checkpoint: "x" } as never));
    expect(bad).toBeInstanceOf(ConfigurationError);
    expect(await lastSeqOf(store, "orig")).toBe(lastSeq);
    expect((await store.list()).map((s) => s.sessionId)).toEqual(["orig"]);
  });
});

describe("loadSession", () => {
  it("undefined for a session the store does not have", async () => {
    expect(await loadSession(memoryStore(), "nobody")).toBeUndefined();
  });

  it("idle: the transcript, the checkpoints, lastSeq, no pending", async () => {
    const { store, first, second } = await twoRuns();
    const loaded = await loadSession(store, "orig");
    expect(loaded).toEqual({
      sessionId: "orig",
      status: "idle",
      messages: second.messages,
      checkpoints: [
        { id: first.checkpointId, prompt: "Charge order 7." },
        { id: second.checkpointId, prompt: "Which order?" },
      ],
      lastSeq: await lastSeqOf(store, "orig"),
    });
  });

  it("paused: the calls waiting, as on the paused result", async () => {
    const store = memoryStore();
    const agent = createBareAgent({
      model: scriptedModel([
        {
          toolCalls: [
            { id: "c1", name: "charge", input: { target: "a" } },
            { id: "c2", name: "charge", input: { target: "b" } },
          ],
        },
      ]),
      tools: [countingTool("charge").tool],
      sessionStore: store,
      permissions: { ask: ["charge"] },
    });
    const paused = await agent.run("Charge a and b.", { sessionId: "p" });
    const loaded = await loadSession(store, "p");
    expect(loaded?.status).toBe("paused");
    expect(loaded?.pending).toEqual(paused.pending);
    expect(loaded?.pending?.map((call) => [call.id, call.reason])).toEqual([
      ["c1", "approval"],
      ["c2", "approval"],
    ]);
  });

  it("interrupted: a run the store stopped (or a crash), with no pending", async () => {
    const store = failingStore(({ types }) =>
      types.includes("started") ? new Error("database unavailable") : undefined,
    );
    const agent = createBareAgent({
      model: scriptedModel([{ toolCalls: [{ id: "c1", name: "charge", input: { target: "a" } }] }]),
      tools: [countingTool("charge").tool],
      sessionStore: store,
    });
    await agent.run("Charge a.", { sessionId: "i" });
    const loaded = await loadSession(store, "i");
    expect(loaded?.status).toBe("interrupted");
    expect(loaded?.pending).toBeUndefined();
    expect(loaded?.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(loaded?.lastSeq).toBe(2);
  });
});
