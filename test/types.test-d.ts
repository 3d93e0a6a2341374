import type { StandardSchemaV1 } from "@standard-schema/spec";
import {
  type AgentEvent,
  type AgentRun,
  type ApprovalHandler,
  agentTool,
  createAgent,
  createBareAgent,
  createMailbox,
  createSteering,
  type DelegateInput,
  defineAgent,
  defineTool,
  delegateTool,
  type FileAgentDefinition,
  type MailboxMessage,
  type ModelCallChange,
  type ModelCallContext,
  type ModelSettings,
  type PendingToolCall,
  type Prompt,
  query,
  type RunState,
  type SDKResultMessage,
  type SessionStore,
  type Steering,
  type ToolCall,
  type ToolContext,
  type ToolDefinition,
  type ToolOptions,
  tool,
  type Usage,
} from "skein";
import {
  createWorker,
  type EnqueuedRun,
  enqueueRun,
  followRun,
  type PgBossLike,
  waitForRun,
} from "skein/pgboss";
import { scriptedModel } from "skein/testing";
import { describe, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { z as z3 } from "zod/v3";
import { z as z4 } from "zod/v4";

const model = scriptedModel([]);

describe("tool(): the handler's input is inferred from the schema", () => {
  it("Zod 4 (zod and zod/v4): the parsed output type, with no casts", () => {
    const search = tool(
      "search",
      "Search",
      z.object({ query: z.string(), limit: z.number().optional(), tags: z.array(z.string()) }),
      (input, context) => {
        expectTypeOf(input).toEqualTypeOf<{
          query: string;
          limit?: number | undefined;
          tags: string[];
        }>();
        expectTypeOf(context).toEqualTypeOf<ToolContext>();
        return input.query;
      },
    );
    expectTypeOf(search).toEqualTypeOf<
      ToolDefinition<{ query: string; limit?: number | undefined; tags: string[] }>
    >();

    tool("v4", "v4", z4.object({ expr: z4.string() }), async (input) => {
      expectTypeOf(input).toEqualTypeOf<{ expr: string }>();
      return { content: input.expr };
    });
  });

  it("transforms and defaults: the handler sees the output side", () => {
    tool(
      "transformed",
      "d",
      z.object({
        n: z.string().transform((text) => text.length),
        flag: z.boolean().default(false),
      }),
      (input) => {
        expectTypeOf(input).toEqualTypeOf<{ n: number; flag: boolean }>();
        return "ok";
      },
    );
  });

  it("Zod 3 (zod/v3)", () => {
    tool("v3", "d", z3.object({ city: z3.string(), days: z3.number() }), (input) => {
      expectTypeOf(input).toEqualTypeOf<{ city: string; days: number }>();
      return `${input.city}`;
    });
  });

  it("a hand-written Standard Schema: its output type", () => {
    const city = {} as StandardSchemaV1<unknown, { city: string }>;
    tool("weather", "d", city, ({ city }) => {
      expectTypeOf(city).toEqualTypeOf<string>();
      return city;
    });
  });

  it("a wrong property access is a compile error", () => {
    tool("strict", "d", z.object({ a: z.string() }), (input) => {
      // @ts-expect-error `b` is not in the schema
      return input.b;
    });
  });

  it("the handler may return only a string, content blocks, a ToolResult or an async generator of them", () => {
    tool("s", "d", z.object({}), () => "text");
    tool("b", "d", z.object({}), () => [{ type: "text" as const, text: "x" }]);
    tool("r", "d", z.object({}), async () => ({
      content: "x",
      details: { any: 1 },
      endTurn: true,
    }));
    tool("g", "d", z.object({}), async function* () {
      yield { progress: 1 };
      return "done";
    });
    // @ts-expect-error a number is not a tool result
    tool("n", "d", z.object({}), () => 42);
    // @ts-expect-error an object without content is not a ToolResult
    tool("o", "d", z.object({}), () => ({ text: "x" }));
  });
});

describe("ToolOptions callbacks get the same input type", () => {
  it("isConcurrencySafe, resourceKeys and ruleContent see the schema's output", () => {
    type Input = { path: string; recursive: boolean };
    tool("list", "d", z.object({ path: z.string(), recursive: z.boolean() }), () => "ok", {
      isConcurrencySafe: (input) => {
        expectTypeOf(input).toEqualTypeOf<Input>();
        return !input.recursive;
      },
      resourceKeys: (input) => {
        expectTypeOf(input).toEqualTypeOf<Input>();
        return [input.path];
      },
      ruleContent: (input) => {
        expectTypeOf(input).toEqualTypeOf<Input>();
        return input.path;
      },
      prepareArguments: (raw) => {
        expectTypeOf(raw).toEqualTypeOf<Record<string, unknown>>();
        return raw;
      },
    });
  });

  it("a callback reading a field the schema lacks is a compile error", () => {
    tool("list", "d", z.object({ path: z.string() }), () => "ok", {
      // @ts-expect-error `depth` is not in the schema
      isConcurrencySafe: (input) => input.depth > 1,
    });
  });

  it("ToolOptions<T> is generic in the input", () => {
    expectTypeOf<
      Parameters<NonNullable<ToolOptions<{ a: 1 }>["isConcurrencySafe"]>>[0]
    >().toEqualTypeOf<{
      a: 1;
    }>();
  });
});

describe("defineTool(): the input is inferred from execute's annotation", () => {
  it("infers TInput from the annotated parameter (seed 003)", () => {
    const fetchTicket = defineTool({
      id: "fetch-ticket",
      parameters: { type: "object", properties: { ticketId: { type: "string" } } },
      async execute(input: { ticketId: string }, context) {
        expectTypeOf(context).toEqualTypeOf<ToolContext>();
        return { id: input.ticketId };
      },
    });
    expectTypeOf(fetchTicket).toEqualTypeOf<ToolDefinition<{ ticketId: string }>>();
  });

  it("the callbacks get the same input", () => {
    defineTool({
      id: "ask",
      execute: (input: { question: string }) => input.question,
      onToolCalled: (input) => {
        expectTypeOf(input).toEqualTypeOf<{ question: string }>();
        return null;
      },
      onResponseReceived: (_response, input) => {
        expectTypeOf(input).toEqualTypeOf<{ question: string }>();
        return "ok";
      },
      isConcurrencySafe: (input) => {
        expectTypeOf(input).toEqualTypeOf<{ question: string }>();
        return true;
      },
    });
  });

  it("infers TInput from a Zod validator when execute is not annotated", () => {
    defineTool({
      id: "zod-validated",
      validator: z.object({ n: z.number() }),
      execute: (input) => {
        expectTypeOf(input).toEqualTypeOf<{ n: number }>();
        return input.n;
      },
    });
  });

  it("an async generator execute is accepted", () => {
    const indexRepository = defineTool({
      id: "index-repository",
      async *execute(input: { path: string }) {
        yield { phase: "scan" };
        return { indexed: input.path.length };
      },
    });
    expectTypeOf(indexRepository).toEqualTypeOf<ToolDefinition<{ path: string }>>();
  });
});

describe("tools of different input types go into one agent", () => {
  it("an array of tool() and defineTool() definitions is accepted by createBareAgent and query", () => {
    const byZod = tool("a", "d", z.object({ a: z.string() }), ({ a }) => a, {
      ruleContent: (input) => input.a,
    });
    const byJson = defineTool({ id: "b", execute: (input: { b: number }) => input.b });
    const tools = [byZod, byJson];
    createBareAgent({ model, tools });
    createBareAgent({ model, tools: [byZod, byJson] });
    query({ prompt: "hi", model, tools });
    const list: ToolDefinition[] = [byZod, byJson];
    expectTypeOf(list[0]!.name).toEqualTypeOf<string>();
  });
});

describe("ctx.emit takes namespaced custom events only", () => {
  it('"app.progress" and "app:progress" are accepted, bare and built-in types are not', () => {
    tool("emitter", "d", z.object({}), (_input, context) => {
      context.emit({ type: "app.progress", percent: 50 });
      context.emit({ type: "app:progress" });
      // @ts-expect-error a custom event type must be namespaced
      context.emit({ type: "progress" });
      // @ts-expect-error a built-in event type cannot be emitted
      context.emit({ type: "text_delta", text: "fake" });
      // @ts-expect-error the type is required
      context.emit({ percent: 50 });
      return "ok";
    });
  });
});

describe("narrowing the stream's events by type", () => {
  it("agent.stream(): text_delta has a string text, tool_end its fields", async () => {
    const agent = createBareAgent({ model });
    for await (const event of agent.stream("hi")) {
      expectTypeOf(event).toEqualTypeOf<AgentEvent>();
      if (event.type === "text_delta") expectTypeOf(event.text).toEqualTypeOf<string>();
      if (event.type === "tool_end") {
        expectTypeOf(event.isError).toEqualTypeOf<boolean>();
        expectTypeOf(event.callId).toEqualTypeOf<string>();
      }
      if (event.type === "tool_update") expectTypeOf(event.update).toEqualTypeOf<unknown>();
      if (event.type === "result") expectTypeOf(event).toEqualTypeOf<SDKResultMessage>();
    }
  });

  it("query() (seed 002's loop, as written)", async () => {
    for await (const ev of query({ prompt: "What's the weather in Tokyo?", model })) {
      if (ev.type === "text_delta") {
        expectTypeOf(ev.text).toEqualTypeOf<string>();
        process.stdout.write(ev.text);
      }
    }
  });

  it("run() resolves to the result message", () => {
    const agent = createBareAgent({ model });
    expectTypeOf(agent.run("hi")).toEqualTypeOf<Promise<SDKResultMessage>>();
  });
});

describe("agents as tools (issue 11): events from child runs and the new fields", () => {
  const child = createBareAgent({ id: "child", model });

  it('narrowing a stream event to "result" still gives exactly SDKResultMessage (no parentCallId)', async () => {
    const agent = createBareAgent({ model, tools: [agentTool(child, { description: "d" })] });
    for await (const event of agent.stream("hi")) {
      if (event.type === "result") {
        expectTypeOf(event).toEqualTypeOf<SDKResultMessage>();
        // @ts-expect-error the result event is always the run's own: it has no parentCallId
        void event.parentCallId;
      }
      if (event.type === "tool_start") {
        expectTypeOf(event.parentCallId).toEqualTypeOf<string | undefined>();
        expectTypeOf(event.callId).toEqualTypeOf<string>();
      }
      if (event.type === "text_delta")
        expectTypeOf(event.parentCallId).toEqualTypeOf<string | undefined>();
    }
  });

  it("tool_start's parentCallId is optional: an event without it is a valid tool_start", () => {
    type ToolStart = Extract<AgentEvent, { type: "tool_start" }>;
    const own: ToolStart = { type: "tool_start", callId: "a", name: "n", input: {} };
    const fromChild: ToolStart = { ...own, parentCallId: "p1" };
    expectTypeOf(own).toEqualTypeOf<ToolStart>();
    expectTypeOf(fromChild.parentCallId).toEqualTypeOf<string | undefined>();
    // @ts-expect-error parentCallId is a string
    const wrong: ToolStart = { ...own, parentCallId: 1 };
    void wrong;
  });

  it("agentTool and delegateTool return ToolDefinitions of their input", () => {
    expectTypeOf(agentTool(child, { description: "d" })).toEqualTypeOf<
      ToolDefinition<{ prompt: string }>
    >();
    expectTypeOf(delegateTool({ child })).toEqualTypeOf<ToolDefinition<DelegateInput>>();
    // @ts-expect-error description is required
    agentTool(child, {});
    // @ts-expect-error an unknown option is a compile error too
    agentTool(child, { description: "d", bogus: 1 });
    // An agent from loadAgents brings its own name and description.
    const fromFile = {} as FileAgentDefinition;
    expectTypeOf(agentTool(fromFile)).toEqualTypeOf<ToolDefinition<{ prompt: string }>>();
    expectTypeOf(agentTool(fromFile, { maxTurns: 2 })).toEqualTypeOf<
      ToolDefinition<{ prompt: string }>
    >();
  });

  it("the new fields: totalUsage, parentCallId on pending calls and approvals, kind, runNext's task", () => {
    expectTypeOf<SDKResultMessage["totalUsage"]>().toEqualTypeOf<Usage>();
    expectTypeOf<PendingToolCall["parentCallId"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Parameters<ApprovalHandler>[2]["parentCallId"]>().toEqualTypeOf<
      string | undefined
    >();
    expectTypeOf<ToolCall["kind"]>().toEqualTypeOf<"tool" | "agent_tool">();
    expectTypeOf(child.runNext(createMailbox())).toEqualTypeOf<
      Promise<(SDKResultMessage & { task: MailboxMessage }) | undefined>
    >();
  });
});

describe("interactive agents (issue 12): typed output, steering, the new events and hooks", () => {
  it("structuredResult is typed from a Zod output schema, with no cast", async () => {
    const r = await createBareAgent({ model, output: z.object({ city: z.string() }) }).run("x");
    expectTypeOf(r.structuredResult?.city).toEqualTypeOf<string | undefined>();
    expectTypeOf(r.structuredResult).toEqualTypeOf<{ city: string } | undefined>();
    // @ts-expect-error the schema has no such field
    void r.structuredResult?.country;
  });

  it("the schema's output side (transforms), for createAgent, defineAgent and resume too", async () => {
    const output = z.object({ word: z.string().transform((word) => word.length) });
    const agent = createAgent({ model, output });
    expectTypeOf((await agent.run("x")).structuredResult).toEqualTypeOf<
      { word: number } | undefined
    >();
    const defined = defineAgent({ model, output: z.object({ ok: z.boolean() }) });
    const fromDefinition = createBareAgent(defined);
    expectTypeOf((await fromDefinition.run("x")).structuredResult).toEqualTypeOf<
      { ok: boolean } | undefined
    >();
    expectTypeOf((await fromDefinition.resume({} as RunState)).structuredResult).toEqualTypeOf<
      { ok: boolean } | undefined
    >();
  });

  it("the result event of stream() and query() carries the same type", async () => {
    const output = z.object({ city: z.string() });
    for await (const event of createBareAgent({ model, output }).stream("x")) {
      if (event.type === "result")
        expectTypeOf(event.structuredResult).toEqualTypeOf<{ city: string } | undefined>();
    }
    for await (const event of query({ prompt: "x", model, output })) {
      if (event.type === "result")
        expectTypeOf(event.structuredResult).toEqualTypeOf<{ city: string } | undefined>();
    }
  });

  it("a Standard Schema gives its InferOutput; a JSON Schema or no output gives unknown", async () => {
    const standard = {} as StandardSchemaV1<{ raw: string }, { parsed: number }>;
    const typed = await createBareAgent({ model, output: standard }).run("x");
    expectTypeOf(typed.structuredResult).toEqualTypeOf<{ parsed: number } | undefined>();
    const json = await createBareAgent({
      model,
      output: { type: "object", properties: { a: { type: "string" } } },
    }).run("x");
    expectTypeOf(json.structuredResult).toEqualTypeOf<unknown>();
    const none = await createBareAgent({ model }).run("x");
    expectTypeOf(none.structuredResult).toEqualTypeOf<unknown>();
    expectTypeOf(none).toEqualTypeOf<SDKResultMessage>();
  });

  it("stream() returns an AgentRun: the events, and steer/followUp taking a Prompt", () => {
    const run = createBareAgent({ model }).stream("x");
    expectTypeOf(run).toEqualTypeOf<AgentRun<unknown>>();
    expectTypeOf(run).toMatchTypeOf<AsyncGenerator<AgentEvent, void, undefined>>();
    expectTypeOf(run).toMatchTypeOf<Steering>();
    expectTypeOf(run.steer).parameter(0).toEqualTypeOf<Prompt>();
    expectTypeOf(run.followUp).returns.toEqualTypeOf<void>();
    expectTypeOf(createSteering()).toEqualTypeOf<Steering>();
    // @ts-expect-error a number is not a Prompt
    run.steer(42);
    createBareAgent({ model }).run("x", { steering: createSteering() });
    // @ts-expect-error steering is a Steering
    createBareAgent({ model }).run("x", { steering: {} });
  });

  it("the new events narrow to their fields", async () => {
    for await (const event of createBareAgent({ model }).stream("x")) {
      if (event.type === "tool_input_delta") {
        expectTypeOf(event.callId).toEqualTypeOf<string>();
        expectTypeOf(event.delta).toEqualTypeOf<string>();
        expectTypeOf(event.partialInput).toEqualTypeOf<unknown>();
      }
      if (event.type === "user_message") {
        expectTypeOf(event.origin).toEqualTypeOf<"steer" | "follow_up">();
        expectTypeOf(event.turn).toEqualTypeOf<number>();
      }
      if (event.type === "compaction") {
        expectTypeOf(event.removed).toEqualTypeOf<
          { callId: string; name: string; chars: number }[]
        >();
        expectTypeOf(event.summarized).toEqualTypeOf<boolean>();
      }
    }
    const result = await createBareAgent({ model }).run("x");
    expectTypeOf(result.undelivered).toEqualTypeOf<
      { origin: "steer" | "follow_up"; message: import("skein").Message }[] | undefined
    >();
    expectTypeOf(result.steps[0]!.userMessages).toEqualTypeOf<
      { origin: "steer" | "follow_up"; message: import("skein").Message }[] | undefined
    >();
  });

  it("beforeModelCall, modelSettings and beforeToolCall { ask } are typed", () => {
    createBareAgent({
      model,
      modelSettings: { temperature: 0.2, toolChoice: { name: "x" }, stopSequences: ["END"] },
      hooks: {
        beforeModelCall: (context) => {
          expectTypeOf(context).toEqualTypeOf<ModelCallContext>();
          expectTypeOf(context.modelSettings).toEqualTypeOf<ModelSettings>();
          return { tools: context.tools.slice(0, 1), modelSettings: { toolChoice: "required" } };
        },
        beforeToolCall: () => ({ ask: "a person should look" }),
      },
    });
    expectTypeOf<ModelCallChange["tools"]>().toEqualTypeOf<string[] | undefined>();
    // @ts-expect-error not a toolChoice
    createBareAgent({ model, modelSettings: { toolChoice: "sometimes" } });
    // @ts-expect-error temperature is a number
    createBareAgent({ model, modelSettings: { temperature: "hot" } });
  });
});

describe("skein/pgboss (issue 14): the queue's functions are typed like the agent's", () => {
  it("waitForRun and followRun carry the output type; workers take definitions and agents", () => {
    const boss = {} as PgBossLike;
    const sessionStore = {} as SessionStore;
    expectTypeOf(waitForRun<{ city: string }>(sessionStore, "s")).resolves.toEqualTypeOf<
      SDKResultMessage<{ city: string }>
    >();
    expectTypeOf(followRun(sessionStore, "s")).toEqualTypeOf<
      AsyncGenerator<AgentEvent<unknown>, void, undefined>
    >();
    expectTypeOf(
      enqueueRun(boss, { agent: "a", prompt: "p", sessionStore }),
    ).resolves.toEqualTypeOf<EnqueuedRun>();
    const definition = defineAgent({ output: z.object({ city: z.string() }) });
    expectTypeOf(createWorker).toBeCallableWith(boss, {
      sessionStore,
      agents: { a: definition, b: createBareAgent({}) },
    });
    // @ts-expect-error: a prompt is text or content blocks
    enqueueRun(boss, { agent: "a", prompt: 42, sessionStore });
  });
});
