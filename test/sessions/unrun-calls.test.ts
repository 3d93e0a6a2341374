// Calls the engine answers without running them (cut short, repeated id, unknown tool, invalid
// input, blocked, denied) must stay unrun when a crash leaves their reply logged without its
// results message: recovery prepares them "as in a fresh batch", where none of them would run.
// The crash is a store that fails on the append carrying the results message (the same log a
// kill -9 during the next model call leaves: the reply, and nothing after it).
import { createBareAgent, loadSession, tool } from "skein";
import { type ScriptedTurn, scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { failingStore, logsResults } from "./agent-helpers.ts";

async function interruptedAfterReply(turn: ScriptedTurn, extra: { deny?: string[] } = {}) {
  let failResults = true;
  const store = failingStore(({ types }) =>
    failResults && logsResults(types) ? new Error("database unavailable") : undefined,
  );
  const runs: string[] = [];
  // No required input: `{}` (what a cut-short call's input becomes) validates.
  const notify = tool(
    "notify",
    "Notifies the team.",
    z.object({ note: z.string().optional() }),
    (_, ctx) => {
      runs.push(ctx.callId);
      return "notified";
    },
  );
  const model = scriptedModel([turn, { text: "Noted." }, { text: "Noted again." }]);
  const agent = createBareAgent({
    model,
    tools: [notify],
    sessionStore: store,
    hooks: {
      beforeToolCall: ({ input }) =>
        (input as { note?: string }).note === "blocked" ? { block: true, reason: "no" } : undefined,
    },
    ...(extra.deny ? { permissions: { deny: extra.deny } } : {}),
  });
  const first = await agent.run("Tell the team.", { sessionId: "s" });
  expect(first.error?.name).toBe("SessionStoreError");
  expect(runs).toEqual([]);
  expect((await loadSession(store, "s"))?.status).toBe("interrupted");
  failResults = false;
  const recovered = await agent.resume({ sessionId: "s" });
  expect(recovered.subtype).toBe("success");
  return { runs, recovered };
}

describe("calls answered without running stay unrun after recovery", () => {
  it.each<[string, ScriptedTurn, { deny?: string[] }]>([
    ["an unknown tool", { toolCalls: [{ id: "c1", name: "nope", input: {} }] }, {}],
    ["invalid input", { toolCalls: [{ id: "c1", name: "notify", input: { note: 5 } }] }, {}],
    [
      "blocked by beforeToolCall",
      { toolCalls: [{ id: "c1", name: "notify", input: { note: "blocked" } }] },
      {},
    ],
    [
      "denied by a rule",
      { toolCalls: [{ id: "c1", name: "notify", input: {} }] },
      { deny: ["notify"] },
    ],
  ])("%s (prepared again, answered again)", async (_, turn, extra) => {
    const { runs, recovered } = await interruptedAfterReply(turn, extra);
    expect(runs).toEqual([]);
    expect(recovered.steps[0]!.toolCalls[0]!.isError).toBe(true);
  });

  // The reply entry keeps the calls answered as they were claimed, so the cut-short call,
  // answered "was not run" before the crash, is answered the same way after it (DESIGN: "never
  // runs it"), not prepared afresh with its `{}` input.
  it("a call cut short (max_tokens) is not run by recovery", async () => {
    const { runs, recovered } = await interruptedAfterReply({
      toolCalls: [{ id: "c1", name: "notify", input: {} }],
      incompleteToolCalls: [{ id: "c1", name: "notify", reason: "the reply hit max_tokens" }],
      stopReason: "max_tokens",
    });
    expect(runs).toEqual([]);
    expect(recovered.steps[0]!.toolCalls[0]!.isError).toBe(true);
  });

  // A call repeating an earlier id is renamed `<id>~2` in the logged reply and answered "not
  // run"; recovery keeps that answer (DESIGN: "answered with an error result, and never run").
  it("a call that repeated an earlier id is not run by recovery", async () => {
    let failResults = false;
    const store = failingStore(({ types }) =>
      failResults && logsResults(types) ? new Error("database unavailable") : undefined,
    );
    const runs: string[] = [];
    const notify = tool("notify", "Notifies.", z.object({ note: z.string() }), ({ note }) => {
      runs.push(note);
      return "notified";
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "notify", input: { note: "first" } }] },
      { toolCalls: [{ id: "c1", name: "notify", input: { note: "repeat" } }] },
      { text: "Noted." },
      { text: "Noted again." },
    ]);
    const agent = createBareAgent({ model, tools: [notify], sessionStore: store });
    // The store fails once the repeated call's batch is to be logged (with the next reply).
    const onRepeat = agent.stream("Tell the team.", { sessionId: "s" });
    let failure: string | undefined;
    for await (const event of onRepeat) {
      if (event.type === "message" && JSON.stringify(event.message).includes("repeat"))
        failResults = true;
      if (event.type === "result") failure = event.error?.name;
    }
    expect(failure).toBe("SessionStoreError");
    expect(runs).toEqual(["first"]);
    failResults = false;
    const recovered = await agent.resume({ sessionId: "s" });
    expect(recovered.subtype).toBe("success");
    expect(runs).toEqual(["first"]);
  });
});
