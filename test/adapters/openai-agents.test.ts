/**
 * fromOpenAIAgentsTools: function tools written with `@openai/agents`' own `tool()` (from
 * @openai/agents-core 0.20, a dev dependency only), run unchanged inside a skein agent through
 * the tool's own `invoke`.
 */
import { type FunctionTool, type Tool, tool } from "@openai/agents-core";
import { AbortError, createBareAgent } from "skein";
import { fromOpenAIAgentsTools } from "skein/adapters";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { runCall, runCalls, textOfBlock } from "../tools/harness.ts";

const addParameters = {
  type: "object" as const,
  properties: { a: { type: "number" }, b: { type: "number" } },
  required: ["a", "b"],
  additionalProperties: false as const,
};

describe("fromOpenAIAgentsTools(): function tools", () => {
  it("keeps name, description and the JSON Schema in parameters; the model sees them", async () => {
    const add = tool({
      name: "add",
      description: "Adds two numbers",
      parameters: addParameters,
      strict: true,
      execute: async (input) => {
        const { a, b } = input as { a: number; b: number };
        return a + b;
      },
    });
    const tools = fromOpenAIAgentsTools([add]);
    expect(tools[0]).toMatchObject({
      name: "add",
      description: "Adds two numbers",
      inputSchema: add.parameters,
    });
    const run = await runCall(tools[0]!, { a: 2, b: 3 });
    expect(run.model.requests[0]!.tools).toEqual([
      { name: "add", description: "Adds two numbers", input_schema: add.parameters },
    ]);
    // Anything but a string goes to the model as JSON text.
    expect(run.toolResults).toEqual([
      { type: "tool_result", tool_use_id: "call_1", content: "5", is_error: false },
    ]);
  });

  it("a Zod parameters schema: the tool's own strict JSON Schema, and its own parsing", async () => {
    const seen: unknown[] = [];
    const search = tool({
      name: "search",
      description: "Searches the docs",
      parameters: z.object({ query: z.string(), limit: z.number().int().nullable() }),
      execute: async (input) => {
        seen.push(input);
        return { hits: [`${input.query} (${input.limit ?? "all"})`] };
      },
    });
    const [adapted] = fromOpenAIAgentsTools([search]);
    // All but `$schema`, which providers reject.
    const { $schema, ...parameters } = search.parameters as Record<string, unknown>;
    expect($schema).toBeDefined();
    expect(adapted!.inputSchema).toEqual(parameters);
    const run = await runCall(adapted!, { query: "tides", limit: "3" });
    expect(seen).toEqual([{ query: "tides", limit: 3 }]);
    expect(run.toolResults[0]).toMatchObject({
      content: '{"hits":["tides (3)"]}',
      is_error: false,
    });
  });

  it("skein validates and coerces first: a bad input never reaches the tool", async () => {
    const seen: unknown[] = [];
    const add = tool({
      name: "add",
      description: "Adds",
      parameters: addParameters,
      execute: async (input) => {
        seen.push(input);
        return "ok";
      },
    });
    const run = await runCalls(fromOpenAIAgentsTools([add]), [
      { id: "c1", name: "add", input: { a: "2", b: 3 } },
      { id: "c2", name: "add", input: { a: "two", c: 1 } },
    ]);
    expect(seen).toEqual([{ a: 2, b: 3 }]);
    expect(run.toolResults[0]).toMatchObject({ content: "ok", is_error: false });
    expect(run.toolResults[1]!.is_error).toBe(true);
    const text = textOfBlock(run.toolResults[1]);
    expect(text).toContain('Invalid input for tool "add"');
    expect(text).toMatch(/- a: expected number; received string "two"/);
    expect(text).toMatch(/- b: required field is missing/);
    expect(text).toMatch(/- c: unknown field/);
  });

  it("invoke gets { context: undefined }, the input as JSON text, and { toolCall, signal }", async () => {
    const invoked: unknown[][] = [];
    const executed: unknown[] = [];
    const echo = tool({
      name: "echo",
      description: "Echoes",
      parameters: {
        type: "object",
        properties: { text: { type: "string" } },
        required: ["text"],
        additionalProperties: false,
      },
      execute: async (input, runContext, details) => {
        executed.push(runContext?.context, details?.toolCall?.callId, details?.signal);
        return (input as { text: string }).text;
      },
    });
    const spied = {
      ...echo,
      invoke: (...args: Parameters<typeof echo.invoke>) => {
        invoked.push(args);
        return echo.invoke(...args);
      },
    };
    const run = await runCall(fromOpenAIAgentsTools([spied])[0]!, { text: "héllo" });
    expect(run.toolResults[0]).toMatchObject({ content: "héllo", is_error: false });
    const [runContext, input, details] = invoked[0]!;
    expect(runContext).toEqual({ context: undefined });
    expect(input).toBe('{"text":"héllo"}');
    expect(details).toEqual({
      toolCall: {
        type: "function_call",
        callId: "call_1",
        name: "echo",
        arguments: '{"text":"héllo"}',
      },
      signal: expect.any(AbortSignal),
    });
    expect(executed).toEqual([undefined, "call_1", (details as { signal: AbortSignal }).signal]);
  });
});

describe("fromOpenAIAgentsTools(): failures, as that SDK reports them", () => {
  it("a failing execute comes back as the default errorFunction's text, not is_error", async () => {
    const fail = tool({
      name: "fail",
      description: "Fails",
      parameters: { type: "object", properties: {}, required: [], additionalProperties: false },
      execute: async () => {
        throw new Error("the service is down");
      },
    });
    const run = await runCall(fromOpenAIAgentsTools([fail])[0]!, {});
    expect(run.toolResults[0]).toMatchObject({
      content: "An error occurred while running the tool. Please try again.",
      is_error: false,
    });
    expect(run.result.subtype).toBe("success");
  });

  it("the tool's own parsing applies after skein's: a refinement JSON Schema cannot say fails there", async () => {
    let calls = 0;
    const book = tool({
      name: "book",
      description: "Books a date",
      parameters: z.object({ date: z.string().refine((s) => s.startsWith("2027"), "2027 only") }),
      execute: async () => {
        calls++;
        return "booked";
      },
      errorFunction: (_context, error) => `Refused: ${(error as Error).message}`,
    });
    const run = await runCall(fromOpenAIAgentsTools([book])[0]!, { date: "2026-01-01" });
    expect(calls).toBe(0);
    expect(run.toolResults[0]).toMatchObject({ is_error: false });
    expect(textOfBlock(run.toolResults[0])).toMatch(/^Refused: Invalid JSON input for tool/);
  });

  it("the tool's own errorFunction writes the text", async () => {
    const fail = tool({
      name: "fail",
      description: "Fails",
      parameters: { type: "object", properties: {}, required: [], additionalProperties: false },
      execute: async () => {
        throw new Error("quota exceeded");
      },
      errorFunction: (_context, error) => `Could not fail properly: ${(error as Error).message}`,
    });
    const run = await runCall(fromOpenAIAgentsTools([fail])[0]!, {});
    expect(run.toolResults[0]).toMatchObject({
      content: "Could not fail properly: quota exceeded",
      is_error: false,
    });
  });

  it("errorFunction: null lets the error through: then it is an error result", async () => {
    const fail = tool({
      name: "fail",
      description: "Fails",
      parameters: { type: "object", properties: {}, required: [], additionalProperties: false },
      execute: async () => {
        throw new Error("quota exceeded");
      },
      errorFunction: null,
    });
    const run = await runCall(fromOpenAIAgentsTools([fail])[0]!, {});
    expect(run.toolResults[0]!.is_error).toBe(true);
    expect(textOfBlock(run.toolResults[0])).toContain("quota exceeded");
  });

  it("the tool's own timeoutMs applies, with that SDK's message", async () => {
    const slow = tool({
      name: "slow",
      description: "Takes its time",
      parameters: { type: "object", properties: {}, required: [], additionalProperties: false },
      timeoutMs: 20,
      execute: (_input, _context, details) =>
        new Promise((resolve) => {
          const timer = setTimeout(() => resolve("late"), 5_000);
          details?.signal?.addEventListener("abort", () => clearTimeout(timer));
        }),
    });
    const run = await runCall(fromOpenAIAgentsTools([slow])[0]!, {});
    expect(run.toolResults[0]).toMatchObject({
      content: "Tool 'slow' timed out after 20ms.",
      is_error: false,
    });
  });

  it("aborting the run aborts the signal execute got; the run rejects with AbortError", async () => {
    const controller = new AbortController();
    let signal: AbortSignal | undefined;
    const wait = tool({
      name: "wait",
      description: "Waits",
      parameters: { type: "object", properties: {}, required: [], additionalProperties: false },
      execute: (_input, _context, details) =>
        new Promise((_resolve, reject) => {
          signal = details?.signal;
          signal?.addEventListener("abort", () => reject(signal!.reason));
          controller.abort();
        }),
    });
    const agent = createBareAgent({
      model: scriptedModel([{ toolCalls: [{ name: "wait", input: {} }] }, { text: "done" }]),
      tools: fromOpenAIAgentsTools([wait]),
    });
    await expect(agent.run("go", { signal: controller.signal })).rejects.toBeInstanceOf(AbortError);
    expect(signal?.aborted).toBe(true);
  });
});

describe("fromOpenAIAgentsTools(): types", () => {
  it("takes arrays typed as that SDK's own Tool[] and FunctionTool[]", () => {
    const echo = tool({
      name: "echo",
      description: "Echoes",
      parameters: z.object({ text: z.string() }),
      execute: async ({ text }) => text,
    });
    const tools: Tool[] = [echo];
    const functions: FunctionTool<any, any, any>[] = [echo];
    expect(fromOpenAIAgentsTools(tools).map((t) => t.name)).toEqual(["echo"]);
    expect(fromOpenAIAgentsTools(functions)).toHaveLength(1);
  });
});
