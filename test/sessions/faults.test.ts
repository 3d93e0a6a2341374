// A store that throws (RELIABILITY D11): each append is retried twice, then the run resolves
// error_during_execution with SessionStoreError, and the step the write guarded never happens.
import { createBareAgent, loadSession, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { countingTool } from "../support/tools.ts";
import { entryTypes, type FailWhen, failingStore } from "./agent-helpers.ts";

const diskFull = () => new Error("ENOSPC: no space left on device");

/** A one-call run (charge c1, then a final answer) on a store that fails as `failWhen` says. */
function setup(failWhen: FailWhen, extra: { ask?: boolean } = {}) {
  const store = failingStore(failWhen);
  const charge = countingTool("charge");
  const before: string[] = [];
  const model = scriptedModel([
    { toolCalls: [{ id: "c1", name: "charge", input: { target: "order-7" } }] },
    { text: "Charged." },
  ]);
  const agent = createBareAgent({
    model,
    tools: [charge.tool],
    sessionStore: store,
    hooks: { beforeToolCall: ({ callId }) => void before.push(callId) },
    ...(extra.ask ? { permissions: { ask: ["charge"] } } : {}),
  });
  return { store, charge, before, model, agent };
}

const onType =
  (type: string, failures = Number.POSITIVE_INFINITY): FailWhen =>
  ({ types }) => {
    if (!types.includes(type) || failures <= 0) return undefined;
    failures -= 1;
    return diskFull();
  };

const NORMAL_LOG = ["input", "reply", "started", "result", "results_reply", "end"];

describe("a store that throws", () => {
  it.each([1, 2])(
    "fails %i time(s), then works: retried, the run succeeds, nothing written twice",
    async (times) => {
      let failures = times;
      const { store, charge, agent } = setup(() => (failures-- > 0 ? diskFull() : undefined));
      const result = await agent.run("Charge order 7.", { sessionId: "s" });
      expect(result.subtype).toBe("success");
      expect(store.attempts[0]).toEqual(["input"]);
      expect(store.attempts.slice(0, times + 1).every((a) => a.join() === "input")).toBe(true);
      expect(await entryTypes(store, "s")).toEqual(NORMAL_LOG);
      expect(charge.callIds).toEqual(["c1"]);
    },
  );

  it("fails always: three attempts at the input, then SessionStoreError; the model is never called", async () => {
    const { store, model, agent } = setup(() => diskFull());
    const result = await agent.run("Charge order 7.", { sessionId: "s" });
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("SessionStoreError");
    expect(result.error?.message).toContain("no space left on device");
    expect(store.attempts).toEqual([["input"], ["input"], ["input"]]);
    expect(model.requests).toHaveLength(0);
    expect(await loadSession(store, "s")).toBeUndefined();
  });

  it("throws instead of rejecting: the same three attempts, then SessionStoreError", async () => {
    const { store, model, agent } = setup(() => undefined);
    // Not an async function: the failure is thrown at the call, not returned as a rejection.
    store.append = (_sessionId, _seq, entries) => {
      store.attempts.push(entries.map((entry) => String(JSON.parse(entry).type)));
      throw diskFull();
    };
    const result = await agent.run("Charge order 7.", { sessionId: "s" });
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("SessionStoreError");
    expect(store.attempts).toEqual([["input"], ["input"], ["input"]]);
    expect(model.requests).toHaveLength(0);
  });

  it("fails on the reply: no call is prepared (no hook, no handler), no further write", async () => {
    const { store, charge, before, model, agent } = setup(onType("reply"));
    const result = await agent.run("Charge order 7.", { sessionId: "s" });
    expect(result.error?.name).toBe("SessionStoreError");
    expect([before, charge.callIds]).toEqual([[], []]);
    expect(model.requests).toHaveLength(1);
    expect(store.attempts.slice(1)).toEqual([["reply"], ["reply"], ["reply"]]);
    expect(await entryTypes(store, "s")).toEqual(["input"]);
  });

  it("fails on the started marker: the handler never runs, the model is not called again", async () => {
    const { store, charge, model, agent } = setup(onType("started"));
    const result = await agent.run("Charge order 7.", { sessionId: "s" });
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("SessionStoreError");
    expect(charge.callIds).toEqual([]);
    expect(model.requests).toHaveLength(1);
    expect(store.attempts.filter((a) => a.includes("started"))).toHaveLength(3);
    expect(store.attempts.at(-1)).toContain("started");
    expect(await entryTypes(store, "s")).toEqual(["input", "reply"]);
  });

  it("fails on the result: the handler ran once, the run stops; resumed later, the call is not run again", async () => {
    const { store, charge, model, agent } = setup(onType("result", 3));
    const result = await agent.run("Charge order 7.", { sessionId: "s" });
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("SessionStoreError");
    expect(charge.callIds).toEqual(["c1"]);
    expect(model.requests).toHaveLength(1);
    // Fail closed: after the failed write nothing else was tried (no end entry).
    expect(store.attempts.at(-1)).toContain("result");
    expect(await entryTypes(store, "s")).toEqual(["input", "reply", "started"]);
    expect((await loadSession(store, "s"))?.status).toBe("interrupted");

    // The store works again: resume recovers the run; the started call is outcome unknown.
    const resumed = await agent.resume({ sessionId: "s" });
    expect(resumed.subtype).toBe("success");
    expect(charge.callIds).toEqual(["c1"]);
    const call = resumed.steps[0]!.toolCalls[0]!;
    expect(call.isError).toBe(true);
    expect(String(call.result.content)).toContain("outcome unknown");
    expect(resumed.numTurns).toBe(2);
  });

  it("fails on the paused state: the run resolves error_during_execution, keeping its state", async () => {
    const { charge, agent } = setup(onType("paused"), { ask: true });
    const result = await agent.run("Charge order 7.", { sessionId: "s" });
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("SessionStoreError");
    expect(result.state).toBeDefined();
    expect(charge.callIds).toEqual([]);
  });

  it("an append that committed but whose answer was lost: the retry finds it there, nothing twice", async () => {
    const inner = failingStore(() => undefined);
    let lose = 1;
    const store = {
      ...inner,
      append: async (id: string, seq: number, entries: readonly string[]) => {
        await inner.append(id, seq, entries);
        if (entries.some((e) => JSON.parse(e).type === "started") && lose-- > 0)
          throw new Error("connection reset after commit");
      },
    };
    const charge = countingTool("charge");
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "charge", input: { target: "a" } }] },
      { text: "Charged." },
    ]);
    const agent = createBareAgent({ model, tools: [charge.tool], sessionStore: store });
    const result = await agent.run("Charge a.", { sessionId: "s" });
    expect(result.subtype).toBe("success");
    expect(charge.callIds).toEqual(["c1"]);
    expect(await entryTypes(inner, "s")).toEqual(NORMAL_LOG);
  });

  it("a store failure while a resumed paused batch runs: recovery answers the started call, asks again for the other", async () => {
    let failResults = false;
    const store = failingStore(({ types }) =>
      failResults && types.includes("result") ? diskFull() : undefined,
    );
    const charge = countingTool("charge");
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "c1", name: "charge", input: { target: "a" } },
          { id: "c2", name: "charge", input: { target: "b" } },
        ],
      },
      { text: "Done." },
    ]);
    const agent = createBareAgent({
      model,
      tools: [charge.tool],
      sessionStore: store,
      permissions: { ask: ["charge"] },
      toolConcurrency: { mode: "sequential" },
    });
    expect((await agent.run("Charge a and b.", { sessionId: "s" })).subtype).toBe("paused");
    failResults = true;
    const failed = await agent.resume({ sessionId: "s" }, { approvals: { c1: true, c2: true } });
    expect(failed.error?.name).toBe("SessionStoreError");
    expect(charge.callIds).toEqual(["c1"]);
    failResults = false;

    // c1 started and has no result: outcome unknown. c2 never started: the approval given
    // before the failure is not assumed, so it waits for approval again.
    const again = await agent.resume({ sessionId: "s" });
    expect(again.subtype).toBe("paused");
    expect(again.pending?.map((call) => call.id)).toEqual(["c2"]);
    const final = await agent.resume({ sessionId: "s" }, { approvals: { c2: true } });
    expect(final.subtype).toBe("success");
    expect(charge.callIds).toEqual(["c1", "c2"]);
    const calls = final.steps[0]!.toolCalls;
    expect(calls.map((call) => [call.callId, call.isError])).toEqual([
      ["c1", true],
      ["c2", false],
    ]);
    expect(String(calls[0]!.result.content)).toContain("outcome unknown");
    expect(model.requests).toHaveLength(2);
  });

  it("a conflict (another writer appended) is not retried: error_during_execution SessionConflictError", async () => {
    const store = failingStore(() => undefined);
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "intruder", input: {} }] },
      { text: "never" },
    ]);
    const intruder = tool(
      "intruder",
      "Another writer appends meanwhile.",
      z.object({}),
      async () => {
        const seq = (await store.inner.read("s")).length + 1;
        await store.inner.append("s", seq, [JSON.stringify({ type: "resumed", runId: "other" })]);
        return "ok";
      },
    );
    const agent = createBareAgent({ model, tools: [intruder], sessionStore: store });
    const result = await agent.run("go", { sessionId: "s" });
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("SessionConflictError");
    expect(model.requests).toHaveLength(1);
    expect(store.attempts.filter((a) => a.includes("result"))).toHaveLength(1);
    expect(store.attempts.at(-1)).toEqual(["result"]);
  });

  it("two runs starting one new session at once: one logs its input, the other conflicts before its model call", async () => {
    const store = failingStore(() => undefined);
    const model = scriptedModel([{ text: "first" }, { text: "second" }]);
    const agent = createBareAgent({ model, sessionStore: store });
    const results = await Promise.all([
      agent.run("one", { sessionId: "both" }),
      agent.run("two", { sessionId: "both" }),
    ]);
    expect(results.map((r) => r.subtype).sort()).toEqual(["error_during_execution", "success"]);
    expect(results.find((r) => r.isError)?.error?.name).toBe("SessionConflictError");
    expect(model.requests).toHaveLength(1);
    expect(await entryTypes(store, "both")).toEqual(["input", "reply", "end"]);
  });
});
