// Stored entries truncated or corrupted by hand (RELIABILITY D6): a torn last entry is skipped and
// the next append goes after it; a damaged entry anywhere else is SessionError "damaged", naming
// its seq, for run, resume, loadSession, forkSession and rewindFiles, and nothing is written.
import { rmSync } from "node:fs";
import { join } from "node:path";
import {
  createBareAgent,
  forkSession,
  loadSession,
  memoryStore,
  SessionError,
  type SessionStore,
} from "skein";
import { sqliteStore } from "skein/sqlite";
import { scriptedModel } from "skein/testing";
import { afterAll, describe, expect, it } from "vitest";
import { rejectionOf } from "../support/promises.ts";
import { makeTempDir } from "../support/temp.ts";
import { countingTool } from "../support/tools.ts";
import { editSqliteRow, entryType, entryTypes, lastSeqOf } from "./agent-helpers.ts";

const dir = makeTempDir("skein-damaged-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A store holding one finished run of session "s" (6 entries), and its agent. */
async function finishedSession(store: SessionStore) {
  const charge = countingTool("charge");
  const model = scriptedModel([
    { toolCalls: [{ id: "c1", name: "charge", input: { target: "a" } }] },
    { text: "Charged." },
    { text: "Still here." },
  ]);
  const agent = createBareAgent({ model, tools: [charge.tool], sessionStore: store });
  expect((await agent.run("Charge a.", { sessionId: "s" })).subtype).toBe("success");
  expect(await lastSeqOf(store, "s")).toBe(6);
  return { agent, model, charge };
}

const editRow = (path: string, seq: number, edit: (data: string) => string) =>
  editSqliteRow(path, "s", seq, edit);

describe("a torn last entry is skipped, and the next append goes after it", () => {
  it("memoryStore: a half-written entry appended at the end", async () => {
    const store = memoryStore();
    const { agent, model } = await finishedSession(store);
    await store.append("s", 7, ['{"type":"reply","runId":"cp_x","mess']);
    const loaded = await loadSession(store, "s");
    expect([loaded?.status, loaded?.lastSeq, loaded?.messages.length]).toEqual(["idle", 7, 4]);

    const next = await agent.run("Still there?", { sessionId: "s" });
    expect(next.subtype).toBe("success");
    expect(model.requests[2]!.messages).toHaveLength(5);
    const rows = await store.read("s");
    expect(rows[6]).toEqual({ seq: 7, data: '{"type":"reply","runId":"cp_x","mess' });
    expect(rows.slice(7).map((row) => JSON.parse(row.data).type)).toEqual([
      "input",
      "reply",
      "end",
    ]);
  });

  it("sqliteStore: the last row truncated by hand (an interrupted run still recovers)", async () => {
    const path = join(dir, "torn.db");
    const store = sqliteStore({ path });
    const charge = countingTool("charge");
    // A run that stopped after its reply (the store failed on the started marker).
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "charge", input: { target: "a" } }] },
      { text: "Recovered." },
    ]);
    let failStarted = true;
    const failing: SessionStore = {
      append: async (id, seq, entries) => {
        if (failStarted && entries.some((e) => JSON.parse(e).type === "started"))
          throw new Error("database unavailable");
        return store.append(id, seq, entries);
      },
      read: (id, options) => store.read(id, options),
      list: () => store.list(),
      delete: (id) => store.delete(id),
      close: () => store.close(),
    };
    const crashed = createBareAgent({ model, tools: [charge.tool], sessionStore: failing });
    expect((await crashed.run("Charge a.", { sessionId: "s" })).error?.name).toBe(
      "SessionStoreError",
    );
    failStarted = false;
    // Its started marker then written torn: the process died mid-write.
    const runId = JSON.parse((await store.read("s"))[0]!.data).runId;
    const started = { type: "started", runId, callId: "c1", name: "charge", inputHash: "h" };
    await store.append("s", 3, [JSON.stringify(started)]);
    await store.close();
    editRow(path, 3, (data) => data.slice(0, 12));

    const reopened = sqliteStore({ path });
    const agent = createBareAgent({ model, tools: [charge.tool], sessionStore: reopened });
    expect((await loadSession(reopened, "s"))?.status).toBe("interrupted");
    const resumed = await agent.resume({ sessionId: "s" });
    expect(resumed.subtype).toBe("success");
    expect(resumed.result).toBe("Recovered.");
    // The torn marker does not count: the call never started, so it ran now, once.
    expect(charge.callIds).toEqual(["c1"]);
    const rows = await reopened.read("s");
    expect(rows[2]!.data).toBe('{"type":"sta');
    expect(rows.slice(3).map((row) => [row.seq, entryType(row.data)])).toEqual([
      [4, "resumed"],
      [5, "started"],
      [6, "result"],
      [7, "results_reply"],
      [8, "end"],
    ]);
    await reopened.close();
  });
});

describe.each([
  ["a middle entry", 4],
  ["the first entry (the run's input)", 1],
  ["the reply carrying the batch's results", 5],
])("%s damaged by hand (sqliteStore)", (_, seq) => {
  it.each([
    ["not JSON", (data: string) => data.slice(0, data.length - 5)],
    ["JSON of no known shape", () => JSON.stringify({ type: "reply", runId: 7 })],
    ["another JSON value", () => "[1,2,3]"],
    [
      "a results_reply whose results are not a message",
      () =>
        JSON.stringify({
          type: "results_reply",
          runId: "cp_x",
          results: "tool results",
          message: { role: "assistant", content: "Charged." },
          usage: {},
          stopReason: "end_turn",
        }),
    ],
  ])("%s: SessionError damaged naming the seq, and nothing is written", async (_, edit) => {
    const path = join(dir, `damaged-${seq}-${Math.random()}.db`);
    const store = sqliteStore({ path });
    const { model, charge } = await finishedSession(store);
    await store.close();
    editRow(path, seq, edit);

    const reopened = sqliteStore({ path });
    const other = createBareAgent({ model, tools: [charge.tool], sessionStore: reopened });
    const before = await reopened.read("s");
    const attempts = [
      other.run("Still there?", { sessionId: "s" }),
      other.resume({ sessionId: "s" }),
      loadSession(reopened, "s"),
      forkSession(reopened, "s"),
      other.rewindFiles("s", "cp_any"),
    ];
    for (const attempt of attempts) {
      const error = await rejectionOf(attempt);
      expect(error).toBeInstanceOf(SessionError);
      expect((error as SessionError).code).toBe("damaged");
      expect((error as SessionError).seq).toBe(seq);
      expect(error.message).toContain(`seq ${seq}`);
    }
    expect(await reopened.read("s")).toEqual(before);
    expect((await reopened.list()).map((info) => [info.sessionId, info.lastSeq])).toEqual([
      ["s", 6],
    ]);
    expect(model.requests).toHaveLength(2);
    expect(charge.callIds).toEqual(["c1"]);
    await reopened.close();
  });
});

it("a damaged session can be deleted and its id used again", async () => {
  const store = memoryStore();
  const { agent } = await finishedSession(store);
  await store.append("s", 7, ["garbage"]);
  await store.append("s", 8, [JSON.stringify({ type: "resumed", runId: "x" })]);
  expect(((await rejectionOf(loadSession(store, "s"))) as SessionError).seq).toBe(7);
  expect(await entryTypes(store, "s")).toHaveLength(8);
  await store.delete("s");
  expect((await agent.run("Still there?", { sessionId: "s" })).subtype).toBe("success");
});
