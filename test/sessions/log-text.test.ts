// The text of the entries the log writes per tool call and model reply (`reply`, with the last
// batch's results message in it, `started`, `result`), which the journal builds directly rather
// than through JSON.stringify: the same text, whatever the call id holds.
import { createBareAgent, loadSession, memoryStore } from "skein";
import { scriptedModel } from "skein/testing";
import { expect, test } from "vitest";
import { countingTool } from "../support/tools.ts";

/** The roles of a run with two tool batches and a final answer. */
const TWO_BATCHES_AND_ANSWER = ["user", "assistant", "user", "assistant", "user", "assistant"];

test("reply, started and result entries are the JSON text of their fields, for any call id", async () => {
  const store = memoryStore();
  const charge = countingTool("charge");
  const odd = 'c"1\\ \u2028 é \u0001';
  const model = scriptedModel([
    {
      toolCalls: [
        { id: odd, name: "charge", input: { target: 'a"b' } },
        { id: "c2", name: "charge", input: { target: 'a"b' } },
        { id: "c3", name: "charge", input: { target: "other" } },
      ],
    },
    { text: "Done." },
  ]);
  const agent = createBareAgent({ model, tools: [charge.tool], sessionStore: store });
  expect((await agent.run("Charge.", { sessionId: "s" })).subtype).toBe("success");

  const rows = await store.read("s");
  for (const row of rows) expect(row.data).toBe(JSON.stringify(JSON.parse(row.data)));
  const entries = rows.map((row) => JSON.parse(row.data) as Record<string, unknown>);
  const runId = entries[0]!.runId;
  const started = entries.filter((entry) => entry.type === "started");
  expect(started.map((entry) => Object.keys(entry))).toEqual(
    Array(3).fill(["type", "runId", "callId", "name", "inputHash"]),
  );
  expect(started.map((entry) => [entry.runId, entry.callId, entry.name])).toEqual([
    [runId, odd, "charge"],
    [runId, "c2", "charge"],
    [runId, "c3", "charge"],
  ]);
  const hashes = started.map((entry) => entry.inputHash as string);
  for (const hash of hashes) expect(hash).toMatch(/^[0-9a-f]{16}$/);
  // The same input hashes alike, another input otherwise.
  expect(hashes[0]).toBe(hashes[1]);
  expect(hashes[2]).not.toBe(hashes[0]);

  const replies = entries.filter(
    (entry) => entry.type === "reply" || entry.type === "results_reply",
  );
  // The second reply carries the first batch's results message: one row, not two.
  expect(replies.map((entry) => Object.keys(entry))).toEqual([
    ["type", "runId", "message", "usage", "stopReason"],
    ["type", "runId", "results", "message", "usage", "stopReason"],
  ]);
  expect(replies.map((entry) => entry.type)).toEqual(["reply", "results_reply"]);
  expect(replies.map((entry) => [entry.runId, entry.stopReason])).toEqual([
    [runId, "tool_use"],
    [runId, "end_turn"],
  ]);
  expect((replies[0]!.message as { content: { id?: string }[] }).content[0]!.id).toBe(odd);
  expect(replies[1]!.results).toEqual({
    role: "user",
    content: [odd, "c2", "c3"].map((id, index) => ({
      type: "tool_result",
      tool_use_id: id,
      content: index < 2 ? 'charge ran on a"b' : "charge ran on other",
      is_error: false,
    })),
  });
  expect(entries.map((entry) => entry.type)).not.toContain("results");

  const results = entries.filter((entry) => entry.type === "result");
  expect(results.map((entry) => Object.keys(entry))).toEqual(
    Array(3).fill(["type", "runId", "callId", "name", "result"]),
  );
  expect(results.map((entry) => [entry.runId, entry.callId, entry.result])).toEqual([
    [runId, odd, { content: 'charge ran on a"b' }],
    [runId, "c2", { content: 'charge ran on a"b' }],
    [runId, "c3", { content: "charge ran on other" }],
  ]);
});

test("a log written with the results message in a row of its own (before it rode in the reply) reads the same", async () => {
  const store = memoryStore();
  const charge = countingTool("charge");
  const script = [
    { toolCalls: [{ id: "c1", name: "charge", input: { target: "a" } }] },
    { toolCalls: [{ id: "c2", name: "charge", input: { target: "b" } }] },
    { text: "Done." },
    { text: "Again." },
  ];
  const agent = createBareAgent({
    model: scriptedModel(script),
    tools: [charge.tool],
    sessionStore: store,
  });
  expect((await agent.run("Charge.", { sessionId: "s" })).subtype).toBe("success");

  // The same log as the earlier layout wrote it: each results message an entry before its reply.
  const older = memoryStore();
  const rows: string[] = [];
  for (const { data } of await store.read("s")) {
    const { results, ...entry } = JSON.parse(data);
    if (entry.type === "results_reply") {
      rows.push(JSON.stringify({ type: "results", runId: entry.runId, message: results }));
      entry.type = "reply";
    }
    rows.push(JSON.stringify(entry));
  }
  expect(rows.length).toBe((await store.read("s")).length + 2);
  await older.append("s", 1, rows);

  const now = await loadSession(store, "s");
  const before = await loadSession(older, "s");
  expect(before?.messages).toEqual(now?.messages);
  expect(now?.messages.map((message) => message.role)).toEqual(TWO_BATCHES_AND_ANSWER);
  // Both continue with the same transcript.
  const requests = [];
  for (const log of [store, older]) {
    const model = scriptedModel([{ text: "Again." }]);
    const next = createBareAgent({ model, tools: [charge.tool], sessionStore: log });
    expect((await next.run("More?", { sessionId: "s" })).subtype).toBe("success");
    requests.push(model.requests[0]!.messages);
  }
  expect(requests[1]).toEqual(requests[0]);
});

test("a reply the engine answered in part (a repeated id) carries the last batch's results too", async () => {
  const store = memoryStore();
  const charge = countingTool("charge");
  const model = scriptedModel([
    { toolCalls: [{ id: "c1", name: "charge", input: { target: "a" } }] },
    { toolCalls: [{ id: "c1", name: "charge", input: { target: "b" } }] },
    { text: "Done." },
    { text: "Again." },
  ]);
  const agent = createBareAgent({ model, tools: [charge.tool], sessionStore: store });
  expect((await agent.run("Charge.", { sessionId: "s" })).subtype).toBe("success");
  const entries = (await store.read("s")).map((row) => JSON.parse(row.data));
  const second = entries.find((entry) => entry.answered !== undefined);
  expect(second?.type).toBe("results_reply");
  expect(
    second?.results.content.map((block: { tool_use_id: string }) => block.tool_use_id),
  ).toEqual(["c1"]);
  // The transcript holds both batches' results, and the next run sends one per tool_use.
  const loaded = await loadSession(store, "s");
  expect(loaded?.messages.map((message) => message.role)).toEqual(TWO_BATCHES_AND_ANSWER);
  expect((await agent.run("More?", { sessionId: "s" })).subtype).toBe("success");
  const sent = model.requests[3]!.messages;
  const uses = sent.flatMap((message) =>
    typeof message.content === "string"
      ? []
      : message.content.flatMap((block) => (block.type === "tool_use" ? [block.id] : [])),
  );
  const answers = sent.flatMap((message) =>
    typeof message.content === "string"
      ? []
      : message.content.flatMap((block) =>
          block.type === "tool_result" ? [block.tool_use_id] : [],
        ),
  );
  expect(answers).toEqual(uses);
  expect(uses).toHaveLength(2);
});
