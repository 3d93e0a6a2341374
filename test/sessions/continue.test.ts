// Continuing a conversation: run(prompt, { sessionId }) with a store, run(prompt, { messages })
// without one, odd session ids, delete and reuse, and runData (Read records) across runs.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type AgentEvent,
  ConfigurationError,
  createAgent,
  createBareAgent,
  forkSession,
  loadSession,
  memoryStore,
  ResumeError,
  SessionError,
  type SessionStore,
} from "skein";
import { sqliteStore } from "skein/sqlite";
import { scriptedModel } from "skein/testing";
import { afterAll, describe, expect, it } from "vitest";
import { rejectionOf } from "../support/promises.ts";
import { expectValidTranscript } from "../support/results.ts";
import { makeTempDir } from "../support/temp.ts";
import { countingTool } from "../support/tools.ts";
import { lastSeqOf } from "./agent-helpers.ts";

const dir = makeTempDir("skein-continue-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const stores: [string, () => SessionStore][] = [
  ["memoryStore", () => memoryStore()],
  ["sqliteStore (a file)", () => sqliteStore({ path: join(dir, `${Math.random()}.db`) })],
];

describe.each(stores)("continuing with %s", (_, open) => {
  it("two runs with one sessionId: the second sends the whole transcript, then the new prompt", async () => {
    const store = open();
    const charge = countingTool("charge");
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "charge", input: { target: "order-7" } }] },
      { text: "Charged order 7." },
      { text: "It was order 7." },
    ]);
    const agent = createBareAgent({ model, tools: [charge.tool], sessionStore: store });
    const first = await agent.run("Charge order 7.", { sessionId: "chat-1" });
    expect(first.subtype).toBe("success");
    expect(first.messages).toHaveLength(4);

    const events: AgentEvent[] = [];
    for await (const event of agent.stream("Which order was it?", { sessionId: "chat-1" }))
      events.push(event);
    const second = events.at(-1) as Extract<AgentEvent, { type: "result" }>;
    expect(second.result).toBe("It was order 7.");
    // The model got every message of the first run, then the new prompt; nothing twice.
    expect(model.requests[2]!.messages).toEqual([
      ...first.messages,
      { role: "user", content: "Which order was it?" },
    ]);
    expect(second.messages).toEqual([...model.requests[2]!.messages, second.messages.at(-1)]);
    expectValidTranscript(second.messages);
    // Each run has its own checkpoint, on run_start and on the result.
    const start = events[0] as Extract<AgentEvent, { type: "run_start" }>;
    expect(start.checkpointId).toBe(second.checkpointId);
    expect(second.checkpointId).not.toBe(first.checkpointId);
    expect(charge.callIds).toEqual(["c1"]);
    const loaded = await loadSession(store, "chat-1");
    expect(loaded?.checkpoints).toEqual([
      { id: first.checkpointId, prompt: "Charge order 7." },
      { id: second.checkpointId, prompt: "Which order was it?" },
    ]);
    await store.close();
  });

  it("a run without sessionId starts a new session with a random id, which a second run continues", async () => {
    const store = open();
    const model = scriptedModel([{ text: "one" }, { text: "two" }]);
    const agent = createBareAgent({ model, sessionStore: store });
    const first = await agent.run("first");
    expect(first.sessionId).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
    await agent.run("second", { sessionId: first.sessionId });
    expect(model.requests[1]!.messages.map((m) => m.content)).toEqual([
      "first",
      [{ type: "text", text: "one" }],
      "second",
    ]);
    await store.close();
  });

  it("a new run on a paused session rejects SessionError unfinished and writes nothing", async () => {
    const store = open();
    const charge = countingTool("charge");
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "charge", input: { target: "a" } }] },
      { text: "done" },
    ]);
    const agent = createBareAgent({
      model,
      tools: [charge.tool],
      sessionStore: store,
      permissions: { ask: ["charge"] },
    });
    expect((await agent.run("go", { sessionId: "paused-1" })).subtype).toBe("paused");
    const before = await lastSeqOf(store, "paused-1");
    const error = await rejectionOf(agent.run("something else", { sessionId: "paused-1" }));
    expect(error).toBeInstanceOf(SessionError);
    expect((error as SessionError).code).toBe("unfinished");
    expect(error.message).toContain('agent.resume({ sessionId: "paused-1" })');
    expect(await lastSeqOf(store, "paused-1")).toBe(before);
    expect(model.requests).toHaveLength(1);
    // Resumed, the session is idle again and takes new runs.
    const resumed = await agent.resume({ sessionId: "paused-1" }, { approvals: { c1: true } });
    expect(resumed.subtype).toBe("success");
    expect(charge.callIds).toEqual(["c1"]);
    const idle = await rejectionOf(agent.resume({ sessionId: "paused-1" }));
    expect(idle).toBeInstanceOf(ResumeError);
    expect(idle.message).toContain("nothing to resume");
    await store.close();
  });

  it("delete, then the same id starts an empty conversation", async () => {
    const store = open();
    const model = scriptedModel([{ text: "one" }, { text: "fresh" }]);
    const agent = createBareAgent({ model, sessionStore: store });
    await agent.run("remember 42", { sessionId: "reused" });
    expect(await store.delete("reused")).toBe(true);
    expect(await loadSession(store, "reused")).toBeUndefined();
    const again = await agent.run("what number?", { sessionId: "reused" });
    expect(model.requests[1]!.messages).toEqual([{ role: "user", content: "what number?" }]);
    expect(again.messages).toHaveLength(2);
    expect((await loadSession(store, "reused"))?.checkpoints).toHaveLength(1);
    await store.close();
  });
});

describe("session ids and stores", () => {
  const odd = ["with space", "../x", "a".repeat(129), "", "ünïcödé", "a/b", "tab\there", "nul\0"];

  it.each(odd.map((id) => [JSON.stringify(id).slice(0, 30), id]))(
    "session id %s is a ConfigurationError everywhere, before anything is written",
    async (_, id) => {
      const store = memoryStore();
      const model = scriptedModel([{ text: "never" }]);
      const agent = createBareAgent({ model, sessionStore: store });
      const attempts = [
        agent.run("hi", { sessionId: id }),
        agent.resume({ sessionId: id }),
        agent.rewindFiles(id, "cp_x"),
        loadSession(store, id),
        forkSession(store, id),
      ];
      for (const attempt of attempts) {
        const error = await rejectionOf(attempt);
        expect(error).toBeInstanceOf(ConfigurationError);
        expect(error.message).toMatch(/session id .* is not valid/);
      }
      expect(model.requests).toHaveLength(0);
      expect(await store.list()).toEqual([]);
    },
  );

  it("accepts 128 characters of A-Z a-z 0-9 . _ : -", async () => {
    const store = memoryStore();
    const id = `Ab9._:-${"x".repeat(121)}`;
    const agent = createBareAgent({ model: scriptedModel([{ text: "ok" }]), sessionStore: store });
    expect((await agent.run("hi", { sessionId: id })).sessionId).toBe(id);
  });

  it("resume of an unknown session is SessionError not_found", async () => {
    const agent = createBareAgent({ model: scriptedModel([]), sessionStore: memoryStore() });
    const error = await rejectionOf(agent.resume({ sessionId: "nobody" }));
    expect(error).toBeInstanceOf(SessionError);
    expect((error as SessionError).code).toBe("not_found");
  });

  it("run(prompt, { messages }) without a store continues that history; with a store it is a ConfigurationError", async () => {
    const model = scriptedModel([{ text: "one" }, { text: "two" }]);
    const agent = createBareAgent({ model });
    const first = await agent.run("first");
    const second = await agent.run("second", { messages: first.messages });
    expect(model.requests[1]!.messages).toEqual([
      ...first.messages,
      { role: "user", content: "second" },
    ]);
    expect(second.messages).toHaveLength(4);

    const stored = createBareAgent({ model: scriptedModel([]), sessionStore: memoryStore() });
    const both = await rejectionOf(stored.run("again", { messages: first.messages }));
    expect(both).toBeInstanceOf(ConfigurationError);
    expect(both.message).toContain("not both");
  });
});

describe("runData (what Read saw) across the runs of a session", () => {
  const readThenEdit = () =>
    scriptedModel([
      { toolCalls: [{ id: "r1", name: "Read", input: { file_path: "notes.md" } }] },
      { text: "Read it." },
      {
        toolCalls: [
          {
            id: "e1",
            name: "Edit",
            input: { file_path: "notes.md", old_string: "draft", new_string: "final" },
          },
        ],
      },
      { text: "Edited." },
    ]);

  it("Read in run 1, Edit in run 2 by another agent with the same approvalSecret (a new process)", async () => {
    const cwd = makeTempDir("skein-sessions-");
    writeFileSync(join(cwd, "notes.md"), "a draft\n");
    const path = join(cwd, "sessions.db");
    const model = readThenEdit();
    const options = {
      cwd,
      model,
      approvalSecret: "shared secret of the app",
      permissions: { allow: ["Edit"] },
    };
    const reader = createAgent({ ...options, sessionStore: sqliteStore({ path }) });
    expect((await reader.run("Read notes.md", { sessionId: "notes" })).subtype).toBe("success");
    const editor = createAgent({ ...options, sessionStore: sqliteStore({ path }) });
    const edited = await editor.run("Make it final", { sessionId: "notes" });
    expect(edited.steps[0]!.toolCalls[0]!.isError).toBe(false);
    expect(readFileSync(join(cwd, "notes.md"), "utf8")).toBe("a final\n");
    rmSync(cwd, { recursive: true, force: true });
  });

  it("with another approvalSecret the stored records do not hold: Edit asks for a Read first", async () => {
    const cwd = makeTempDir("skein-sessions-");
    writeFileSync(join(cwd, "notes.md"), "a draft\n");
    const store = memoryStore();
    const model = readThenEdit();
    const options = { cwd, model, sessionStore: store, permissions: { allow: ["Edit"] } };
    await createAgent({ ...options, approvalSecret: "the first secret here" }).run("Read", {
      sessionId: "n",
    });
    const edited = await createAgent({ ...options, approvalSecret: "another secret entirely" }).run(
      "Edit",
      {
        sessionId: "n",
      },
    );
    const call = edited.steps[0]!.toolCalls[0]!;
    expect(call.isError).toBe(true);
    expect(String(call.result.content)).toMatch(/Read/);
    expect(readFileSync(join(cwd, "notes.md"), "utf8")).toBe("a draft\n");
    rmSync(cwd, { recursive: true, force: true });
  });
});
