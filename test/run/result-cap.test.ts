import { type AgentEvent, createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { resultText, toolResultsOf } from "../support/results.ts";
import { collect } from "./helpers.ts";

type ToolEnd = Extract<AgentEvent, { type: "tool_end" }>;

function bigText(length: number): string {
  const head = "HEAD-START ";
  const tail = " TAIL-END";
  return head + "m".repeat(length - head.length - tail.length) + tail;
}

async function capped(options: { agentCap?: number; toolCap?: number; length: number }) {
  const full = bigText(options.length);
  const big = tool("big", "Big output", z.object({}), async () => full, {
    ...(options.toolCap === undefined ? {} : { maxResultChars: options.toolCap }),
  });
  const model = scriptedModel([
    { toolCalls: [{ id: "b", name: "big", input: {} }] },
    { text: "ok" },
  ]);
  const { events, result } = await collect(
    createBareAgent({
      model,
      tools: [big],
      ...(options.agentCap === undefined ? {} : { maxResultChars: options.agentCap }),
    }).stream("go"),
  );
  const sent = resultText(toolResultsOf(model.requests[1]!.messages.at(-1))[0]);
  const end = events.find((event): event is ToolEnd => event.type === "tool_end")!;
  return { full, sent, end, result };
}

describe("maxResultChars", () => {
  it("caps the text sent to the model, keeping head and tail with a note, while tool_end has it all", async () => {
    const { full, sent, end } = await capped({ agentCap: 200, length: 5_000 });
    expect(sent.startsWith("HEAD-START")).toBe(true);
    expect(sent.endsWith("TAIL-END")).toBe(true);
    expect(sent).toMatch(/omitted/);
    expect(sent.length).toBeLessThan(200 + 400);
    expect(sent.length).toBeLessThan(full.length);
    expect(end.result.content).toBe(full);
  });

  it("leaves a result within the cap untouched", async () => {
    const { full, sent } = await capped({ agentCap: 200, length: 200 });
    expect(sent).toBe(full);
  });

  it("takes the tool's own cap over the agent's", async () => {
    const { sent: small } = await capped({ agentCap: 10_000, toolCap: 100, length: 5_000 });
    expect(small.length).toBeLessThan(100 + 400);
    expect(small).toMatch(/omitted/);
    const { sent: large, full } = await capped({ agentCap: 100, toolCap: 10_000, length: 5_000 });
    expect(large).toBe(full);
  });

  it("caps a 5 MB result at the default 100,000 characters (B4)", async () => {
    const { full, sent, end, result } = await capped({ length: 5_000_000 });
    expect(sent.length).toBeGreaterThanOrEqual(100_000 * 0.9);
    expect(sent.length).toBeLessThan(100_000 + 400);
    expect(sent.startsWith("HEAD-START")).toBe(true);
    expect(sent.endsWith("TAIL-END")).toBe(true);
    expect(end.result.content).toBe(full);
    expect(result.subtype).toBe("success");
    // The transcript keeps what the model was sent, not the full text.
    expect(JSON.stringify(result.messages).length).toBeLessThan(200_000);
  });

  it("never splits a surrogate pair at a cut", async () => {
    const emoji = "😀".repeat(1_000);
    const emojiTool = tool("emoji", "Emoji", z.object({}), async () => emoji);
    for (const cap of [99, 100, 101]) {
      const local = scriptedModel([
        { toolCalls: [{ id: "e", name: "emoji", input: {} }] },
        { text: "ok" },
      ]);
      await createBareAgent({ model: local, tools: [emojiTool], maxResultChars: cap }).run("go");
      const sent = resultText(toolResultsOf(local.requests[1]!.messages.at(-1))[0]);
      expect(sent).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
      expect(sent).not.toMatch(/(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
      expect(sent).toMatch(/omitted/);
    }
  });

  it("caps the text blocks of a content-block result as well", async () => {
    const blocks = tool("blocks", "Blocks", z.object({}), async () => [
      { type: "text" as const, text: bigText(3_000) },
      { type: "text" as const, text: bigText(3_000) },
    ]);
    const model = scriptedModel([
      { toolCalls: [{ id: "k", name: "blocks", input: {} }] },
      { text: "ok" },
    ]);
    await createBareAgent({ model, tools: [blocks], maxResultChars: 500 }).run("go");
    const sent = resultText(toolResultsOf(model.requests[1]!.messages.at(-1))[0]);
    expect(sent.length).toBeLessThan(500 + 800);
  });
});
