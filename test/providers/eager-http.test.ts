/**
 * Eager execution over HTTP (DESIGN: eager execution): a concurrency-safe call starts as soon as
 * its tool_use block is complete in the stream, while the model still writes the rest; with a
 * `toolBatchPolicy`, no handler starts before the whole reply has arrived.
 */
import { type AgentEvent, createBareAgent, tool } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { closeMockServers } from "../support/servers.ts";
import { FAST, PROTOCOLS, serve } from "./helpers.ts";

afterEach(closeMockServers);

const GAP_MS = 100;

/** A safe tool that records when each call's handler started. */
function timedTool(startedAt: Map<string, number>) {
  return tool(
    "fetch_page",
    "Fetch a page",
    z.object({ url: z.string() }),
    async ({ url }) => {
      startedAt.set(url, performance.now());
      return `page ${url}`;
    },
    { isConcurrencySafe: () => true },
  );
}

const script = [
  {
    toolCalls: [
      { name: "fetch_page", input: { url: "https://a.example/first" } },
      { name: "fetch_page", input: { url: "https://b.example/second" } },
    ],
    gapMs: GAP_MS,
  },
  { text: "Both fetched." },
];

/** Streams a run, stamping each event with the time it was read. */
async function timedRun(agent: ReturnType<typeof createBareAgent>) {
  const events: { event: AgentEvent; at: number }[] = [];
  for await (const event of agent.stream("fetch both"))
    events.push({ event, at: performance.now() });
  const at = (type: string) => events.find((entry) => entry.event.type === type)!.at;
  const index = (type: string) => events.findIndex((entry) => entry.event.type === type);
  return { events, at, index };
}

describe.each(PROTOCOLS)("$name: eager execution over HTTP", ({ make }) => {
  it("starts a safe call's handler while the rest of the reply is still streaming", async () => {
    const server = await serve(script);
    const startedAt = new Map<string, number>();
    const agent = createBareAgent({ model: make(server.url, FAST), tools: [timedTool(startedAt)] });
    const { events, at, index } = await timedRun(agent);

    const first = startedAt.get("https://a.example/first")!;
    expect(first).toBeDefined();
    // The first call's block ends several events (GAP_MS apart) before the reply does: its handler
    // starts at least one gap before the end (the other gaps are room for a busy machine).
    expect(first).toBeLessThan(at("message") - GAP_MS);
    expect(index("tool_start")).toBeLessThan(index("message"));

    const result = events.at(-1)!.event;
    expect(result).toMatchObject({ type: "result", subtype: "success", result: "Both fetched." });
    const toolResults = server.requests[1]!.body.messages.flatMap((message: any) =>
      Array.isArray(message.content)
        ? message.content.filter((block: any) => block.type === "tool_result")
        : message.role === "tool"
          ? [{ content: message.content }]
          : [],
    );
    expect(toolResults.map((block: any) => block.content)).toEqual([
      "page https://a.example/first",
      "page https://b.example/second",
    ]);
  });

  it("with a toolBatchPolicy, no handler starts before the reply is complete", async () => {
    const server = await serve(script);
    const startedAt = new Map<string, number>();
    const seenByPolicy: string[][] = [];
    const agent = createBareAgent({
      model: make(server.url, FAST),
      tools: [timedTool(startedAt)],
      toolBatchPolicy: {
        validate({ toolCalls }) {
          seenByPolicy.push(toolCalls.map((call) => (call.input as { url: string }).url));
          return { allowed: true };
        },
      },
    });
    const { events, at, index } = await timedRun(agent);

    expect(seenByPolicy).toEqual([["https://a.example/first", "https://b.example/second"]]);
    expect(index("message")).toBeLessThan(index("tool_start"));
    // The whole reply takes at least (events - 1) gaps; no handler starts before it ends.
    const turnStart = at("turn_start");
    for (const started of startedAt.values()) {
      expect(started - turnStart).toBeGreaterThanOrEqual(10 * GAP_MS);
    }
    expect(events.at(-1)!.event).toMatchObject({ type: "result", subtype: "success" });
  });
});
