/**
 * fromAiSdkTools: tools written with Vercel ai's own `tool()` / `jsonSchema()` / `zodSchema()`
 * (ai 6, a dev dependency only), run unchanged inside a skein agent.
 */
import { dynamicTool, jsonSchema, type ToolSet, tool, zodSchema } from "ai";
import {
  AbortError,
  type AgentEvent,
  ConfigurationError,
  createAgent,
  createBareAgent,
} from "skein";
import { fromAiSdkTools } from "skein/adapters";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { runCall, runCalls, textOfBlock } from "../tools/harness.ts";

describe("fromAiSdkTools(): a Zod inputSchema", () => {
  it("keeps the name (the record's key) and description; the model sees the JSON Schema", async () => {
    const tools = fromAiSdkTools({
      weather: tool({
        description: "The weather in a city",
        inputSchema: z.object({ city: z.string().describe("City name") }),
        execute: async ({ city }) => `Sunny in ${city}`,
      }),
    });
    expect(tools.map((t) => [t.name, t.description])).toEqual([
      ["weather", "The weather in a city"],
    ]);
    const run = await runCall(tools[0]!, { city: "Oslo" });
    expect(run.model.requests[0]!.tools).toEqual([
      {
        name: "weather",
        description: "The weather in a city",
        input_schema: expect.objectContaining({
          type: "object",
          properties: { city: { type: "string", description: "City name" } },
          required: ["city"],
        }),
      },
    ]);
    expect(run.toolResults).toEqual([
      { type: "tool_result", tool_use_id: "call_1", content: "Sunny in Oslo", is_error: false },
    ]);
  });

  it("coerces the input as for any skein tool, then calls execute(input, { toolCallId, messages: [], abortSignal })", async () => {
    const seen: unknown[] = [];
    const [add] = fromAiSdkTools({
      add: tool({
        inputSchema: z.object({ a: z.number(), b: z.number(), exact: z.boolean() }),
        execute: async (input, options) => {
          seen.push(input, options);
          return { sum: input.a + input.b };
        },
      }),
    });
    const run = await runCall(add!, { a: "2", b: 3, exact: "true" });
    expect(seen[0]).toEqual({ a: 2, b: 3, exact: true });
    const options = seen[1] as Record<string, unknown>;
    expect(Object.keys(options).toSorted()).toEqual(["abortSignal", "messages", "toolCallId"]);
    expect(options.toolCallId).toBe("call_1");
    expect(options.messages).toEqual([]);
    expect(options.abortSignal).toBeInstanceOf(AbortSignal);
    expect((options.abortSignal as AbortSignal).aborted).toBe(false);
    // Anything but a string goes to the model as JSON text (defineTool's rule).
    expect(run.toolResults[0]).toMatchObject({ content: '{"sum":5}', is_error: false });
  });

  it("invalid input is an error result naming every bad field; execute never runs", async () => {
    let calls = 0;
    const [add] = fromAiSdkTools({
      add: tool({
        inputSchema: z.object({ a: z.number(), b: z.number() }),
        execute: async ({ a, b }) => {
          calls++;
          return a + b;
        },
      }),
    });
    const run = await runCall(add!, { a: "two" });
    expect(calls).toBe(0);
    expect(run.toolResults[0]!.is_error).toBe(true);
    const text = textOfBlock(run.toolResults[0]);
    expect(text).toContain('Invalid input for tool "add"');
    expect(text).toMatch(/- a: .*received string "two"/);
    expect(text).toMatch(/- b: required field is missing/);
  });

  it("applies the schema's transforms before execute, as ai does", async () => {
    let seen: unknown;
    const [tag] = fromAiSdkTools({
      tag: tool({
        inputSchema: z.object({ name: z.string().transform((s) => s.toUpperCase()) }),
        execute: async (input) => {
          seen = input;
          return "ok";
        },
      }),
    });
    await runCall(tag!, { name: "urgent" });
    expect(seen).toEqual({ name: "URGENT" });
  });
});

describe("fromAiSdkTools(): ai's jsonSchema() and zodSchema()", () => {
  const point = jsonSchema<{ x: number; y: number }>({
    type: "object",
    properties: { x: { type: "number" }, y: { type: "number" } },
    required: ["x", "y"],
    additionalProperties: false,
  });

  it("validates and coerces with the JSON Schema, which the model sees as given", async () => {
    const seen: unknown[] = [];
    const [plot] = fromAiSdkTools({
      plot: tool({
        description: "Plots a point",
        inputSchema: point,
        execute: async (input) => {
          seen.push(input);
          return `plotted ${input.x},${input.y}`;
        },
      }),
    });
    expect(plot!.inputSchema).toEqual(point.jsonSchema);
    const run = await runCalls(
      [plot!],
      [
        { id: "c1", name: "plot", input: { x: "1.5", y: 2 } },
        { id: "c2", name: "plot", input: { x: 1, z: 3 } },
      ],
    );
    expect(seen).toEqual([{ x: 1.5, y: 2 }]);
    expect(run.toolResults[0]).toMatchObject({ content: "plotted 1.5,2", is_error: false });
    expect(run.toolResults[1]!.is_error).toBe(true);
    const text = textOfBlock(run.toolResults[1]);
    expect(text).toMatch(/- y: required field is missing/);
    expect(text).toMatch(/- z: unknown field/);
  });

  it("runs the schema's own validate after skein's checks, and names its issues on failure", async () => {
    const seen: unknown[] = [];
    const even = jsonSchema<{ n: number }>(
      { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
      {
        validate: (value) => {
          const { n } = value as { n: number };
          return n % 2 === 0
            ? { success: true, value: { n, half: n / 2 } as never }
            : {
                success: false,
                error: Object.assign(new Error("odd"), {
                  issues: [{ path: ["n"], message: "must be even" }],
                }),
              };
        },
      },
    );
    const [halve] = fromAiSdkTools({
      halve: tool({
        inputSchema: even,
        execute: async (input) => {
          seen.push(input);
          return input;
        },
      }),
    });
    const run = await runCalls(
      [halve!],
      [
        { id: "c1", name: "halve", input: { n: "4" } },
        { id: "c2", name: "halve", input: { n: 3 } },
      ],
    );
    expect(seen).toEqual([{ n: 4, half: 2 }]);
    expect(run.toolResults[0]).toMatchObject({ content: '{"n":4,"half":2}', is_error: false });
    expect(run.toolResults[1]!.is_error).toBe(true);
    expect(textOfBlock(run.toolResults[1])).toMatch(/- n: must be even; received number 3/);
  });

  it("a zodSchema() wrapper reports Zod's issues by field", async () => {
    const [rate] = fromAiSdkTools({
      rate: tool({
        inputSchema: zodSchema(z.object({ stars: z.number().int().min(1).max(5) })),
        execute: async ({ stars }) => `${stars} stars`,
      }),
    });
    const run = await runCalls(
      [rate!],
      [
        { id: "c1", name: "rate", input: { stars: "4" } },
        { id: "c2", name: "rate", input: { stars: 9 } },
      ],
    );
    expect(run.toolResults[0]).toMatchObject({ content: "4 stars", is_error: false });
    expect(run.toolResults[1]!.is_error).toBe(true);
    expect(textOfBlock(run.toolResults[1])).toMatch(/- stars: .*5.*; received number 9/);
  });

  it("a dynamicTool() runs like any other", async () => {
    const [echo] = fromAiSdkTools({
      echo: dynamicTool({
        description: "Echoes",
        inputSchema: z.object({ text: z.string() }),
        execute: async (input) => (input as { text: string }).text,
      }),
    });
    const run = await runCall(echo!, { text: "hi" });
    expect(run.toolResults[0]).toMatchObject({ content: "hi", is_error: false });
  });
});

describe("fromAiSdkTools(): results, progress and failures", () => {
  it("an async iterable's yields are tool_update events, and its last yield is the result", async () => {
    const [index] = fromAiSdkTools({
      index_repo: tool({
        inputSchema: z.object({ path: z.string() }),
        async *execute({ path }) {
          yield { status: "scanning", path };
          yield { status: "embedding", path };
          yield { status: "done", files: 248 };
        },
      }),
    });
    const run = await runCall(index!, { path: "src" });
    expect(run.updates.map((event) => [event.callId, event.name, event.update])).toEqual([
      ["call_1", "index_repo", { status: "scanning", path: "src" }],
      ["call_1", "index_repo", { status: "embedding", path: "src" }],
      ["call_1", "index_repo", { status: "done", files: 248 }],
    ]);
    expect(run.toolResults[0]).toMatchObject({
      content: '{"status":"done","files":248}',
      is_error: false,
    });
    expect(run.result.steps[0]!.toolCalls[0]!.preliminaryResults).toHaveLength(3);
  });

  it("each yield reaches the stream as it happens, before the iterable ends", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const [slow] = fromAiSdkTools({
      slow: tool({
        inputSchema: z.object({}),
        async *execute() {
          yield "started";
          await gate;
          yield "finished";
        },
      }),
    });
    const run = await runCall(
      slow!,
      {},
      {
        onEvent: (event) => {
          if (event.type === "tool_update" && event.update === "started") release();
        },
      },
    );
    expect(run.toolResults[0]).toMatchObject({ content: "finished", is_error: false });
  });

  it("an async iterable that yields nothing gives an empty result", async () => {
    const [quiet] = fromAiSdkTools({
      quiet: tool({ inputSchema: z.object({}), async *execute(): AsyncGenerator<string> {} }),
    });
    const run = await runCall(quiet!, {});
    expect(run.updates).toEqual([]);
    expect(run.toolResults[0]).toMatchObject({ content: "", is_error: false });
  });

  it("a throw is an error result with its message, and the run goes on", async () => {
    const [fail] = fromAiSdkTools({
      fail: tool({
        inputSchema: z.object({}),
        execute: async (): Promise<string> => {
          throw new Error("the weather service is down");
        },
      }),
    });
    const run = await runCall(fail!, {});
    expect(run.toolResults[0]!.is_error).toBe(true);
    expect(textOfBlock(run.toolResults[0])).toContain("the weather service is down");
    expect(run.result.subtype).toBe("success");
  });

  it("a throw midway through the iterable is an error result after the progress it made", async () => {
    const [fail] = fromAiSdkTools({
      fail: tool({
        inputSchema: z.object({}),
        async *execute() {
          yield "half way";
          throw new Error("disk full");
        },
      }),
    });
    const run = await runCall(fail!, {});
    expect(run.updates.map((event) => event.update)).toEqual(["half way"]);
    expect(run.toolResults[0]!.is_error).toBe(true);
    expect(textOfBlock(run.toolResults[0])).toContain("disk full");
  });

  it("a value with no JSON form is an error result that says so", async () => {
    const [big] = fromAiSdkTools({
      big: tool({ inputSchema: z.object({}), execute: async () => ({ size: 10n }) }),
    });
    const run = await runCall(big!, {});
    expect(run.toolResults[0]!.is_error).toBe(true);
    expect(textOfBlock(run.toolResults[0])).toMatch(/could not be serialised to JSON/);
  });

  it("aborting the run aborts the abortSignal execute got, and stops the iterable", async () => {
    const controller = new AbortController();
    let signal: AbortSignal | undefined;
    let closed = false;
    const [watch] = fromAiSdkTools({
      watch: tool({
        inputSchema: z.object({}),
        async *execute(_input, { abortSignal }) {
          signal = abortSignal;
          try {
            yield "watching";
            await new Promise((resolve) => abortSignal?.addEventListener("abort", resolve));
            yield "never seen";
          } finally {
            closed = true;
          }
        },
      }),
    });
    const agent = createBareAgent({
      model: scriptedModel([{ toolCalls: [{ name: "watch", input: {} }] }, { text: "done" }]),
      tools: [watch!],
    });
    const events: AgentEvent[] = [];
    const running = (async () => {
      for await (const event of agent.stream("go", { signal: controller.signal })) {
        events.push(event);
        if (event.type === "tool_update") controller.abort();
      }
    })();
    await expect(running).rejects.toBeInstanceOf(AbortError);
    expect(signal?.aborted).toBe(true);
    expect(closed).toBe(true);
    expect(events.filter((event) => event.type === "tool_update")).toHaveLength(1);
  });

  it("the agent's rules see an adapted tool like any other: disallowedTools hides it", async () => {
    const [weather] = fromAiSdkTools({
      weather: tool({ inputSchema: z.object({}), execute: async () => "sunny" }),
    });
    const model = scriptedModel([{ text: "no tools" }]);
    const agent = createAgent({ model, tools: [weather!], disallowedTools: ["weather"] });
    await agent.run("go");
    expect(model.requests[0]!.tools.map((t) => t.name)).not.toContain("weather");
    const allowed = scriptedModel([{ text: "ok" }]);
    await createAgent({ model: allowed, tools: [weather!] }).run("go");
    expect(allowed.requests[0]!.tools.map((t) => t.name)).toContain("weather");
  });

  it("takes a record typed as ai's own ToolSet", () => {
    const tools: ToolSet = {
      a: tool({ inputSchema: z.object({}), execute: async () => "a" }),
      b: tool({ inputSchema: jsonSchema({ type: "object" }), execute: async () => "b" }),
    };
    expect(fromAiSdkTools(tools).map((t) => t.name)).toEqual(["a", "b"]);
  });

  it("the adapted tools declare no security, so the hardened preset refuses them by name", () => {
    const tools = fromAiSdkTools({
      weather: tool({ inputSchema: z.object({}), execute: async () => "sunny" }),
    });
    expect(() => createAgent({ tools, preset: "hardened" })).toThrow(ConfigurationError);
    expect(() => createAgent({ tools, preset: "hardened" })).toThrow(
      /the hardened preset refuses the tool "weather": it declares no security metadata/,
    );
  });
});
