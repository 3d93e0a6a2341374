import type { StandardSchemaV1 } from "@standard-schema/spec";
import {
  type AgentEvent,
  type ApprovalHandler,
  agentTool,
  createBareAgent,
  createMailbox,
  type DelegateInput,
  defineTool,
  delegateTool,
  type MailboxMessage,
  type PendingToolCall,
  query,
  type SDKResultMessage,
  type ToolCall,
  type ToolContext,
  type ToolDefinition,
  type ToolOptions,
  tool,
  type Usage,
} from "skein";
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
