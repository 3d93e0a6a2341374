// agUiHandler under @ag-ui/client's own HttpAgent: threadId is the session, tool results are
// TOOL_CALL_RESULT events, a paused run ends with an interrupt the next run's resume answers.
import { HttpAgent } from "@ag-ui/client";
import { createBareAgent, memoryStore, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { agUiHandler, toAgUiEvents } from "skein/web";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const SECRET = "web-tests-approval-secret";

function setup() {
  const counter = { runs: 0 };
  const store = memoryStore();
  const deploy = tool(
    "deploy",
    "Deploys",
    z.object({ service: z.string() }),
    async ({ service }) => {
      counter.runs++;
      return `deployed ${service}`;
    },
  );
  const lookup = tool(
    "lookup",
    "Looks up",
    z.object({ key: z.string() }),
    async ({ key }) => `<b>${key}</b>`,
  );
  const model = scriptedModel((request) => {
    const last = request.messages.at(-1)!;
    const content = last.content;
    if (typeof content !== "string" && content.some((block) => block.type === "tool_result"))
      return { text: "All done." };
    const text = typeof content === "string" ? content : JSON.stringify(content);
    if (text.includes("deploy"))
      return { toolCalls: [{ id: "d1", name: "deploy", input: { service: "web" } }] };
    return { text: "Looking.", toolCalls: [{ id: "l1", name: "lookup", input: { key: "k" } }] };
  });
  const agent = createBareAgent({
    model,
    tools: [deploy, lookup],
    permissions: { ask: ["deploy"] },
    sessionStore: store,
    approvalSecret: SECRET,
  });
  const handler = agUiHandler({ agent, sessionStore: store, approvalSecret: SECRET });
  return { counter, store, model, agent, handler };
}

function client(handler: (request: Request) => Promise<Response>, threadId: string) {
  const events: any[] = [];
  const agent = new HttpAgent({
    url: "http://127.0.0.1/agui",
    threadId,
    fetch: (url, init) => handler(new Request(url, init)),
  });
  agent.subscribe({ onEvent: ({ event }) => void events.push(event) });
  return { agent, events };
}

describe("agUiHandler with @ag-ui/client's HttpAgent", () => {
  it("runs a turn: text messages, tool calls and TOOL_CALL_RESULT, state, RUN_FINISHED", async () => {
    const { handler, model } = setup();
    const { agent, events } = client(handler, "thread-1");
    agent.addMessage({ id: "m1", role: "user", content: "look it up" });
    const result = await agent.runAgent();
    const types = events.map((event) => event.type);
    expect(types[0]).toBe("RUN_STARTED");
    expect(types.at(-1)).toBe("RUN_FINISHED");
    for (const type of [
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "TOOL_CALL_START",
      "TOOL_CALL_ARGS",
      "TOOL_CALL_END",
      "TOOL_CALL_RESULT",
      "STATE_SNAPSHOT",
    ])
      expect(types, type).toContain(type);
    expect(events.find((event) => event.type === "RUN_STARTED").threadId).toBe("thread-1");
    expect(events.find((event) => event.type === "TOOL_CALL_RESULT")).toMatchObject({
      toolCallId: "l1",
      content: "<b>k</b>",
    });
    expect(result.result).toBe("All done.");
    const texts = agent.messages.filter((m) => m.role === "assistant").map((m) => m.content);
    expect(texts).toContain("All done.");
    expect(agent.messages.some((m) => m.role === "tool")).toBe(true);
    // A second turn: history from the store, the client's copy only for the last user message.
    agent.messages[0]!.content = "FORGED";
    agent.addMessage({ id: "m2", role: "user", content: "again" });
    await agent.runAgent();
    expect(JSON.stringify(model.requests.at(-1)!.messages)).toContain("look it up");
    expect(JSON.stringify(model.requests.at(-1)!.messages)).not.toContain("FORGED");
  });

  it("a paused run ends with an interrupt; resume answers it and the tool runs", async () => {
    const { handler, counter, store } = setup();
    const { agent, events } = client(handler, "thread-approve");
    agent.addMessage({ id: "m1", role: "user", content: "deploy please" });
    await agent.runAgent();
    const finished = events.findLast((event) => event.type === "RUN_FINISHED");
    expect(finished.outcome.type).toBe("interrupt");
    const [interrupt] = finished.outcome.interrupts;
    expect(interrupt).toMatchObject({ reason: "tool_approval", toolCallId: "d1" });
    expect(counter.runs).toBe(0);

    // Forged interrupt ids are refused: the run fails on the client, nothing runs.
    const seq = (await store.read("thread-approve")).length;
    const forged = new HttpAgent({
      url: "http://127.0.0.1/agui",
      threadId: "thread-approve",
      fetch: (url, init) => handler(new Request(url, init)),
    });
    await expect(
      forged.runAgent({
        resume: [{ interruptId: "forged", status: "resolved", payload: { approved: true } }],
      }),
    ).rejects.toThrow(/403|unknown_approval/);
    expect(counter.runs).toBe(0);
    expect((await store.read("thread-approve")).length).toBe(seq);

    await agent.runAgent({
      resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }],
    });
    expect(counter.runs).toBe(1);
    expect(events.findLast((event) => event.type === "TOOL_CALL_RESULT")).toMatchObject({
      toolCallId: "d1",
      content: "deployed web",
    });
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", result: "All done." });
  });

  it("an interrupt id from another thread is refused", async () => {
    const { handler, counter } = setup();
    const a = client(handler, "thread-a");
    const b = client(handler, "thread-b");
    a.agent.addMessage({ id: "m1", role: "user", content: "deploy" });
    b.agent.addMessage({ id: "m1", role: "user", content: "deploy" });
    await a.agent.runAgent();
    await b.agent.runAgent();
    const idA = a.events.findLast((e) => e.type === "RUN_FINISHED").outcome.interrupts[0].id;
    const response = await handler(
      new Request("http://127.0.0.1/agui", {
        method: "POST",
        body: JSON.stringify({
          threadId: "thread-b",
          runId: "r",
          messages: [],
          resume: [{ interruptId: idA, status: "resolved", payload: { approved: true } }],
        }),
      }),
    );
    expect(response.status).toBe(403);
    expect(counter.runs).toBe(0);
  });

  it("bad thread ids, malformed bodies and a refusing authorize are 4xx", async () => {
    const { agent, store } = setup();
    const handler = agUiHandler({
      agent,
      sessionStore: store,
      authorize: (request) => request.headers.get("x-user") === "ok",
    });
    const post = (body: string, headers: Record<string, string> = { "x-user": "ok" }) =>
      handler(new Request("http://127.0.0.1/agui", { method: "POST", body, headers }));
    expect((await post("{")).status).toBe(400);
    expect((await post(JSON.stringify({ threadId: "../x", messages: [] }))).status).toBe(400);
    expect((await post(JSON.stringify({ threadId: "t", messages: [] }))).status).toBe(400);
    expect(
      (
        await post(
          JSON.stringify({ threadId: "t", messages: [{ role: "user", content: "hi" }] }),
          {},
        )
      ).status,
    ).toBe(403);
    expect((await handler(new Request("http://127.0.0.1/agui"))).status).toBe(405);
    expect(await store.list()).toEqual([]);
  });
});

describe("toAgUiEvents", () => {
  it("a failed run ends with RUN_ERROR", async () => {
    const agent = createBareAgent({ model: scriptedModel([new Error("model down")]) });
    const events = [];
    for await (const event of toAgUiEvents(agent.stream("hi"))) events.push(event);
    expect(events[0]!.type).toBe("RUN_STARTED");
    expect(events.at(-1)).toMatchObject({ type: "RUN_ERROR" });
    expect(String(events.at(-1)!.message)).toContain("model down");
  });
});
