/**
 * Context management, placeholders (design/interactive.md, "Context management"): a long run
 * stays under a small window; old tool results are replaced, oldest first, by a placeholder that
 * names the tool and the size removed; the newest results are never replaced; a result replaced
 * once stays replaced; every tool_use keeps its tool_result; the transcript stays whole; each
 * `compaction` event lists only new removals.
 */
import {
  type AgentEvent,
  createBareAgent,
  type Message,
  type ModelRequest,
  type SDKResultMessage,
  type ToolResultBlock,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { contentText, expectValidTranscript, toolResultsOf } from "../support/results.ts";
import { collect, type EventOf, ofType, trace } from "./helpers.ts";

const PLACEHOLDER =
  /^\[skein: removed the result of (.+) \((\d+) characters\) to fit the context window\]$/;
const placeholder = (name: string, chars: number) =>
  `[skein: removed the result of ${name} (${chars} characters) to fit the context window]`;

/** Every tool_result block of a request, by the call it answers. */
function resultsOf(messages: Message[]): Map<string, ToolResultBlock> {
  const byId = new Map<string, ToolResultBlock>();
  for (const message of messages)
    for (const block of toolResultsOf(message)) byId.set(block.tool_use_id, block);
  return byId;
}

/** A tool_use not answered, in order, by the next message; or a result that answers nothing. */
function pairingProblems(messages: Message[]): string[] {
  const problems: string[] = [];
  messages.forEach((message, index) => {
    const uses =
      message.role === "assistant" && typeof message.content !== "string"
        ? message.content.flatMap((block) => (block.type === "tool_use" ? [block.id] : []))
        : [];
    const next = messages[index + 1];
    const answers = next?.role === "user" ? toolResultsOf(next).map((b) => b.tool_use_id) : [];
    if (uses.length > 0 && answers.join() !== uses.join())
      problems.push(`message ${index}: ${uses.join()} answered by ${answers.join() || "nothing"}`);
    if (message.role === "user" && toolResultsOf(message).length > 0) {
      const previous = messages[index - 1];
      if (previous?.role !== "assistant") problems.push(`message ${index}: results after no call`);
    }
  });
  return problems;
}

const isPlaceholder = (block: ToolResultBlock) =>
  typeof block.content === "string" && PLACEHOLDER.test(block.content);

/** The request's size as the engine estimates it without a usage report: one token per 4 characters. */
const estimateOf = (request: ModelRequest) =>
  Math.ceil(
    (request.system.length +
      JSON.stringify(request.tools).length +
      request.messages.reduce((sum, message) => sum + JSON.stringify(message).length, 0)) /
      4,
  );

/** A page of `size` characters, distinct per page. */
const page = (n: number, size: number) => `page ${n}: ${"x".repeat(size)}`.slice(0, size);

function pagingAgent(options: {
  turns: number;
  size: number;
  window: number;
  errorEvery?: number;
}) {
  const fetchPage = tool("fetch_page", "Fetches a page", z.object({ n: z.number() }), ({ n }) => {
    if (options.errorEvery && n % options.errorEvery === 0)
      return { content: page(n, options.size), isError: true };
    return page(n, options.size);
  });
  const model = scriptedModel((_, index) =>
    index < options.turns
      ? { toolCalls: [{ id: `t${index + 1}`, name: "fetch_page", input: { n: index + 1 } }] }
      : { text: "Read them all." },
  );
  const agent = createBareAgent({
    model,
    tools: [fetchPage],
    maxTurns: options.turns + 5,
    context: { window: options.window },
  });
  return { agent, model };
}

describe("a 300-turn run under a small window", () => {
  const TURNS = 300;
  const SIZE = 4_000;
  const WINDOW = 40_000;

  // One run, read by every test of this block (it is the slow part; a busy machine gets time).
  let events: AgentEvent[];
  let result: SDKResultMessage;
  let requests: ModelRequest[];
  beforeAll(async () => {
    const paging = pagingAgent({ turns: TURNS, size: SIZE, window: WINDOW, errorEvery: 7 });
    ({ events, result } = await collect(paging.agent.stream("Read every page.")));
    requests = paging.model.requests;
  }, 120_000);

  // The checks below gather what is wrong in every request and assert once (300 requests).
  it("finishes, with every request under the threshold and every tool_use answered in every request", () => {
    expect(result.subtype).toBe("success");
    expect(result.numTurns).toBe(TURNS + 1);
    expect(requests).toHaveLength(TURNS + 1);
    const problems: string[] = [];
    requests.forEach((request, index) => {
      if (estimateOf(request) > 0.8 * WINDOW)
        problems.push(`request ${index + 1}: over the threshold`);
      for (const problem of pairingProblems(request.messages))
        problems.push(`request ${index + 1}: ${problem}`);
    });
    expect(problems).toEqual([]);
    expectValidTranscript(requests.at(-1)!.messages);
    // Without compaction the last request would be far over the window.
    expect((TURNS * SIZE) / 4).toBeGreaterThan(5 * WINDOW);
  });

  it("replaces old results by exactly the placeholder, is_error kept, the newest results never", () => {
    const full = resultsOf(result.messages);
    const problems: string[] = [];
    let replacedSomewhere = 0;
    requests.forEach((request, index) => {
      const newest = [...request.messages].reverse().find((m) => toolResultsOf(m).length > 0);
      for (const block of toolResultsOf(newest))
        if (isPlaceholder(block))
          problems.push(`request ${index + 1}: newest ${block.tool_use_id} replaced`);
      for (const [id, block] of resultsOf(request.messages)) {
        const original = full.get(id)!;
        if (block.is_error !== original.is_error)
          problems.push(`request ${index + 1}: ${id} is_error changed`);
        if (!isPlaceholder(block)) {
          if (block.content !== original.content)
            problems.push(`request ${index + 1}: ${id} altered`);
          continue;
        }
        replacedSomewhere++;
        const expected = placeholder("fetch_page", contentText(original.content).length);
        if (block.content !== expected)
          problems.push(`request ${index + 1}: ${id}: ${String(block.content)}`);
      }
    });
    expect(problems).toEqual([]);
    expect(replacedSomewhere).toBeGreaterThan(TURNS);
    // Some removed results were errors: the flag went with the placeholder.
    expect(
      requests
        .at(-1)!
        .messages.some((m) =>
          toolResultsOf(m).some((block) => block.is_error && isPlaceholder(block)),
        ),
    ).toBe(true);
  });

  it("a result replaced once stays replaced; the oldest go first", () => {
    const removed = new Set<string>();
    const problems: string[] = [];
    requests.forEach((request, index) => {
      const results = resultsOf(request.messages);
      for (const id of removed)
        if (!isPlaceholder(results.get(id)!))
          problems.push(`request ${index + 1}: ${id} came back`);
      const ids = [...results.keys()];
      const replaced = ids.filter((id) => isPlaceholder(results.get(id)!));
      // Oldest first: the replaced ones are a prefix of the results in transcript order.
      if (ids.slice(0, replaced.length).join() !== replaced.join())
        problems.push(`request ${index + 1}: not oldest first`);
      for (const id of replaced) removed.add(id);
    });
    expect(problems).toEqual([]);
    expect(removed.size).toBeGreaterThan(TURNS - 20);
  });

  it("result.messages, steps and events keep the full content", () => {
    expect([...resultsOf(result.messages).values()].filter(isPlaceholder)).toEqual([]);
    expect(
      result.steps
        .flatMap((step) => step.toolCalls)
        .map((call) => contentText(call.result.content).length),
    ).toEqual(Array.from({ length: TURNS }, () => SIZE));
    expect(
      ofType(events, "turn_end").flatMap((end) => end.toolResults.filter(isPlaceholder)),
    ).toEqual([]);
  });

  it("compaction events list only new removals, and match what each request left out", () => {
    const compactions = ofType(events, "compaction");
    expect(compactions.length).toBeGreaterThan(1);
    const listed = compactions.flatMap((event) => event.removed.map((entry) => entry.callId));
    expect(new Set(listed).size).toBe(listed.length);
    let before = new Set<string>();
    requests.forEach((request, index) => {
      const now = new Set(
        [...resultsOf(request.messages)]
          .filter(([, block]) => isPlaceholder(block))
          .map(([id]) => id),
      );
      const fresh = [...now].filter((id) => !before.has(id));
      const event = compactions.find((entry) => entry.turn === index + 1);
      if (fresh.length === 0) expect(event).toBeUndefined();
      else {
        expect(event!.removed.map((entry) => entry.callId)).toEqual(fresh);
        for (const entry of event!.removed)
          expect(entry).toMatchObject({ name: "fetch_page", chars: SIZE });
        expect(event!.summarized).toBe(false);
        expect(event!.estimateAfter).toBeLessThan(event!.estimateBefore);
        expect(event!.estimateBefore).toBeGreaterThan(0.8 * WINDOW);
      }
      before = now;
    });
  });

  it("a compaction event comes after turn_start, before the reply", () => {
    const index = events.findIndex((event) => event.type === "compaction");
    const turn = (events[index] as EventOf<"compaction">).turn;
    const around = trace(events.slice(index - 1, index + 2));
    expect(around).toEqual([`turn_start:${turn}`, `compaction:${turn}`, `tool_start:t${turn}`]);
  });
});

describe("what is never replaced", () => {
  it("results shorter than the placeholder, and the newest message's results, stay whole", async () => {
    const short = tool("short", "Short answers", z.object({ n: z.number() }), ({ n }) => `ok ${n}`);
    const big = tool("big", "Big answers", z.object({ n: z.number() }), ({ n }) => page(n, 3_000));
    const model = scriptedModel((_, index) =>
      index < 6
        ? {
            toolCalls: [
              { id: `s${index + 1}`, name: "short", input: { n: index } },
              { id: `b${index + 1}`, name: "big", input: { n: index } },
            ],
          }
        : { text: "done" },
    );
    const agent = createBareAgent({ model, tools: [short, big], context: { window: 2_000 } });
    const { events, result } = await collect(agent.stream("go"));
    expect(result.subtype).toBe("success");
    for (const request of model.requests) {
      const results = resultsOf(request.messages);
      for (const [id, block] of results)
        if (id.startsWith("s")) expect(isPlaceholder(block)).toBe(false);
      const newest = [...request.messages].reverse().find((m) => toolResultsOf(m).length > 0);
      for (const block of toolResultsOf(newest)) expect(isPlaceholder(block)).toBe(false);
    }
    expect(
      ofType(events, "compaction").flatMap((event) => event.removed.map((entry) => entry.name)),
    ).not.toContain("short");
  });
});

describe("the estimate", () => {
  /** Two turns of results; the model reports its input tokens as `usage` on the first reply. */
  function reported(usage: {
    inputTokens: number;
    cacheReadInputTokens?: number;
    cacheCreationInputTokens?: number;
  }) {
    const big = tool("big", "Big answers", z.object({ n: z.number() }), ({ n }) => page(n, 2_000));
    const model = scriptedModel(
      [
        {
          toolCalls: [{ id: "b1", name: "big", input: { n: 1 } }],
          usage: { ...usage, outputTokens: 1 },
        },
        {
          toolCalls: [{ id: "b2", name: "big", input: { n: 2 } }],
          usage: { ...usage, outputTokens: 1 },
        },
        { text: "done" },
      ],
      { modelId: "claude-test" },
    );
    const agent = createBareAgent({ model, tools: [big] });
    return { agent, model };
  }

  it("starts from the input tokens the provider reported (input + cacheRead + cacheCreation)", async () => {
    // 165,000 reported, over 0.8 × 200,000 for claude-*: the next request is compacted.
    const { agent } = reported({
      inputTokens: 100_000,
      cacheReadInputTokens: 40_000,
      cacheCreationInputTokens: 25_000,
    });
    const { events } = await collect(agent.stream("go"));
    const compactions = ofType(events, "compaction");
    expect(compactions.length).toBeGreaterThan(0);
    expect(compactions[0]!.turn).toBe(3);
    expect(compactions[0]!.removed.map((entry) => entry.callId)).toEqual(["b1"]);
    expect(compactions[0]!.estimateBefore).toBeGreaterThanOrEqual(165_000);
    expect(compactions[0]!.estimateBefore).toBeLessThan(166_000);
    expect(compactions[0]!.estimateAfter).toBeLessThan(compactions[0]!.estimateBefore);
  });

  it("below the threshold nothing is compacted", async () => {
    const { agent, model } = reported({ inputTokens: 100_000 });
    const { events } = await collect(agent.stream("go"));
    expect(ofType(events, "compaction")).toEqual([]);
    expect(
      toolResultsOf(model.requests[2]!.messages[2]).map((block) => isPlaceholder(block)),
    ).toEqual([false]);
  });
});

describe("context: false", () => {
  it("turns it off: nothing is compacted however large the requests", async () => {
    const big = tool("big", "Big answers", z.object({ n: z.number() }), ({ n }) =>
      page(n, 200_000),
    );
    const script = (_: unknown, index: number) =>
      index < 6
        ? { toolCalls: [{ id: `b${index + 1}`, name: "big", input: { n: index } }] }
        : { text: "done" };
    const off = scriptedModel(script, { modelId: "gpt-4o" });
    const { events } = await collect(
      createBareAgent({ model: off, tools: [big], context: false }).stream("go"),
    );
    expect(ofType(events, "compaction")).toEqual([]);
    for (const block of resultsOf(off.requests.at(-1)!.messages).values())
      expect(isPlaceholder(block)).toBe(false);
    // The same run with the default (on): the 128,000-token window of gpt-4o is kept.
    const on = scriptedModel(script, { modelId: "gpt-4o" });
    const { events: onEvents } = await collect(
      createBareAgent({ model: on, tools: [big] }).stream("go"),
    );
    expect(ofType(onEvents, "compaction").length).toBeGreaterThan(0);
    for (const request of on.requests)
      expect(estimateOf(request)).toBeLessThanOrEqual(0.8 * 128_000);
  });
});
