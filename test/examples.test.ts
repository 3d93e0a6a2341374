/**
 * Every seed example in examples/ (DESIGN "Acceptance"), run against `scriptedModel`: no network,
 * no API key. Agents the seeds build with a model name are checked as assembled, then their own
 * options run again with a scripted model in place of the name.
 */
import {
  type Agent,
  type AgentEvent,
  type AgentOptions,
  createBareAgent,
  createMailbox,
  delegateTool,
  PARALLEL_CALLS_HINT,
  type RunOptions,
  type SDKResultMessage,
  type ToolCall,
  type ToolResultBlock,
} from "skein";
import { type Script, type ScriptedModel, scriptedModel } from "skein/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type Deferred, deferred } from "./support/promises.ts";

// The examples build agents with createAgent and a model name; to run those agents' own options
// (their batch policy, their concurrency) under a scripted model, the test records the options
// each agent was built from. Seed 002 also calls anthropic(): here a stand-in returns a scripted
// model that calls get_weather, then repeats its result (the real client over HTTP is tested in
// test/providers/examples-http.test.ts).
// The seeds' agents are assembled at import, and an agent named by model needs its provider's key
// there: the user running them has one. Never sent: every model here is scripted.
vi.hoisted(() => {
  process.env.ANTHROPIC_API_KEY ||= "sk-test-never-sent";
  process.env.OPENAI_API_KEY ||= "sk-test-never-sent";
});
const recorded = vi.hoisted(() => ({
  agentOptions: new WeakMap<object, AgentOptions>(),
  anthropicCalls: [] as { options: unknown; model: ScriptedModel }[],
}));

vi.mock("skein", async (importOriginal) => {
  const actual = await importOriginal<typeof import("skein")>();
  const testing = await import("skein/testing");
  return {
    ...actual,
    createAgent(options: AgentOptions) {
      const agent = actual.createAgent(options);
      recorded.agentOptions.set(agent, options);
      return agent;
    },
    anthropic(options: unknown) {
      const model = testing.scriptedModel((request, index) =>
        index === 0
          ? { toolCalls: [{ name: "get_weather", input: { city: "Tokyo" } }] }
          : {
              text: toolResultsIn(request.messages)
                .map((block) => block.content)
                .join(""),
            },
      );
      recorded.anthropicCalls.push({ options, model });
      return model;
    },
  };
});

import * as batchPolicyExample from "../examples/000-tools-batch-policy.ts";
import * as calculatorExample from "../examples/000-tools-calculator.ts";
import * as searchExample from "../examples/000-tools-concurrency.ts";
import * as endRunExample from "../examples/000-tools-end-run.ts";
import * as researchExample from "../examples/003-tools-concurrency.ts";
import * as fetchTicketExample from "../examples/003-tools-fetch-ticket.ts";
import * as progressExample from "../examples/003-tools-progress.ts";

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

// ---------------------------------------------------------------- helpers

/** The options a seed's agent was built from, without its model name (and key, and URL). */
function optionsOf(agent: Agent): AgentOptions {
  const options = recorded.agentOptions.get(agent);
  if (!options) throw new Error("this agent was not built by createAgent in an example");
  const { model: _model, apiKey: _apiKey, baseURL: _baseURL, ...rest } = options;
  return rest;
}

/** Runs `options` with a scripted model through `stream()`, collecting every event. */
async function runScripted(options: AgentOptions, script: Script, runOptions: RunOptions = {}) {
  const model = scriptedModel(script);
  const agent = createBareAgent({ ...options, model });
  const events: AgentEvent[] = [];
  for await (const event of agent.stream("go", runOptions)) events.push(event);
  const result = events.at(-1) as SDKResultMessage;
  expect(result.type).toBe("result");
  return { model, events, result };
}

function toolResultsIn(messages: SDKResultMessage["messages"]): ToolResultBlock[] {
  return messages.flatMap((message) =>
    typeof message.content === "string"
      ? []
      : message.content.filter((block): block is ToolResultBlock => block.type === "tool_result"),
  );
}

function eventsOfType<TType extends string>(events: AgentEvent[], type: TType) {
  return events.filter((event) => event.type === type) as Extract<AgentEvent, { type: TType }>[];
}

// ---------------------------------------------------------------- seeds 000/001

describe("seeds 000/001: define a tool (calculator)", () => {
  const { agent, calculator } = calculatorExample;

  it("assembles the seed's agent with its DeepSeek endpoint and the calculator", () => {
    expect(typeof agent.run).toBe("function");
    expect(recorded.agentOptions.get(agent)).toMatchObject({
      baseURL: "https://api.deepseek.com/anthropic",
      model: "deepseek-v4-flash",
      tools: [calculator],
    });
  });

  it("sends the model the JSON Schema of the Zod schema, and nothing else of the tool", async () => {
    const { model } = await runScripted({ tools: [calculator] }, [{ text: "hi" }]);
    expect(model.requests[0]!.tools).toEqual([
      {
        name: "calculator",
        description: "Evaluate a simple arithmetic expression",
        input_schema: {
          type: "object",
          properties: { expr: { type: "string" } },
          required: ["expr"],
        },
      },
    ]);
  });

  it('answers "2+2" with the tool_result "4"', async () => {
    const { result } = await runScripted({ tools: [calculator] }, [
      { toolCalls: [{ id: "call_1", name: "calculator", input: { expr: "2+2" } }] },
      { text: "2+2 is 4." },
    ]);
    expect(toolResultsIn(result.messages)).toEqual([
      { type: "tool_result", tool_use_id: "call_1", content: "4", is_error: false },
    ]);
    expect(result).toMatchObject({ subtype: "success", result: "2+2 is 4.", numTurns: 2 });
  });

  it("runs the seed agent's own options under a scripted model", async () => {
    const { result } = await runScripted(optionsOf(agent), [
      { toolCalls: [{ id: "call_1", name: "calculator", input: { expr: "6*7" } }] },
      { text: "42" },
    ]);
    expect(toolResultsIn(result.messages).map((block) => block.content)).toEqual(["42"]);
  });

  it("rejects invalid input before the handler runs, naming the field", async () => {
    const { result } = await runScripted({ tools: [calculator] }, [
      { toolCalls: [{ id: "call_1", name: "calculator", input: { expr: 2 } }] },
      { text: "sorry" },
    ]);
    const [block] = toolResultsIn(result.messages);
    expect(block!.is_error).toBe(true);
    expect(block!.content).toContain("expr");
  });
});

describe("seeds 000/001: end the run from a tool (finish)", () => {
  const { finish } = endRunExample;

  it("ends the run with the tool's text, without calling the model again", async () => {
    const { result, model } = await runScripted({ tools: [finish] }, [
      { toolCalls: [{ name: "finish", input: { answer: "Paris" } }] },
    ]);
    expect(result).toMatchObject({
      subtype: "success",
      result: "Paris",
      isError: false,
      numTurns: 1,
    });
    expect(model.requests).toHaveLength(1);
  });

  it("lets the other calls of the batch finish and enter the history", async () => {
    const { result } = await runScripted({ tools: [calculatorExample.calculator, finish] }, [
      {
        toolCalls: [
          { id: "call_1", name: "calculator", input: { expr: "2+2" } },
          { id: "call_2", name: "finish", input: { answer: "4" } },
        ],
      },
    ]);
    expect(
      toolResultsIn(result.messages).map((block) => [block.tool_use_id, block.content]),
    ).toEqual([
      ["call_1", "4"],
      ["call_2", "4"],
    ]);
    expect(result).toMatchObject({ subtype: "success", result: "4", numTurns: 1 });
  });
});

describe("seeds 000/001: run independent tools concurrently (search)", () => {
  const { agent, documentIndex, search } = searchExample;

  it("assembles the seed's agent", () => {
    expect(recorded.agentOptions.get(agent)).toMatchObject({
      model: "claude-sonnet-4-6",
      tools: [search],
      toolConcurrency: { mode: "safe", maxConcurrency: 8 },
    });
  });

  it("runs the searches of one reply at the same time, and answers in call order", async () => {
    const pending: Deferred<string>[] = [];
    const allStarted = deferred();
    vi.spyOn(documentIndex, "search").mockImplementation(() => {
      const answer = deferred<string>();
      pending.push(answer);
      if (pending.length === 3) allStarted.resolve();
      return answer.promise;
    });
    const running = runScripted(optionsOf(agent), [
      {
        toolCalls: [
          { id: "call_a", name: "search", input: { query: "alpha" } },
          { id: "call_b", name: "search", input: { query: "beta" } },
          { id: "call_c", name: "search", input: { query: "gamma" } },
        ],
      },
      { text: "found them" },
    ]);
    // Only calls that overlap can all be waiting at once; run one at a time, this never resolves.
    await allStarted.promise;
    expect(vi.mocked(documentIndex.search).mock.calls).toEqual([["alpha"], ["beta"], ["gamma"]]);
    pending[2]!.resolve("gamma hits");
    pending[0]!.resolve("alpha hits");
    pending[1]!.resolve("beta hits");
    const { result, model } = await running;
    expect(
      toolResultsIn(result.messages).map((block) => [block.tool_use_id, block.content]),
    ).toEqual([
      ["call_a", "alpha hits"],
      ["call_b", "beta hits"],
      ["call_c", "gamma hits"],
    ]);
    expect(model.requests[0]!.system).toContain(PARALLEL_CALLS_HINT);
  }, 120_000);

  it("runs the app code as written", async () => {
    const { result } = await runScripted(optionsOf(agent), [
      { toolCalls: [{ name: "search", input: { query: "tides" } }] },
      { text: "nothing" },
    ]);
    expect(toolResultsIn(result.messages)[0]!.content).toBe('No documents match "tides".');
  });
});

describe("seeds 000/001: validate a tool batch before execution (batch policy)", () => {
  const { agent, document, incrementRevision } = batchPolicyExample;
  const policy = () => optionsOf(agent).toolBatchPolicy!;
  const update: ToolCall = { id: "call_1", name: "incrementRevision", input: {}, kind: "tool" };
  const handoff: ToolCall = {
    id: "call_2",
    name: "writer",
    input: { mode: "handoff", task: "draft" },
    kind: "agent_tool",
  };

  it("assembles the seed's agent with its policy", () => {
    expect(recorded.agentOptions.get(agent)).toMatchObject({
      model: "claude-sonnet-4-6",
      tools: [incrementRevision],
    });
    expect(typeof policy().validate).toBe("function");
  });

  it("rejects incrementRevision and a handoff agent tool in one batch", async () => {
    expect(await policy().validate({ toolCalls: [update, handoff] })).toEqual({
      allowed: false,
      code: "invalid_tool_batch",
      message: "Update the revision before delegating dependent work.",
      conflictingToolCallIds: ["call_1", "call_2"],
      suggestedNextStep: "Run the update first, then hand off the new revision.",
    });
  });

  it("allows either one alone, and a non-handoff agent tool beside the update", async () => {
    expect(await policy().validate({ toolCalls: [update] })).toEqual({ allowed: true });
    expect(await policy().validate({ toolCalls: [handoff] })).toEqual({ allowed: true });
    const delegate = { ...handoff, input: { mode: "delegate" } };
    expect(await policy().validate({ toolCalls: [update, delegate] })).toEqual({ allowed: true });
  });

  it("sees the whole batch before the update runs, and lets it run alone", async () => {
    const options = optionsOf(agent);
    const validate = vi.spyOn(options.toolBatchPolicy!, "validate");
    const before = document.revision;
    const { result } = await runScripted(options, [
      { toolCalls: [{ id: "call_1", name: "incrementRevision", input: {} }] },
      { text: "updated" },
    ]);
    expect(validate).toHaveBeenCalledOnce();
    expect(validate.mock.calls[0]![0].toolCalls).toEqual([update]);
    expect(toolResultsIn(result.messages)[0]).toMatchObject({
      content: `revision ${before + 1}`,
      is_error: false,
    });
    expect(document.revision).toBe(before + 1);
  });

  it("rejects incrementRevision beside a delegateTool handoff end to end: neither runs, nothing is posted", async () => {
    // The page's agent with the agent tool it speaks of: a writer behind delegateTool, with a mailbox.
    const mailbox = createMailbox();
    const writerModel = scriptedModel([{ text: "drafted" }]);
    const writer = createBareAgent({ id: "writer", model: writerModel });
    const options = {
      ...optionsOf(agent),
      tools: [incrementRevision, delegateTool({ writer }, { mailbox })],
    };
    const validate = vi.spyOn(options.toolBatchPolicy!, "validate");
    const before = document.revision;
    const { result } = await runScripted(options, [
      {
        toolCalls: [
          { id: "call_1", name: "incrementRevision", input: {} },
          {
            id: "call_2",
            name: "delegate",
            input: { agent: "writer", mode: "handoff", prompt: "draft" },
          },
        ],
      },
      { text: "I will update first." },
    ]);
    expect(validate.mock.calls[0]![0].toolCalls.map((call) => call.kind)).toEqual([
      "tool",
      "agent_tool",
    ]);
    const results = toolResultsIn(result.messages);
    expect(results).toHaveLength(2);
    for (const block of results) {
      expect(block.is_error).toBe(true);
      expect(block.content).toContain("invalid_tool_batch");
    }
    expect(document.revision).toBe(before);
    expect(await mailbox.claim("writer")).toBeUndefined();
    expect(writerModel.requests).toHaveLength(0);
  });
});

// ---------------------------------------------------------------- seed 002

describe("seed 002: define a tool (get_weather with query)", () => {
  it("streams the model's answer, which repeats the tool's result (anthropic() stood in)", async () => {
    const written: string[] = [];
    vi.spyOn(process.stdout, "write").mockImplementation(((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    }) as typeof process.stdout.write);
    const { weather } = await import("../examples/002-custom-tools-weather.ts");
    vi.mocked(process.stdout.write).mockRestore();

    expect(written.join("")).toBe("It's sunny in Tokyo.");
    expect(recorded.anthropicCalls).toHaveLength(1);
    const { options, model } = recorded.anthropicCalls[0]!;
    expect(options).toEqual({ apiKey: process.env.ANTHROPIC_API_KEY });
    // modelName reaches the provider; "read_file" names no tool of this agent and is ignored.
    expect(model.requests[0]!.modelName).toBe("claude-sonnet-4-6");
    expect(model.requests[0]!.tools.map((spec) => spec.name)).toEqual(["get_weather"]);
    expect(model.requests[0]!.messages[0]).toEqual({
      role: "user",
      content: "What's the weather in Tokyo?",
    });
    expect(weather.name).toBe("get_weather");
  });

  it("returns the handler's string as the tool result", async () => {
    const { weather } = await import("../examples/002-custom-tools-weather.ts");
    const { result } = await runScripted({ tools: [weather] }, [
      { toolCalls: [{ name: "get_weather", input: { city: "Lima" } }] },
      { text: "ok" },
    ]);
    expect(toolResultsIn(result.messages)[0]).toMatchObject({
      content: "It's sunny in Lima.",
      is_error: false,
    });
  });

  // Seed 002's query() with the real anthropic() provider, end to end against mockServer over
  // HTTP (and seeds 000/001 through the real client): test/providers/examples-http.test.ts.
});

// ---------------------------------------------------------------- seed 003

describe("seed 003: define a local tool (fetchTicket)", () => {
  const { fetchTicket } = fetchTicketExample;
  const callTicket = { name: "fetch-ticket", input: { ticketId: "T-7" } };

  /** Stubs fetch with a response that waits for the request's signal to abort, as fetch does. */
  function stubHangingFetch() {
    const called = deferred<AbortSignal>();
    vi.stubGlobal(
      "fetch",
      vi.fn((_url: string, init: RequestInit) => {
        const signal = init.signal!;
        called.resolve(signal);
        return new Promise((_resolve, reject) => {
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        });
      }),
    );
    return called.promise;
  }

  it("fetches the ticket with the context's signal and returns its JSON as text", async () => {
    const fetchStub = vi.fn(
      async (_url: string, _init: RequestInit) =>
        new Response(JSON.stringify({ id: "T-7", subject: "Printer on fire" }), {
          headers: { "content-type": "application/json" },
        }),
    );
    vi.stubGlobal("fetch", fetchStub);
    const { result } = await runScripted({ tools: [fetchTicket] }, [
      { toolCalls: [callTicket] },
      { text: "It is on fire." },
    ]);
    expect(fetchStub).toHaveBeenCalledOnce();
    const [url, init] = fetchStub.mock.calls[0]!;
    expect(url).toBe("https://internal.example/tickets/T-7");
    expect(init.signal).toBeInstanceOf(AbortSignal);
    expect(init.signal!.aborted).toBe(false);
    expect(toolResultsIn(result.messages)[0]).toMatchObject({
      content: '{"id":"T-7","subject":"Printer on fire"}',
      is_error: false,
    });
  });

  it("aborts the request through context.signal when the run is aborted", async () => {
    const fetchCalled = stubHangingFetch();
    const controller = new AbortController();
    const running = runScripted({ tools: [fetchTicket] }, [{ toolCalls: [callTicket] }], {
      signal: controller.signal,
    });
    const signal = await fetchCalled;
    controller.abort();
    await expect(running).rejects.toMatchObject({ name: "AbortError" });
    expect(signal.aborted).toBe(true);
  });

  it("aborts context.signal after timeoutMs (3 s) and fails the run with ToolTimeoutError", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const fetchCalled = stubHangingFetch();
    const running = runScripted({ tools: [fetchTicket] }, [{ toolCalls: [callTicket] }]);
    const signal = await fetchCalled;
    await vi.advanceTimersByTimeAsync(2_999);
    expect(signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const { result } = await running;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toMatchObject({ name: "ToolTimeoutError" });
    expect(result).toMatchObject({
      subtype: "error_during_execution",
      isError: true,
      error: { name: "ToolTimeoutError" },
    });
  });

  it("checks the input against its parameters before execute runs", async () => {
    const fetchStub = vi.fn();
    vi.stubGlobal("fetch", fetchStub);
    const { result } = await runScripted({ tools: [fetchTicket] }, [
      { toolCalls: [{ name: "fetch-ticket", input: { ticketId: 7, priority: "high" } }] },
      { text: "sorry" },
    ]);
    const [block] = toolResultsIn(result.messages);
    expect(block!.is_error).toBe(true);
    expect(block!.content).toContain("ticketId");
    expect(block!.content).toContain("priority");
    expect(fetchStub).not.toHaveBeenCalled();
  });
});

describe("seed 003: report progress (indexRepository)", () => {
  const { indexRepository } = progressExample;

  it("records each yield as a preliminary result and returns the final value as JSON", async () => {
    const { result, events } = await runScripted({ tools: [indexRepository] }, [
      { toolCalls: [{ id: "call_1", name: "index-repository", input: { path: "." } }] },
      { text: "indexed" },
    ]);
    const call = result.steps[0]!.toolCalls[0]!;
    expect(call.preliminaryResults).toEqual([{ phase: "scan" }, { phase: "embed" }]);
    expect(call.result.content).toBe('{"indexed":248}');
    expect(toolResultsIn(result.messages)[0]!.content).toBe('{"indexed":248}');
    expect(eventsOfType(events, "tool_update").map((event) => event.update)).toEqual([
      { phase: "scan" },
      { phase: "embed" },
    ]);
    expect(
      events.filter((event) => event.type.startsWith("tool_")).map((event) => event.type),
    ).toEqual(["tool_start", "tool_update", "tool_update", "tool_end"]);
  });
});

describe("seed 003: run independent tools concurrently (research-agent)", () => {
  const { agent, internalApi } = researchExample;

  it("assembles the seed's agent, which names no model", () => {
    expect(agent.id).toBe("research-agent");
    expect(recorded.agentOptions.get(agent)).toMatchObject({
      toolExecution: { toolConcurrency: 3 },
    });
    expect(recorded.agentOptions.get(agent)!.model).toBeUndefined();
  });

  it("overlaps at most 3 calls and keeps the results in call order", async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const gates: Deferred<unknown>[] = [];
    const threeWaiting = deferred();
    vi.spyOn(internalApi, "get").mockImplementation(async (path: string) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        if (gates.length === 3) return { path };
        const gate = deferred<unknown>();
        gates.push(gate);
        if (gates.length === 3) threeWaiting.resolve();
        return await gate.promise;
      } finally {
        inFlight--;
      }
    });
    const running = runScripted(optionsOf(agent), [
      {
        toolCalls: [
          { id: "c1", name: "fetch-docs", input: { topic: "auth" } },
          { id: "c2", name: "fetch-status", input: { service: "api" } },
          { id: "c3", name: "fetch-incidents", input: { service: "api" } },
          { id: "c4", name: "fetch-status", input: { service: "db" } },
          { id: "c5", name: "fetch-incidents", input: { service: "db" } },
        ],
      },
      { text: "summary" },
    ]);
    await threeWaiting.promise;
    // A macrotask: room for a fourth call to start if the limit were not kept.
    await new Promise((resolve) => setImmediate(resolve));
    expect(vi.mocked(internalApi.get)).toHaveBeenCalledTimes(3);
    gates[1]!.resolve({ path: "/status/api" });
    gates[2]!.resolve({ path: "/incidents/api" });
    gates[0]!.resolve({ path: "/docs/auth" });
    const { result } = await running;
    expect(maxInFlight).toBe(3);
    expect(
      toolResultsIn(result.messages).map((block) => [block.tool_use_id, block.content]),
    ).toEqual([
      ["c1", '{"path":"/docs/auth"}'],
      ["c2", '{"path":"/status/api"}'],
      ["c3", '{"path":"/incidents/api"}'],
      ["c4", '{"path":"/status/db"}'],
      ["c5", '{"path":"/incidents/db"}'],
    ]);
  }, 120_000);

  it("runs the app code as written", async () => {
    const { result } = await runScripted(optionsOf(agent), [
      { toolCalls: [{ name: "fetch-docs", input: { topic: "auth" } }] },
      { text: "ok" },
    ]);
    expect(toolResultsIn(result.messages)[0]!.content).toBe('{"path":"/docs/auth","status":"ok"}');
  });
});
