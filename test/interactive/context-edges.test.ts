/**
 * Context management with a `beforeModelCall` hook and odd results (design/interactive.md,
 * "Context management"): compaction applies after the hook, to the messages about to be sent;
 * a result of content blocks is replaced like a text one; removal stops at the target.
 */
import { createBareAgent, type Message, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { expectValidTranscript, toolResultsOf } from "../support/results.ts";
import { collect, ofType } from "./helpers.ts";

const big = (size: number) =>
  tool("big", "Big answers", z.object({ n: z.number() }), ({ n }) =>
    `${n}:${"b".repeat(size)}`.slice(0, size),
  );

const turnsOfBig = (turns: number) =>
  scriptedModel((_, index) =>
    index < turns
      ? { toolCalls: [{ id: `b${index + 1}`, name: "big", input: { n: index + 1 } }] }
      : { text: "done" },
  );

describe("compaction applies after beforeModelCall", () => {
  it("to the hook's messages: a hook that sends only the newest exchange needs no compaction", async () => {
    const model = turnsOfBig(8);
    const { events, result } = await collect(
      createBareAgent({
        model,
        tools: [big(3_000)],
        context: { window: 2_000 },
        hooks: {
          beforeModelCall: ({ messages }) =>
            messages.length > 3 ? { messages: [messages[0]!, ...messages.slice(-2)] } : undefined,
        },
      }).stream("go"),
    );
    expect(result.subtype).toBe("success");
    expect(ofType(events, "compaction")).toEqual([]);
    // The same run without the hook is compacted.
    const plain = turnsOfBig(8);
    const { events: plainEvents } = await collect(
      createBareAgent({ model: plain, tools: [big(3_000)], context: { window: 2_000 } }).stream(
        "go",
      ),
    );
    expect(ofType(plainEvents, "compaction").length).toBeGreaterThan(0);
  });

  it("to the hook's messages: old results the hook sends are replaced, and it all still pairs up", async () => {
    const model = turnsOfBig(6);
    const note: Message = { role: "user", content: "Notes so far: none." };
    const { events } = await collect(
      createBareAgent({
        model,
        tools: [big(3_000)],
        context: { window: 2_000 },
        hooks: { beforeModelCall: ({ messages }) => ({ messages: [note, ...messages] }) },
      }).stream("go"),
    );
    expect(ofType(events, "compaction").length).toBeGreaterThan(0);
    for (const request of model.requests) {
      expect(request.messages[0]).toEqual(note);
      expectValidTranscript(request.messages);
    }
    const last = model.requests.at(-1)!.messages;
    expect(JSON.stringify(last)).toContain("[skein: removed the result of big (3000 characters)");
  });

  it("a hook that adds too much ends the run with ContextWindowError, before the call", async () => {
    const model = scriptedModel([{ text: "never" }]);
    const result = await createBareAgent({
      model,
      context: { window: 1_000 },
      hooks: {
        beforeModelCall: ({ messages }) => ({
          messages: [...messages, { role: "user", content: "c".repeat(20_000) }],
        }),
      },
    }).run("go");
    expect(model.requests).toHaveLength(0);
    expect(result.error?.name).toBe("ContextWindowError");
    expect(result.error?.message).toContain("context window");
    expect(result.error?.message).toContain("newest message");
  });
});

describe("results of content blocks", () => {
  it("are replaced by the placeholder too; its size is the compaction event's chars", async () => {
    const blocks = tool("blocks", "Block answers", z.object({ n: z.number() }), ({ n }) => ({
      content: [{ type: "text" as const, text: `${n}${"q".repeat(2_999)}` }],
    }));
    const model = scriptedModel((_, index) =>
      index < 5
        ? { toolCalls: [{ id: `q${index + 1}`, name: "blocks", input: { n: index } }] }
        : { text: "ok" },
    );
    const { events, result } = await collect(
      createBareAgent({ model, tools: [blocks], context: { window: 2_000 } }).stream("go"),
    );
    const compactions = ofType(events, "compaction");
    expect(compactions.length).toBeGreaterThan(0);
    const first = compactions[0]!.removed[0]!;
    const sent = toolResultsOf(model.requests.at(-1)!.messages[2]!)[0]!;
    expect(sent.tool_use_id).toBe(first.callId);
    expect(sent.content).toBe(
      `[skein: removed the result of blocks (${first.chars} characters) to fit the context window]`,
    );
    // At least the text's length (the contract counts "the text"; see the report for blocks).
    expect(first.chars).toBeGreaterThanOrEqual(3_000);
    expect(toolResultsOf(result.messages[2]!)[0]!.content).toEqual([
      { type: "text", text: `0${"q".repeat(2_999)}` },
    ]);
  });
});

describe("removal stops at the target", () => {
  it("only as many old results as needed go, oldest first, leaving the estimate at most target × window", async () => {
    const model = turnsOfBig(30);
    const { events } = await collect(
      createBareAgent({
        model,
        tools: [big(2_000)],
        context: { window: 10_000, threshold: 0.8, target: 0.5 },
      }).stream("go"),
    );
    const compactions = ofType(events, "compaction");
    expect(compactions.length).toBeGreaterThan(0);
    for (const event of compactions) {
      expect(event.estimateBefore).toBeGreaterThan(8_000);
      expect(event.estimateAfter).toBeLessThanOrEqual(5_000);
      // One removal fewer would have left it above the target: no result went for nothing.
      const placeholder =
        "[skein: removed the result of big (2000 characters) to fit the context window]";
      const saving = (2_000 - placeholder.length) / 4;
      expect(event.estimateAfter + saving).toBeGreaterThan(5_000 - 1);
    }
    // Some results old enough were still sent whole on the first compacted call.
    const firstCompacted = model.requests[compactions[0]!.turn - 1]!;
    const whole = firstCompacted.messages
      .flatMap((message) => toolResultsOf(message))
      .filter((block) => typeof block.content === "string" && !block.content.startsWith("[skein:"));
    expect(whole.length).toBeGreaterThan(1);
  });
});
