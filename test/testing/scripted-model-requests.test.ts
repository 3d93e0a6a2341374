// scriptedModel records each request as it was sent: its JSON text taken at the call, read back
// into objects on first read; a request JSON cannot write is copied whole instead.
import { inspect } from "node:util";
import { createBareAgent, type Message, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { expect, test } from "vitest";
import { z } from "zod";

const echo = tool("echo", "Echo", z.object({ n: z.number() }), ({ n }) => `${n}`);

test("a request is kept as it was when the model was called, whatever changes afterwards", async () => {
  const model = scriptedModel([
    { toolCalls: [{ id: "c1", name: "echo", input: { n: 1 } }] },
    { text: "done" },
  ]);
  const result = await createBareAgent({ model, tools: [echo] }).run("go");
  expect(model.requests).toHaveLength(2);
  expect(model.requests.map((request) => request.messages.length)).toEqual([1, 3]);
  // The transcript's objects are the app's now: changing them changes no recorded request.
  (result.messages[0] as { content: string }).content = "changed";
  (result.messages[1]!.content as { input?: unknown }[])[0]!.input = { n: 99 };
  expect(model.requests[1]!.messages[0]).toEqual({ role: "user", content: "go" });
  expect(model.requests[1]!.messages[1]).toEqual({
    role: "assistant",
    content: [{ type: "tool_use", id: "c1", name: "echo", input: { n: 1 } }],
  });
  expect(model.requests[0]!.tools.map((spec) => spec.name)).toEqual(["echo"]);
});

test("an entry read twice is one object, which the test may change; the array behaves as one", async () => {
  const model = scriptedModel([{ text: "a" }, { text: "b" }]);
  const agent = createBareAgent({ model });
  await agent.run("one");
  await agent.run("two");
  const first = model.requests[0]!;
  expect(model.requests[0]).toBe(first);
  first.system = "edited";
  expect(model.requests[0]!.system).toBe("edited");
  expect(Object.keys(model.requests)).toEqual(["0", "1"]);
  expect([...model.requests].map((request) => request.messages.at(-1))).toEqual([
    { role: "user", content: "one" },
    { role: "user", content: "two" },
  ]);
  expect(JSON.parse(JSON.stringify(model.requests))).toHaveLength(2);
  // An entry assigned before it was read is what was assigned, whatever it is.
  await agent.run("three");
  (model.requests as unknown[])[2] = undefined;
  expect(model.requests[2]).toBeUndefined();
  (model.requests as unknown[])[1] = null;
  expect(model.requests[1]).toBeNull();
  expect(model.requests).toHaveLength(3);
});

test("console.log and util.inspect show the requests, not accessors", async () => {
  const model = scriptedModel([{ text: "a" }]);
  await createBareAgent({ model }).run("shown");
  const shown = inspect(model.requests, { depth: 5 });
  expect(shown).not.toContain("Getter");
  expect(shown).toContain("shown");
});

test("a request JSON cannot write (a BigInt in it) is copied whole, as it was sent", async () => {
  const model = scriptedModel([{ text: "ok" }]);
  const messages: Message[] = [{ role: "user", content: "hi" }];
  const request = { system: "", messages, tools: [], extra: 10n };
  const events = [];
  for await (const event of model.stream(request as never, {
    signal: new AbortController().signal,
  }))
    events.push(event);
  expect(events.at(-1)).toMatchObject({ type: "message" });
  messages.push({ role: "assistant", content: "later" });
  expect(model.requests[0]).toEqual({ ...request, messages: [{ role: "user", content: "hi" }] });
});
