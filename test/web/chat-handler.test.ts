// chatHandler through useChat's own client (ai's AbstractChat and DefaultChatTransport): history
// from the store, approvals answered by the next request, regenerate, resumable streams, and
// hostile requests refused with a 4xx while nothing runs.
import { createServer } from "node:http";
import {
  createBareAgent,
  type Model,
  type ModelStreamEvent,
  memoryStore,
  type SessionStore,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { chatHandler, toNodeHandler } from "skein/web";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { closeServer, listenLocal } from "../support/servers.ts";
import { TestChat } from "./chat-client.ts";

const SECRET = "web-tests-approval-secret";

function deployTool(counter: { runs: number }) {
  return tool(
    "deploy",
    "Deploys a service",
    z.object({ service: z.string() }),
    async ({ service }) => {
      counter.runs++;
      return `deployed ${service}`;
    },
  );
}

/** A chat agent: `deploy` asks for approval; the script answers per request. */
function setup(script?: Parameters<typeof scriptedModel>[0]) {
  const counter = { runs: 0 };
  const store = memoryStore();
  const model = scriptedModel(
    script ??
      ((request) => {
        const last = request.messages.at(-1)!;
        const content = typeof last.content === "string" ? last.content : last.content;
        const hasResult =
          typeof content !== "string" && content.some((block) => block.type === "tool_result");
        if (hasResult) return { text: "Deployment finished." };
        const text =
          typeof content === "string"
            ? content
            : content.map((block) => (block.type === "text" ? block.text : "")).join("");
        if (text.includes("deploy"))
          return { toolCalls: [{ id: "call-1", name: "deploy", input: { service: "api" } }] };
        return { text: `You said: ${text}` };
      }),
  );
  const agent = createBareAgent({
    model,
    tools: [deployTool(counter)],
    permissions: { ask: ["deploy"] },
    sessionStore: store,
    approvalSecret: SECRET,
  });
  const handler = chatHandler({ agent, sessionStore: store, approvalSecret: SECRET });
  return { counter, store, model, agent, handler };
}

const post = (handler: (r: Request) => Promise<Response>, body: unknown, init: RequestInit = {}) =>
  handler(
    new Request("http://127.0.0.1/api/chat", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
      ...init,
    }),
  );

const userMessage = (text: string, id = `u-${text.length}`) => ({
  id,
  role: "user",
  parts: [{ type: "text", text }],
});

async function lastSeq(store: SessionStore, id: string): Promise<number> {
  return (await store.read(id)).at(-1)?.seq ?? 0;
}

async function expectJsonError(response: Response, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/json");
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(10);
  return body;
}

describe("chatHandler with useChat's client", () => {
  it("streams a reply; history comes from the store, never from the client's messages", async () => {
    const { handler, model } = setup();
    const chat = new TestChat("chat-1", handler);
    await chat.sendMessage({ text: "hello" });
    expect(chat.error).toBeUndefined();
    expect(chat.text()).toBe("You said: hello");
    // The client rewrites its history; the server reads only the last user message.
    chat.messages[0]!.parts = [{ type: "text", text: "FORGED history" }];
    await chat.sendMessage({ text: "again" });
    expect(chat.text()).toBe("You said: again");
    const request = JSON.stringify(model.requests[1]!.messages);
    expect(request).toContain("hello");
    expect(request).not.toContain("FORGED");
  });

  it("a call that asks pauses with an approval request; the answer resumes it and the tool runs", async () => {
    const { handler, counter, store } = setup();
    const chat = new TestChat("chat-approve", handler);
    await chat.sendMessage({ text: "please deploy" });
    const [pending] = chat.pendingApprovals();
    expect(pending?.toolCallId).toBe("call-1");
    expect(pending?.id).not.toBe("call-1");
    expect(counter.runs).toBe(0);
    const assistantId = chat.messages.at(-1)!.id;
    await chat.addToolApprovalResponse({ id: pending!.id, approved: true });
    await chat.sendMessage();
    expect(chat.error).toBeUndefined();
    expect(counter.runs).toBe(1);
    // The continuation is the same assistant message: the tool's output, then the answer.
    expect(chat.messages.at(-1)!.id).toBe(assistantId);
    const tool = chat.messages.at(-1)!.parts.find((part: any) => part.toolCallId === "call-1");
    expect(tool).toMatchObject({ state: "output-available", output: "deployed api" });
    expect(chat.text()).toContain("Deployment finished.");
    // Replaying the answered request: refused, and nothing runs again.
    const replay = chat.requests.at(-1)!.body;
    const before = await lastSeq(store, "chat-approve");
    await expectJsonError(await post(handler, replay), 409, "not_paused");
    expect(counter.runs).toBe(1);
    expect(await lastSeq(store, "chat-approve")).toBe(before);
  });

  it("a denial from the page leaves the tool unrun and the model goes on", async () => {
    const { handler, counter } = setup();
    const chat = new TestChat("chat-deny", handler);
    await chat.sendMessage({ text: "deploy now" });
    const [pending] = chat.pendingApprovals();
    await chat.addToolApprovalResponse({ id: pending!.id, approved: false, reason: "not today" });
    await chat.sendMessage();
    expect(counter.runs).toBe(0);
    const part = chat.messages
      .at(-1)!
      .parts.find((each: any) => each.toolCallId === "call-1") as any;
    expect(part.state).toBe("output-error");
    expect(part.errorText).toContain("not today");
  });

  it("forged, foreign and earlier-pause approval ids are refused with a 4xx and nothing runs", async () => {
    const { handler, counter, store } = setup();
    const a = new TestChat("chat-a", handler);
    const b = new TestChat("chat-b", handler);
    await a.sendMessage({ text: "deploy a" });
    await b.sendMessage({ text: "deploy b" });
    const [approvalA] = a.pendingApprovals();
    const [approvalB] = b.pendingApprovals();
    // Same call id in both chats, different approval ids.
    expect(approvalA!.toolCallId).toBe(approvalB!.toolCallId);
    expect(approvalA!.id).not.toBe(approvalB!.id);
    const answer = (chat: TestChat, id: string) => {
      const messages = structuredClone(chat.messages) as any[];
      for (const part of messages.at(-1).parts)
        if (part.state === "approval-requested") {
          part.state = "approval-responded";
          part.approval = { id, approved: true };
        }
      return { id: chat.id, messages, trigger: "submit-message" };
    };
    const seqA = await lastSeq(store, "chat-a");
    // Made up.
    await expectJsonError(await post(handler, answer(a, "made-up")), 403, "unknown_approval");
    // Another chat's id for the same call id.
    await expectJsonError(await post(handler, answer(a, approvalB!.id)), 403, "unknown_approval");
    // Malformed answers.
    const malformed = answer(a, approvalA!.id);
    malformed.messages
      .at(-1)
      .parts.find((p: any) => p.state === "approval-responded").approval.approved = "yes";
    await expectJsonError(await post(handler, malformed), 400, "malformed_approval");
    expect(counter.runs).toBe(0);
    expect(await lastSeq(store, "chat-a")).toBe(seqA);

    // An id from an earlier pause: the same call pauses again (a fresh pause) after a denial...
    const earlier = approvalA!.id;
    const ok = await post(handler, answer(a, approvalA!.id));
    expect(ok.status).toBe(200);
    await ok.text();
    expect(counter.runs).toBe(1);
    await expectJsonError(await post(handler, answer(a, earlier)), 409, "not_paused");
    expect(counter.runs).toBe(1);
  });

  it("regenerate-message runs the prompt again on the same chat id; the replaced reply is kept in a fork", async () => {
    let n = 0;
    const { handler, store } = setup(() => ({ text: `reply ${++n}` }));
    const chat = new TestChat("chat-regen", handler);
    await chat.sendMessage({ text: "first" });
    await chat.sendMessage({ text: "second" });
    expect(chat.text()).toBe("reply 2");
    await chat.regenerate();
    expect(chat.error).toBeUndefined();
    expect(chat.text()).toBe("reply 3");
    expect(chat.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    const log = (await store.read("chat-regen")).map((row) => JSON.parse(row.data));
    expect(log[0].type).toBe("origin");
    const text = JSON.stringify(log);
    expect(text).toContain("reply 1");
    expect(text).toContain("reply 3");
    expect(text).not.toContain("reply 2");
    const kept = JSON.stringify((await store.read(log[0].from)).map((row) => row.data));
    expect(kept).toContain("reply 2");
  });

  it("a chat's next message after a paused run is refused until the approvals are answered", async () => {
    const { handler } = setup();
    const chat = new TestChat("chat-paused", handler);
    await chat.sendMessage({ text: "deploy" });
    const response = await post(handler, {
      id: "chat-paused",
      messages: [userMessage("something else")],
      trigger: "submit-message",
    });
    await expectJsonError(response, 409, "awaiting_approval");
  });
});

/** A model whose reply streams word by word, each word released by the test. */
function gatedModel() {
  const words = ["one ", "two ", "three ", "four"];
  let release: (() => void) | undefined;
  let released = 0;
  let waiting: Promise<void> | undefined;
  const model: Model = {
    provider: "test",
    modelId: "gated",
    async *stream(): AsyncGenerator<ModelStreamEvent> {
      for (const [index, word] of words.entries()) {
        while (released <= index) {
          waiting ??= new Promise<void>((resolve) => {
            release = resolve;
          });
          await waiting;
        }
        yield { type: "text_delta", text: word };
      }
      yield {
        type: "message",
        message: { role: "assistant", content: [{ type: "text", text: words.join("") }] },
        stopReason: "end_turn",
      };
    },
  };
  return {
    model,
    step(count = 1) {
      released += count;
      waiting = undefined;
      release?.();
    },
  };
}

describe("resumable streams (GET .../<chatId>/stream)", () => {
  it("204 for a chat never used and for a finished or paused chat", async () => {
    const { handler } = setup();
    const get = (id: string) => handler(new Request(`http://127.0.0.1/api/chat/${id}/stream`));
    expect((await get("never-used")).status).toBe(204);
    const chat = new TestChat("chat-p", handler);
    await chat.sendMessage({ text: "deploy" });
    expect((await get("chat-p")).status).toBe(204);
  });

  it("a reconnect mid-stream replays the message from its start, then live, to the same final message", async () => {
    const gate = gatedModel();
    const store = memoryStore();
    const agent = createBareAgent({
      model: gate.model,
      sessionStore: store,
      approvalSecret: SECRET,
    });
    const handler = chatHandler({ agent, sessionStore: store });
    const first = new TestChat("chat-live", handler);
    const sending = first.sendMessage({ text: "count" });
    gate.step(2);
    // Wait until the client saw some text, then drop its connection.
    await expect.poll(() => first.text(), { timeout: 60_000 }).toBe("one two ");
    await first.stop();
    await sending;
    // A second client (a reloaded page) reconnects while the run goes on.
    const second = new TestChat("chat-live", handler);
    const resumed = second.resumeStream();
    gate.step(2);
    await resumed;
    expect(second.text()).toBe("one two three four");
    // Nothing runs now.
    const after = await handler(new Request("http://127.0.0.1/api/chat/chat-live/stream"));
    expect(after.status).toBe(204);
    // The store has the whole reply once.
    expect(JSON.stringify((await store.read("chat-live")).map((row) => row.data))).toContain(
      "one two three four",
    );
  });

  it("a second POST while a run of the chat is in progress is a 409", async () => {
    const gate = gatedModel();
    const store = memoryStore();
    const agent = createBareAgent({
      model: gate.model,
      sessionStore: store,
      approvalSecret: SECRET,
    });
    const handler = chatHandler({ agent, sessionStore: store });
    const response = await post(handler, { id: "busy", messages: [userMessage("go")] });
    expect(response.status).toBe(200);
    await expectJsonError(
      await post(handler, { id: "busy", messages: [userMessage("again")] }),
      409,
      "run_in_progress",
    );
    gate.step(4);
    expect(await response.text()).toContain("[DONE]");
  });
});

describe("hostile requests", () => {
  it("bad session ids, malformed bodies and unknown triggers are 400s with a JSON error", async () => {
    const { handler, store } = setup();
    for (const id of ["", "../etc", "a b", "x".repeat(129), 42, null, "<script>"])
      await expectJsonError(
        await post(handler, { id, messages: [userMessage("hi")] }),
        400,
        "bad_session_id",
      );
    await expectJsonError(await post(handler, "{not json"), 400, "malformed_body");
    await expectJsonError(await post(handler, "[1,2]"), 400, "malformed_body");
    await expectJsonError(await post(handler, { id: "ok", messages: "x" }), 400, "malformed_body");
    await expectJsonError(
      await post(handler, { id: "ok", messages: [userMessage("hi")], trigger: "rm -rf" }),
      400,
      "malformed_body",
    );
    await expectJsonError(
      await post(handler, { id: "ok", messages: [{ role: "system", parts: [] }] }),
      400,
      "malformed_body",
    );
    await expectJsonError(
      await post(handler, { id: "ok", messages: [userMessage("   ")] }),
      400,
      "empty_message",
    );
    await expectJsonError(
      await handler(new Request("http://127.0.0.1/api/chat/bad%20id/stream")),
      400,
      "bad_session_id",
    );
    await expectJsonError(
      await handler(new Request("http://127.0.0.1/api/chat", { method: "PUT", body: "{}" })),
      405,
      "method_not_allowed",
    );
    expect(await store.list()).toEqual([]);
  });

  it("a body over the limit is a 413, declared or not, and nothing is written", async () => {
    const store = memoryStore();
    const agent = createBareAgent({
      model: scriptedModel([]),
      sessionStore: store,
      approvalSecret: SECRET,
    });
    const handler = chatHandler({ agent, sessionStore: store, maxBodyBytes: 1000 });
    const big = JSON.stringify({ id: "big", messages: [userMessage("x".repeat(2000))] });
    await expectJsonError(await post(handler, big), 413, "body_too_large");
    // Streamed without a length.
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(big));
        controller.close();
      },
    });
    await expectJsonError(
      await handler(
        new Request("http://127.0.0.1/api/chat", {
          method: "POST",
          body: stream,
          duplex: "half",
        } as RequestInit),
      ),
      413,
      "body_too_large",
    );
    // The default limit is 1 MB.
    const defaultHandler = chatHandler({ agent, sessionStore: store });
    await expectJsonError(
      await post(
        defaultHandler,
        JSON.stringify({ id: "big", messages: [userMessage("x".repeat(1_000_001))] }),
      ),
      413,
      "body_too_large",
    );
    expect(await store.list()).toEqual([]);
  });

  it("authorize decides who may read or drive a session: false is a 403 and nothing is read or written", async () => {
    const { agent, store } = setup();
    const seen: string[] = [];
    const handler = chatHandler({
      agent,
      sessionStore: store,
      authorize: (request, sessionId) => {
        seen.push(sessionId);
        return request.headers.get("x-user") === sessionId.split("-")[0];
      },
    });
    const alice = new TestChat("alice-1", handler, { headers: { "x-user": "alice" } });
    await alice.sendMessage({ text: "hi" });
    expect(alice.text()).toBe("You said: hi");
    const mallory = new TestChat("alice-1", handler, { headers: { "x-user": "mallory" } });
    await mallory.sendMessage({ text: "steal" });
    expect(mallory.error?.message).toContain("forbidden");
    await expectJsonError(
      await handler(
        new Request("http://127.0.0.1/api/chat/alice-1/stream", { headers: { "x-user": "bob" } }),
      ),
      403,
      "forbidden",
    );
    // A throwing authorize refuses too.
    const throwing = chatHandler({
      agent,
      sessionStore: store,
      authorize: () => {
        throw new Error("auth backend down");
      },
    });
    await expectJsonError(
      await post(throwing, { id: "alice-2", messages: [userMessage("hi")] }),
      403,
      "forbidden",
    );
    expect((await store.list()).map((s) => s.sessionId)).toEqual(["alice-1"]);
    expect(JSON.stringify(await store.read("alice-1"))).not.toContain("steal");
    expect(seen).toContain("alice-1");
  });

  it("bad options are a ConfigurationError at once", () => {
    const { agent, store } = setup();
    expect(() => chatHandler({ agent, sessionStore: undefined as never })).toThrow(/sessionStore/);
    expect(() => chatHandler({ agent, sessionStore: store, approvalSecret: "short" })).toThrow(
      /approvalSecret/,
    );
    expect(() => chatHandler({ agent, sessionStore: store, bogus: 1 } as never)).toThrow(/bogus/);
    expect(() => chatHandler({ agent, sessionStore: store, maxBodyBytes: 0 })).toThrow(
      /maxBodyBytes/,
    );
  });
});

describe("toNodeHandler", () => {
  const servers: ReturnType<typeof createServer>[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map(closeServer));
  });

  it("serves the same handler from node:http under any prefix, streaming, with 4xx answers intact", async () => {
    const { handler, counter } = setup();
    const server = createServer(toNodeHandler(handler));
    servers.push(server);
    const port = await listenLocal(server);
    const chat = new TestChat("node-chat", (request) => fetch(request), {
      api: `http://127.0.0.1:${port}/some/prefix/api/chat`,
    });
    await chat.sendMessage({ text: "deploy it" });
    const [pending] = chat.pendingApprovals();
    await chat.addToolApprovalResponse({ id: pending!.id, approved: true });
    await chat.sendMessage();
    expect(counter.runs).toBe(1);
    expect(chat.text()).toContain("Deployment finished.");
    const none = await fetch(`http://127.0.0.1:${port}/some/prefix/api/chat/node-chat/stream`);
    expect(none.status).toBe(204);
    const bad = await fetch(`http://127.0.0.1:${port}/api/chat`, { method: "POST", body: "nope" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.code).toBe("malformed_body");
  });
});
