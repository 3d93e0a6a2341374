/**
 * Context management beyond placeholders (design/interactive.md, "Context management"): the
 * optional summary (one model call with `tools: []` and the instructions as system, counted in
 * `usage` and not in `numTurns`, reused by later requests), the `ContextWindowError` of a newest
 * message too large for the window (no call made), the default windows by model id, and the
 * strict `context` option.
 */
import { ConfigurationError, createBareAgent, type ModelRequest, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { expectValidTranscript } from "../support/results.ts";
import { collect, ofType, textOf } from "./helpers.ts";

const HEADER = "[Summary of the earlier conversation]\n";
const isSummaryCall = (request: ModelRequest) => request.tools.length === 0;

/**
 * Turns whose size is in the assistant's text (1,500 characters each) and whose results are too
 * short to replace: only a summary can bring the requests back under the threshold.
 */
// The turns report no input tokens (the estimate is one token per 4 characters of the request);
// each summary call reports 1,000 in and 50 out.
function chattyAgent(options: { turns: number; summarize: unknown; summarizer?: boolean }) {
  const note = tool("note", "Takes a note", z.object({ n: z.number() }), ({ n }) => `ok ${n}`);
  let turn = 0;
  let summaries = 0;
  const summaryTurn = () => ({
    text: `SUMMARY-${++summaries}: the user asked for notes; notes 1..${turn} are taken.`,
    usage: { inputTokens: 1_000, outputTokens: 50 },
  });
  const model = scriptedModel((request) => {
    if (isSummaryCall(request)) return summaryTurn();
    turn++;
    if (turn > options.turns) return { text: "All notes taken.", usage: { outputTokens: 1 } };
    return {
      text: `Thinking about note ${turn}: ${"lorem ipsum ".repeat(125)}`,
      toolCalls: [{ id: `n${turn}`, name: "note", input: { n: turn } }],
      usage: { outputTokens: 1 },
    };
  });
  const summarizer = scriptedModel(() => summaryTurn());
  const hookTurns: number[] = [];
  const agent = createBareAgent({
    model,
    tools: [note],
    systemPrompt: "You take notes.",
    maxTurns: options.turns + 5,
    context: {
      window: 2_000,
      summarize: (options.summarizer
        ? { model: summarizer, instructions: "Keep the note numbers." }
        : options.summarize) as never,
    },
    hooks: { beforeModelCall: ({ turn }) => void hookTurns.push(turn) },
  });
  return { agent, model, summarizer, hookTurns };
}

describe("summarize: true", () => {
  it("one model call with tools: [] and the default instructions as system, over the replaced messages", async () => {
    const { agent, model } = chattyAgent({ turns: 8, summarize: true });
    const { result } = await collect(agent.stream("Take eight notes."));
    expect(result.subtype).toBe("success");
    const summaries = model.requests.filter(isSummaryCall);
    expect(summaries.length).toBeGreaterThan(0);
    const first = summaries[0]!;
    expect(first.tools).toEqual([]);
    expect(first.system).not.toBe("You take notes.");
    expect(first.system.toLowerCase()).toMatch(/fact/);
    expect(first.system.toLowerCase()).toMatch(/decision/);
    expect(first.system.toLowerCase()).toMatch(/file path/);
    expect(first.system.toLowerCase()).toMatch(/task/);
    // The replaced messages, from the prompt on.
    expect(textOf(first.messages[0])).toContain("Take eight notes.");
    expect(JSON.stringify(first.messages)).toContain("Thinking about note 1");
  });

  it("counts in usage, not in numTurns; beforeModelCall never runs for it", async () => {
    const { agent, model, hookTurns } = chattyAgent({ turns: 8, summarize: true });
    const result = await agent.run("Take eight notes.");
    const summaries = model.requests.filter(isSummaryCall).length;
    const turns = model.requests.length - summaries;
    expect(result.numTurns).toBe(turns);
    expect(turns).toBe(9);
    expect(hookTurns).toEqual(Array.from({ length: turns }, (_, index) => index + 1));
    expect(result.usage.inputTokens).toBe(summaries * 1_000);
    expect(result.usage.outputTokens).toBe(turns + summaries * 50);
  });

  it("later requests start with the summary, every tool_use still answered; the transcript stays whole", async () => {
    const { agent, model } = chattyAgent({ turns: 8, summarize: true });
    const { events, result } = await collect(agent.stream("Take eight notes."));
    const turnRequests = model.requests.filter((request) => !isSummaryCall(request));
    const summarizedFrom = turnRequests.findIndex((request) =>
      textOf(request.messages[0]).startsWith(HEADER),
    );
    expect(summarizedFrom).toBeGreaterThan(0);
    for (const request of turnRequests.slice(summarizedFrom)) {
      const opening = request.messages[0]!;
      expect(opening.role).toBe("user");
      expect(textOf(opening)).toMatch(/^\[Summary of the earlier conversation\]\nSUMMARY-\d+: /);
      expect(request.messages[1]!.role).toBe("assistant");
      expectValidTranscript(request.messages);
    }
    for (const request of turnRequests) expectValidTranscript(request.messages);
    // After the summary: the newest assistant message and what followed it, as in the transcript.
    turnRequests.forEach((request, index) => {
      if (!textOf(request.messages[0]).startsWith(HEADER)) return;
      const sentSoFar = 1 + 2 * index; // the prompt, then an assistant reply and its results per turn
      const tail = request.messages.slice(1);
      expect(tail).toEqual(result.messages.slice(sentSoFar - tail.length, sentSoFar));
    });
    const compactions = ofType(events, "compaction");
    expect(compactions.some((event) => event.summarized)).toBe(true);
    expect(result.messages[0]).toEqual({ role: "user", content: "Take eight notes." });
    expect(result.messages.some((message) => textOf(message).startsWith(HEADER))).toBe(false);
    expect(result.messages).toHaveLength(1 + 8 * 2 + 1);
  });

  it("the summary is reused: a request without a new summary call keeps the last one", async () => {
    const { agent, model } = chattyAgent({ turns: 8, summarize: true });
    await agent.run("Take eight notes.");
    let last: string | undefined;
    let reused = 0;
    for (const request of model.requests) {
      if (isSummaryCall(request)) {
        last = undefined;
        continue;
      }
      const opening = textOf(request.messages[0]);
      if (!opening.startsWith(HEADER)) continue;
      if (last === opening) reused++;
      last = opening;
    }
    expect(reused).toBeGreaterThan(0);
  });

  it("{ model, instructions }: the summary comes from that model, with those instructions", async () => {
    const { agent, model, summarizer } = chattyAgent({
      turns: 8,
      summarize: true,
      summarizer: true,
    });
    const result = await agent.run("Take eight notes.");
    expect(result.subtype).toBe("success");
    expect(model.requests.filter(isSummaryCall)).toEqual([]);
    expect(summarizer.requests.length).toBeGreaterThan(0);
    for (const request of summarizer.requests) {
      expect(request.system).toBe("Keep the note numbers.");
      expect(request.tools).toEqual([]);
    }
  });

  it("without summarize, the same run is not summarised", async () => {
    const { agent, model } = chattyAgent({ turns: 3, summarize: false });
    const { events, result } = await collect(agent.stream("Take three notes."));
    expect(model.requests.filter(isSummaryCall)).toEqual([]);
    expect(ofType(events, "compaction").some((event) => event.summarized)).toBe(false);
    expect(result.subtype).toBe("success");
  });
});

describe("a newest message too large for the window", () => {
  it("ends the run error_during_execution with ContextWindowError; no call is made", async () => {
    const model = scriptedModel([{ text: "never" }], { modelId: "claude-sonnet-4-5" });
    const prompt = "y".repeat(10_000);
    const result = await createBareAgent({ model, context: { window: 1_000 } }).run(prompt);
    expect(model.requests).toHaveLength(0);
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("ContextWindowError");
    expect(result.error?.message).toContain("context window");
    expect(result.error?.message).toMatch(/1,?000/);
    expect(result.error?.message).toContain("claude-sonnet-4-5");
    expect(result.error?.message).toContain("context.window");
    const estimate = Math.ceil(JSON.stringify({ role: "user", content: prompt }).length / 4);
    expect(result.error?.message).toMatch(new RegExp(`${Math.floor(estimate / 100)}\\d\\d`));
  });

  it("a tool result too large after the model asked for it: the same error, after the batch", async () => {
    const huge = tool("huge", "Huge", z.object({}), () => "z".repeat(50_000));
    const model = scriptedModel([
      { toolCalls: [{ id: "h1", name: "huge", input: {} }] },
      { text: "never" },
    ]);
    const result = await createBareAgent({
      model,
      tools: [huge],
      context: { window: 4_000 },
    }).run("go");
    expect(model.requests).toHaveLength(1);
    expect(result.error?.name).toBe("ContextWindowError");
    expect(result.messages.at(-1)!.role).toBe("user");
  });

  it.each([
    ["claude-opus-4", 200_000],
    ["gpt-4o-mini", 128_000],
    ["gpt-4.1-mini", 1_047_576],
    ["gpt-5", 400_000],
    ["o3-mini", 200_000],
    ["o4-mini", 200_000],
    ["some-local-model", 128_000],
  ])("the default window of %s is %i tokens", async (modelId, window) => {
    const model = scriptedModel([{ text: "fits" }, { text: "fits" }], { modelId });
    const agent = createBareAgent({ model });
    // Just under the window: the request goes (compaction has nothing to remove, nothing fails).
    const fits = await agent.run("a".repeat((window - 100) * 4));
    expect(fits.subtype).toBe("success");
    // Just over it: refused, naming the window.
    const over = await agent.run("a".repeat((window + 100) * 4));
    expect(over.error?.name).toBe("ContextWindowError");
    expect(over.error?.message).toMatch(new RegExp(`${window}|${window.toLocaleString("en-US")}`));
    expect(model.requests).toHaveLength(1);
  });
});

describe("the context option is checked strictly", () => {
  it.each([
    [
      { windw: 10 },
      'AgentOptions: context: unknown option "windw". Check for a typo, or upgrade the SDK if this option was added in a newer version.',
    ],
    [{ window: 0 }, /^AgentOptions: context\.window must be .+, received 0\.$/],
    [{ window: 1.5 }, /^AgentOptions: context\.window must be .+, received 1\.5\.$/],
    [{ threshold: 1.5 }, /^AgentOptions: context\.threshold must be .+, received 1\.5\.$/],
    [{ target: 0 }, /^AgentOptions: context\.target must be .+, received 0\.$/],
    [
      { threshold: 0.5, target: 0.7 },
      /^AgentOptions: context\.target must be .+, received 0\.7\.$/,
    ],
    [{ summarize: { modle: 1 } }, /^AgentOptions: context\.summarize: unknown option "modle"/],
    [
      { summarize: { instructions: 3 } },
      /^AgentOptions: context\.summarize\.instructions must be .+, received 3\.$/,
    ],
    ["on", /^AgentOptions: context/],
  ])("%j", (context, message) => {
    const model = scriptedModel([]);
    expect(() => createBareAgent({ model, context: context as never })).toThrow(ConfigurationError);
    expect(() => createBareAgent({ model, context: context as never })).toThrow(message);
  });
});
