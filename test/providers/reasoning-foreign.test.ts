/**
 * Reasoning never goes to another provider: a session started on one protocol and continued on
 * another (the same SQLite session, a second run) goes without the first provider's opaque
 * reasoning (Responses' encrypted reasoning items, Gemini's thought signatures, Anthropic's
 * thinking signatures), and the new provider accepts the request (the mock server refuses what
 * the real API refuses). The same protocol at another origin counts as another provider.
 */
import { join } from "node:path";
import { anthropic, createBareAgent, google, type Model, openai } from "skein";
import { sqliteStore } from "skein/sqlite";
import type { MockTurn } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { type Exchange, type RecordingProxy, recordingProxy } from "../support/recording-proxy.ts";
import { closeMockServers } from "../support/servers.ts";
import { useTempDir } from "../support/temp.ts";
import { echoTool, FAST, serve } from "./helpers.ts";
import { GEMINI_REPLAY, opaqueGiven, RESPONSES_REPLAY, sseEvents } from "./replay-check.ts";

const dir = useTempDir("skein-foreign-");
const proxies: RecordingProxy[] = [];
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
  await closeMockServers();
});

type Name = "responses" | "gemini" | "anthropic" | "chat";

const MAKE: Record<Name, (url: string) => Model> = {
  responses: (url) =>
    openai({ baseURL: `${url}/v1`, apiKey: "test", api: "responses", model: "gpt-5", ...FAST }),
  gemini: (url) => google({ baseURL: url, apiKey: "test", model: "gemini-3-pro", ...FAST }),
  anthropic: (url) => anthropic({ baseURL: url, apiKey: "test", ...FAST }),
  chat: (url) => openai({ baseURL: `${url}/v1`, apiKey: "test", api: "chat", ...FAST }),
};

/** The opaque reasoning a provider gave in these exchanges, which no other provider may get. */
function opaqueOf(name: Name, exchanges: Exchange[]): string[] {
  if (name === "responses") {
    // The item's id and its encrypted content, each on its own.
    return opaqueGiven(RESPONSES_REPLAY, exchanges).flatMap((text) => {
      const item = JSON.parse(text);
      return [item.id, item.encrypted_content];
    });
  }
  if (name === "gemini") return opaqueGiven(GEMINI_REPLAY, exchanges);
  if (name === "anthropic")
    return exchanges.flatMap((exchange) =>
      sseEvents(exchange.response).flatMap(({ data }) =>
        data?.delta?.type === "signature_delta" ? [data.delta.signature as string] : [],
      ),
    );
  return [];
}

const SCRIPT: MockTurn[] = [
  { thinking: "which echo first", toolCalls: [{ name: "echo", input: { text: "one" } }] },
  { thinking: "the echo is back", text: "First answer." },
  { text: "Moved on." },
];

const PAIRS: [Name, Name][] = [
  ["responses", "anthropic"],
  ["responses", "chat"],
  ["responses", "gemini"],
  ["gemini", "anthropic"],
  ["gemini", "chat"],
  ["gemini", "responses"],
  ["anthropic", "responses"],
  ["chat", "responses"],
  ["anthropic", "gemini"],
  ["chat", "gemini"],
  // The same protocol at another origin is another provider too.
  ["responses", "responses"],
  ["gemini", "gemini"],
];

let count = 0;

describe("reasoning is never sent to another provider", () => {
  it.each(PAIRS)("a session started on %s, continued on %s", async (from, to) => {
    // Two servers: the second run's origin differs from the first's.
    const proxyFor = async () => {
      const server = await serve(SCRIPT);
      const proxy = await recordingProxy(server.url);
      proxies.push(proxy);
      return { server, proxy };
    };
    const first = await proxyFor();
    const second = await proxyFor();
    const path = join(dir, `foreign-${++count}.db`);
    const agentOn = (model: Model) =>
      createBareAgent({
        model,
        tools: [echoTool()],
        sessionStore: sqliteStore({ path }),
        approvalSecret: "a shared approval secret, long enough",
      });
    const started = await agentOn(MAKE[from](first.proxy.url)).run("go");
    expect(started).toMatchObject({ subtype: "success", result: "First answer." });
    const opaque = opaqueOf(from, first.proxy.exchanges);
    if (from !== "chat") expect(opaque.length).toBeGreaterThan(0);

    const moved = await agentOn(MAKE[to](second.proxy.url)).run("and now?", {
      sessionId: started.sessionId,
    });
    if (moved.subtype !== "success") throw new Error(JSON.stringify(moved.error));
    expect(moved.result).toBe("Moved on.");
    // Accepted as the real API would: the request reached the script (no 400).
    expect(second.server.requests.map((request) => request.turn)).toEqual([2]);
    const sent = second.proxy.exchanges.at(-1)!.request;
    for (const piece of opaque) expect(sent).not.toContain(piece);
    expect(sent).not.toContain("providerData");
    // The rest of the transcript went along: the call, its result, the answer.
    expect(sent).toContain("echo: one");
    expect(sent).toContain("First answer.");
  });
});

describe("a paused run resumed on another provider, mid-turn", () => {
  const MID: [Name, Name][] = [
    ["responses", "gemini"],
    ["anthropic", "gemini"],
    ["chat", "gemini"],
    ["gemini", "gemini"],
    ["gemini", "responses"],
    ["gemini", "anthropic"],
    ["responses", "anthropic"],
    ["responses", "chat"],
  ];
  it.each(MID)("paused on %s, resumed on %s", async (from, to) => {
    const script: MockTurn[] = [
      {
        thinking: "two echoes",
        toolCalls: [
          { name: "echo", input: { text: "one" } },
          { name: "echo", input: { text: "two" } },
        ],
      },
      { text: "Moved on." },
    ];
    const servers = await Promise.all(
      [0, 1].map(async () => {
        const server = await serve(script);
        const proxy = await recordingProxy(server.url);
        proxies.push(proxy);
        return { server, proxy };
      }),
    );
    const [first, second] = servers as [(typeof servers)[0], (typeof servers)[0]];
    const path = join(dir, `mid-${++count}.db`);
    const seen: string[] = [];
    const agentOn = (model: Model) =>
      createBareAgent({
        model,
        tools: [echoTool(seen)],
        permissions: { ask: ["echo"] },
        sessionStore: sqliteStore({ path }),
        approvalSecret: "a shared approval secret, long enough",
      });
    const paused = await agentOn(MAKE[from](first.proxy.url)).run("go");
    expect(paused.subtype).toBe("paused");
    const opaque = opaqueOf(from, first.proxy.exchanges);
    const approvals = Object.fromEntries((paused.pending ?? []).map((call) => [call.id, true]));
    const resumed = await agentOn(MAKE[to](second.proxy.url)).resume(
      { sessionId: paused.sessionId },
      { approvals },
    );
    if (resumed.subtype !== "success") throw new Error(JSON.stringify(resumed.error));
    expect(resumed.result).toBe("Moved on.");
    expect(seen).toEqual(["one", "two"]);
    // The calls of the current turn came from elsewhere: accepted all the same.
    expect(second.server.requests.map((request) => request.turn)).toEqual([1]);
    const sent = second.proxy.exchanges.at(-1)!.request;
    for (const piece of opaque) expect(sent).not.toContain(piece);
    expect(sent).not.toContain("providerData");
    if (to === "gemini") {
      // Gemini 3 refuses a step whose first call has no signature: the calls it did not make
      // carry the documented placeholder (the first one only), never another's signature.
      const model = JSON.parse(sent).contents.find((content: any) => content.role === "model");
      expect(model.parts.map((part: any) => part.thoughtSignature)).toEqual([
        "skip_thought_signature_validator",
        undefined,
      ]);
    }
  });
});
