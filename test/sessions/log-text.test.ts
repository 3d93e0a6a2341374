// The text of the entries the log writes per tool call and model reply (`reply`, `started`,
// `result`), which the journal builds directly rather than through JSON.stringify: the same text,
// whatever the call id holds.
import { createBareAgent, memoryStore } from "skein";
import { scriptedModel } from "skein/testing";
import { expect, test } from "vitest";
import { countingTool } from "../support/tools.ts";

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

  const replies = entries.filter((entry) => entry.type === "reply");
  expect(replies.map((entry) => Object.keys(entry))).toEqual(
    Array(2).fill(["type", "runId", "message", "usage", "stopReason"]),
  );
  expect(replies.map((entry) => [entry.runId, entry.stopReason])).toEqual([
    [runId, "tool_use"],
    [runId, "end_turn"],
  ]);
  expect((replies[0]!.message as { content: { id?: string }[] }).content[0]!.id).toBe(odd);

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
