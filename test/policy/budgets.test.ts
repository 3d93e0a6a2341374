// Budgets over a whole tree and guardrails (design/policy.md): a root budget trips inside the
// grandchild and the whole tree ends cleanly; a tripwire during a streamed reply aborts a started
// tool and starts no other.
import {
  type AgentEvent,
  agentTool,
  createBareAgent,
  type Model,
  type ModelStreamEvent,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { deferred } from "../support/promises.ts";
import { expectValidTranscript } from "../support/results.ts";

/** A concurrency-safe tool that waits for its signal; `started`/`aborted` record what it saw. */
function waiting(name: string, security?: { network: "none"; sideEffects: "none" }) {
  const state = { started: 0, aborted: 0, begun: deferred() };
  const definition = tool(
    name,
    `Waits (${name})`,
    z.object({}),
    async (_input, ctx) => {
      state.started++;
      state.begun.resolve();
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        else ctx.signal.addEventListener("abort", () => resolve(), { once: true });
      });
      state.aborted++;
      return "stopped";
    },
    { isConcurrencySafe: () => true, ...(security ? { security } : {}) },
  );
  return { tool: definition, state };
}

function counting(name: string) {
  const runs: string[] = [];
  const definition = tool(
    name,
    `Counts (${name})`,
    z.object({ n: z.string() }),
    ({ n }) => {
      runs.push(n);
      return `ran ${n}`;
    },
    { isConcurrencySafe: () => true },
  );
  return { tool: definition, runs };
}

/** Every tool_start in the stream has exactly one tool_end with its id (at any depth). */
function expectEveryCallAnsweredOnce(events: AgentEvent[]) {
  const starts = events.filter((e) => e.type === "tool_start").map((e: any) => e.callId);
  const ends = events.filter((e) => e.type === "tool_end").map((e: any) => e.callId);
  expect(ends.toSorted()).toEqual(starts.toSorted());
  expect(new Set(ends).size).toBe(ends.length);
}

describe("budgets count over the whole tree", () => {
  function tree(rootOptions: Record<string, unknown>) {
    const slow = waiting("slow");
    const note = counting("note");
    const grandchild = createBareAgent({
      id: "grandchild",
      model: scriptedModel([
        {
          toolCalls: [
            { id: "g1", name: "slow", input: {} },
            { id: "g2", name: "note", input: { n: "g2" } },
            { id: "g3", name: "note", input: { n: "g3" } },
          ],
          usage: { inputTokens: 10, outputTokens: 5 },
        },
        { text: "grandchild never answers" },
      ]),
      tools: [slow.tool, note.tool],
    });
    const child = createBareAgent({
      id: "child",
      model: scriptedModel([
        {
          toolCalls: [{ id: "c1", name: "grandchild", input: { prompt: "deeper" } }],
          usage: { inputTokens: 10, outputTokens: 5 },
        },
        { text: "child never answers" },
      ]),
      tools: [agentTool(grandchild, { description: "G" })],
    });
    const rootModel = scriptedModel([
      {
        toolCalls: [{ id: "r1", name: "child", input: { prompt: "work" } }],
        usage: { inputTokens: 10, outputTokens: 5 },
      },
      { text: "root never answers" },
    ]);
    const seen: string[] = [];
    const root = createBareAgent({
      model: rootModel,
      tools: [agentTool(child, { description: "C" })],
      hooks: { beforeToolCall: ({ callId }) => void seen.push(callId) },
      ...rootOptions,
    });
    return { root, rootModel, slow, note, seen };
  }

  it("maxToolCalls of the root trips inside the grandchild: running calls aborted, none started after, every call answered once", async () => {
    // r1, c1 and g1 are calls 1-3; the fourth (g2 or g3) exceeds the limit.
    const { root, rootModel, slow, note, seen } = tree({ maxToolCalls: 3 });
    const events: AgentEvent[] = [];
    let result: any;
    for await (const event of root.stream("go")) {
      events.push(event);
      if (event.type === "result") result = event;
    }
    expect(result.subtype).toBe("error_max_budget");
    expect(result.isError).toBe(true);
    expect(result.error.message).toMatch(
      /maxToolCalls \(AgentOptions\) is 3 tool calls, and the agent tree reached 4/,
    );
    // The root hook saw every call of the tree.
    // (g3 may be cancelled before its hooks: the tree tripped while g2 was decided.)
    expect(seen.slice(0, 4)).toEqual(["r1", "c1", "g1", "g2"]);
    expect(slow.state).toMatchObject({ started: 1, aborted: 1 });
    expect(note.runs).toEqual([]);
    expect(rootModel.requests).toHaveLength(1);
    expectEveryCallAnsweredOnce(events);
    expectValidTranscript(result.messages);
  });

  it("maxTotalTokens counts the children's model calls (input + output)", async () => {
    const { root, slow } = tree({});
    // 15 tokens per model call: root, child, grandchild = 45 > 40 after the grandchild's call.
    const result = await root.run("go", { maxTotalTokens: 40 });
    expect(result.subtype).toBe("error_max_budget");
    expect(result.error!.message).toMatch(
      /maxTotalTokens \(RunOptions\) is 40 tokens, and the agent tree reached 45/,
    );
    // Started eagerly while the reply streamed (before its usage came), then aborted.
    expect(slow.state.aborted).toBe(slow.state.started);
    expectValidTranscript(result.messages);
  });

  it("a budget option that is not a number is a ConfigurationError", () => {
    const model = scriptedModel([{ text: "x" }]);
    expect(() => createBareAgent({ model, maxToolCalls: 1.5 })).toThrow(
      /maxToolCalls must be a whole number/,
    );
    expect(() => createBareAgent({ model, maxBudgetUsd: "1" as never })).toThrow(/maxBudgetUsd/);
  });
});

/** A model that streams: a call to `probe` first, then waits (until aborted), then a call to `act`. */
function slowStreamingModel(): Model & { calls: number } {
  const model = {
    provider: "test",
    modelId: "slow-stream",
    calls: 0,
    async *stream(
      _request: unknown,
      { signal }: { signal: AbortSignal },
    ): AsyncIterable<ModelStreamEvent> {
      model.calls++;
      yield { type: "tool_call", id: "t1", name: "probe", input: {} };
      await new Promise<void>((resolve, reject) => {
        if (signal.aborted) reject(signal.reason);
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
      yield { type: "tool_call", id: "t2", name: "act", input: { n: "t2" } };
    },
  };
  return model;
}

describe("guardrails", () => {
  it("a tripwire at 50 ms during a streamed reply aborts the tool that had started and starts no other", async () => {
    const probe = waiting("probe", { network: "none", sideEffects: "none" });
    const act = counting("act");
    const agent = createBareAgent({
      model: slowStreamingModel(),
      tools: [probe.tool, act.tool],
      guardrails: {
        input: [
          {
            name: "no-secrets",
            check: async ({ prompt }) => {
              await probe.state.begun.promise;
              await new Promise((resolve) => setTimeout(resolve, 50));
              return { tripwire: prompt.includes("password"), info: { found: "password" } };
            },
          },
        ],
      },
    });
    const events: AgentEvent[] = [];
    let result: any;
    for await (const event of agent.stream("my password is hunter2")) {
      events.push(event);
      if (event.type === "result") result = event;
    }
    expect(result.subtype).toBe("error_guardrail");
    expect(result.error.message).toBe(
      'The input guardrail "no-secrets" tripped: {"found":"password"}',
    );
    expect(probe.state).toMatchObject({ started: 1, aborted: 1 });
    expect(act.runs).toEqual([]);
    expect(events.find((e) => e.type === "guardrail")).toMatchObject({
      name: "no-secrets",
      phase: "input",
      tripped: true,
      info: { found: "password" },
    });
    expectEveryCallAnsweredOnce(events);
  });

  it("a call with side effects waits for the input guardrails beside the first model call", async () => {
    const act = counting("act");
    const agent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "a1", name: "act", input: { n: "a1" } }] },
        { text: "ok" },
      ]),
      tools: [act.tool],
      guardrails: {
        input: [
          {
            name: "slow-check",
            check: async () => {
              await new Promise((resolve) => setTimeout(resolve, 30));
              return { tripwire: true };
            },
          },
        ],
      },
    });
    const result = await agent.run("go");
    expect(result.subtype).toBe("error_guardrail");
    expect(act.runs).toEqual([]);
    expectValidTranscript(result.messages);
  });

  it("blocking input guardrails run before the first model call", async () => {
    const model = scriptedModel([{ text: "never" }]);
    const agent = createBareAgent({
      model,
      guardrails: { input: [{ name: "block", blocking: true, check: () => ({ tripwire: true }) }] },
    });
    const result = await agent.run("go");
    expect(result.subtype).toBe("error_guardrail");
    expect(model.requests).toHaveLength(0);
  });

  it("output, tool input and tool output guardrails; a child runs its ancestors' too", async () => {
    const note = counting("note");
    const child = createBareAgent({
      id: "child",
      model: scriptedModel([
        { toolCalls: [{ id: "k1", name: "note", input: { n: "rm -rf /" } }] },
        { text: "child done" },
      ]),
      tools: [note.tool],
    });
    const root = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "p1", name: "child", input: { prompt: "go" } }] },
        { text: "done" },
      ]),
      tools: [agentTool(child, { description: "C" })],
      guardrails: {
        toolInput: [
          {
            name: "no-rm",
            check: ({ input }) => ({ tripwire: JSON.stringify(input).includes("rm -rf") }),
          },
        ],
      },
    });
    const result = await root.run("go");
    expect(result.subtype).toBe("error_guardrail");
    expect(result.error!.message).toMatch(/toolInput guardrail "no-rm" tripped/);
    expect(note.runs).toEqual([]);

    const answer = createBareAgent({
      model: scriptedModel([{ text: "the secret is 42" }]),
      guardrails: {
        output: [
          {
            name: "no-secret",
            check: ({ result: text }) => ({ tripwire: text.includes("secret") }),
          },
        ],
      },
    });
    expect((await answer.run("go")).subtype).toBe("error_guardrail");

    const leaky = counting("leaky");
    const model = scriptedModel([
      { toolCalls: [{ id: "l1", name: "leaky", input: { n: "AKIA123" } }] },
      { text: "never" },
    ]);
    const out = createBareAgent({
      model,
      tools: [leaky.tool],
      guardrails: {
        toolOutput: [
          {
            name: "no-keys",
            check: ({ result: r }) => ({ tripwire: JSON.stringify(r.content).includes("AKIA") }),
          },
        ],
      },
    });
    const withheld = await out.run("go");
    expect(withheld.subtype).toBe("error_guardrail");
    expect(model.requests).toHaveLength(1);
    expect(JSON.stringify(withheld.messages)).not.toContain("ran AKIA123");
  });
});
