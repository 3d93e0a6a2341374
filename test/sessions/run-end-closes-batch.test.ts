/**
 * A run ended from outside the engine (a job queue cancelling a paused or interrupted run, or
 * failing it) must leave the session's transcript valid for its next run: every tool_use of the
 * ended run's last reply answered by one tool_result (the logged result, "outcome unknown" for a
 * call that started, "not run" for one that never did), written with the end in one append.
 */
import { createBareAgent, loadSession, memoryStore, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { expect, test } from "vitest";
import { z } from "zod";
import { logRunEnd } from "../../src/sessions/run-entries.ts";
import { expectValidTranscript } from "../support/results.ts";
import { failingStore } from "./agent-helpers.ts";

const ran: string[] = [];
const note = tool("note", "Notes", z.object({ text: z.string() }), async ({ text }) => {
  ran.push(text);
  return `noted ${text}`;
});
const pay = tool("pay", "Pays", z.object({ amount: z.number() }), async ({ amount }) => {
  ran.push(`pay ${amount}`);
  return "paid";
});

test("a paused run cancelled from outside: its calls are answered before the end, and the next run's transcript is valid", async () => {
  const store = memoryStore();
  const first = createBareAgent({
    model: scriptedModel([
      {
        toolCalls: [
          { id: "n1", name: "note", input: { text: "a" } },
          { id: "p1", name: "pay", input: { amount: 5 } },
        ],
      },
    ]),
    tools: [note, pay],
    permissions: { ask: ["pay"] },
    sessionStore: store,
  });
  const paused = await first.run("go", { sessionId: "s1" });
  expect(paused.subtype).toBe("paused");
  expect(await logRunEnd(store, "s1", paused.checkpointId!, { subtype: "aborted" })).toBe(true);
  const view = (await loadSession(store, "s1"))!;
  expect(view.status).toBe("idle");
  expectValidTranscript(view.messages);
  const last = view.messages.at(-1)!;
  expect(last.content).toEqual([
    expect.objectContaining({ tool_use_id: "n1", content: "noted a", is_error: false }),
    expect.objectContaining({ tool_use_id: "p1", is_error: true }),
  ]);
  expect(JSON.stringify(last.content)).toContain("cancelled");

  const model = scriptedModel([{ text: "ok" }]);
  const next = createBareAgent({ model, tools: [note, pay], sessionStore: store });
  const result = await next.run("again", { sessionId: "s1" });
  expect(result.subtype).toBe("success");
  expectValidTranscript(model.requests[0]!.messages);
  expect(ran).toEqual(["a"]);
});

test("an interrupted run ended as failed: a started call is answered outcome unknown, one never started as not run", async () => {
  // input, reply, started n1: the result of n1 is never logged, nor anything after.
  const failing = failingStore(({ call }) => (call > 3 ? new Error("disk full") : undefined));
  const store = failing.inner;
  const agent = createBareAgent({
    model: scriptedModel([
      {
        toolCalls: [
          { id: "n1", name: "note", input: { text: "b" } },
          { id: "n2", name: "note", input: { text: "c" } },
        ],
      },
    ]),
    tools: [note],
    sessionStore: failing,
    toolConcurrency: { mode: "sequential" },
  });
  const failed = await agent.run("go", { sessionId: "s2" });
  expect(failed.subtype).toBe("error_during_execution");
  expect((await loadSession(store, "s2"))!.status).toBe("interrupted");
  const ended = await logRunEnd(store, "s2", failed.checkpointId!, {
    subtype: "error_during_execution",
    error: { name: "Error", message: "gave up" },
  });
  expect(ended).toBe(true);
  const view = (await loadSession(store, "s2"))!;
  expect(view.status).toBe("idle");
  expectValidTranscript(view.messages);
  const blocks = view.messages.at(-1)!.content as { content: string; is_error: boolean }[];
  expect(blocks.map((block) => block.is_error)).toEqual([true, true]);
  expect(blocks[0]!.content).toContain("outcome unknown");
  expect(blocks[1]!.content).toContain("was not run");
});
