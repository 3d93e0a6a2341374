/**
 * Gemini's thought signatures outlive the run that received them: a paused run's state (JSON),
 * a continued session (the SQLite log), and a move to another provider, which never sees them.
 * Eager execution starts a call while its reply still streams.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { anthropic, createBareAgent, google, type RunState } from "skein";
import { sqliteStore } from "skein/sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { closeMockServers } from "../support/servers.ts";
import { bodies, echoTool, FAST, serve } from "./helpers.ts";

afterEach(closeMockServers);

const make = (url: string) =>
  google({ baseURL: url, apiKey: "test", model: "gemini-3-pro", ...FAST });

/** The thought signatures of each model turn of a request, as sent. */
function signaturesSent(body: any): string[][] {
  return body.contents
    .filter((content: any) => content.role === "model")
    .map((content: any) =>
      content.parts.flatMap((part: any) => (part.thoughtSignature ? [part.thoughtSignature] : [])),
    );
}

describe("Gemini thought signatures across runs", () => {
  it("a paused approval's state, through JSON, resumes with every signature sent back", async () => {
    const server = await serve([
      { thinking: "first think", toolCalls: [{ name: "echo", input: { text: "one" } }] },
      { thinking: "second think", toolCalls: [{ name: "echo", input: { text: "two" } }] },
      { thinking: "last think", text: "finished" },
    ]);
    const seen: string[] = [];
    const agent = createBareAgent({
      model: make(server.url),
      tools: [echoTool(seen)],
      permissions: { ask: ["echo"] },
    });
    const paused = await agent.run("go");
    expect(paused.subtype).toBe("paused");
    const state = JSON.parse(JSON.stringify(paused.state)) as RunState;
    const first = await agent.resume(state, { approvals: { [paused.pending![0]!.id]: true } });
    expect(first.subtype).toBe("paused");
    const again = JSON.parse(JSON.stringify(first.state)) as RunState;
    const done = await agent.resume(again, { approvals: { [first.pending![0]!.id]: true } });
    expect(done).toMatchObject({ subtype: "success", result: "finished" });
    expect(seen).toEqual(["one", "two"]);
    // No request was refused: each signature came back on its call.
    const sent = bodies(server);
    expect(sent).toHaveLength(3);
    expect(server.requests.every((request) => request.turn !== undefined)).toBe(true);
    const [, second, third] = sent.map(signaturesSent);
    expect(second![0]![0]).toMatch(/^mocksig_/);
    expect(third!.map((parts) => parts[0])).toEqual([
      second![0]![0],
      expect.stringMatching(/^mocksig_/),
    ]);
    expect(third![0]![0]).not.toBe(third![1]![0]);
  });

  it("a continued session (SQLite log) sends the earlier run's signatures back", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "skein-gemini-"));
    try {
      const server = await serve([
        { thinking: "think", toolCalls: [{ name: "echo", input: { text: "one" } }] },
        { thinking: "more", text: "first answer" },
        { text: "second answer" },
      ]);
      const file = path.join(dir, "sessions.db");
      const options = { approvalSecret: "a test secret, long enough", tools: [echoTool()] };
      const before = sqliteStore({ path: file });
      const first = await createBareAgent({
        model: make(server.url),
        sessionStore: before,
        ...options,
      }).run("go");
      expect(first.result).toBe("first answer");
      await before.close();
      const store = sqliteStore({ path: file });
      const second = await createBareAgent({
        model: make(server.url),
        sessionStore: store,
        ...options,
      }).run("and again", { sessionId: first.sessionId });
      await store.close();
      expect(second.result).toBe("second answer");
      const last = bodies(server).at(-1);
      const signatures = signaturesSent(last);
      const received = bodies(server)[1]!;
      expect(signatures[0]![0]).toEqual(signaturesSent(received)[0]![0]);
      expect(signatures[0]![0]).toMatch(/^mocksig_/);
      // The second model turn's signature came on an empty text part: back on it.
      expect(last.contents[3]).toEqual({
        role: "model",
        parts: [
          { text: "more", thought: true },
          { text: "first answer" },
          { text: "", thoughtSignature: expect.stringMatching(/^mocksig_/) },
        ],
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a transcript moved to Anthropic goes without Gemini's signatures and thinking", async () => {
    const server = await serve([
      { thinking: "think", toolCalls: [{ name: "echo", input: { text: "one" } }] },
      { thinking: "more", text: "first answer" },
      { text: "from claude" },
    ]);
    const first = await createBareAgent({ model: make(server.url), tools: [echoTool()] }).run("go");
    const claude = createBareAgent({
      model: anthropic({ baseURL: server.url, apiKey: "test", ...FAST }),
      tools: [echoTool()],
    });
    const second = await claude.run("next", { messages: first.messages });
    if (second.subtype !== "success") throw new Error(JSON.stringify(second.error));
    // The mock's Anthropic validation passed (no 400), and nothing of Gemini's went along.
    expect(second).toMatchObject({ subtype: "success", result: "from claude" });
    const sent = JSON.stringify(bodies(server).at(-1));
    expect(sent).not.toContain("mocksig_");
    expect(sent).not.toContain("providerData");
    expect(sent).not.toContain('"thinking"');
  });

  it("starts a concurrency-safe call while the reply still streams (eager execution)", async () => {
    const started: string[] = [];
    const server = await serve(({ index }) =>
      index === 0
        ? {
            toolCalls: [
              { name: "echo", input: { text: "early" } },
              { name: "echo", input: { text: "late" } },
            ],
            // The reply goes on after the calls: the calls start before it ends.
            gapMs: 50,
          }
        : { text: "ok" },
    );
    const agent = createBareAgent({
      model: make(server.url),
      tools: [echoTool(started, { safe: true })],
    });
    const events: string[] = [];
    for await (const event of agent.stream("go")) {
      if (event.type === "tool_start") events.push(`start ${event.callId}`);
      if (event.type === "message" && event.message.role === "assistant") events.push("message");
    }
    // Both calls started before the reply's final message was relayed.
    expect(events.slice(0, 3)).toEqual([
      expect.stringMatching(/^start /),
      expect.stringMatching(/^start /),
      "message",
    ]);
    expect(started.sort()).toEqual(["early", "late"]);
  });
});
