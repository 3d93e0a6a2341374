import { createBareAgent, defineTool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { issueLine, runCall, textOfBlock } from "./harness.ts";

const ticketParameters = {
  type: "object",
  properties: { ticketId: { type: "string" } },
  required: ["ticketId"],
  additionalProperties: false,
};

describe("defineTool() definition", () => {
  it("builds the seed 003 fetch-ticket tool as { name, description, inputSchema, ... }", () => {
    const fetchTicket = defineTool({
      id: "fetch-ticket",
      description: "Load one internal support ticket.",
      parameters: ticketParameters,
      timeoutMs: 3_000,
      async execute(input: { ticketId: string }, context) {
        context.signal.throwIfAborted();
        return { id: input.ticketId };
      },
    });
    expect({ ...fetchTicket }).toEqual({
      name: "fetch-ticket",
      description: "Load one internal support ticket.",
      inputSchema: ticketParameters,
      executionMode: "parallel",
      timeoutMs: 3_000,
    });
    expect("metadata" in fetchTicket).toBe(false);
  });

  it("drops $schema from parameters before the model sees them", async () => {
    const echo = defineTool({
      id: "echo",
      parameters: { $schema: "https://json-schema.org/draft/2020-12/schema", ...ticketParameters },
      execute: () => "ok",
    });
    expect(echo.inputSchema).toEqual(ticketParameters);
    const run = await runCall(echo, { ticketId: "T-1" });
    expect(run.model.requests[0]?.tools).toEqual([
      { name: "echo", description: "", input_schema: ticketParameters },
    ]);
  });

  it("without parameters accepts any object and tells the model so", async () => {
    const seen: unknown[] = [];
    const anything = defineTool({
      id: "anything",
      execute: (input: unknown) => {
        seen.push(input);
        return "ok";
      },
    });
    expect(anything.inputSchema).toEqual({ type: "object", additionalProperties: true });
    expect(anything.description).toBe("");
    const input = { free: [1, { form: "x" }], flag: "true" };
    const run = await runCall(anything, input);
    expect(seen).toEqual([input]);
    expect(run.toolResults[0]?.is_error).toBe(false);

    const notObject = await runCall(anything, "just text");
    expect(notObject.toolResults[0]?.is_error).toBe(true);
    expect(seen).toHaveLength(1);
  });
});

describe("defineTool() parameters (JSON Schema, checked by ajv)", () => {
  it("names each bad field: missing, unknown, wrong type; execute never runs", async () => {
    let calls = 0;
    const fetchTicket = defineTool({
      id: "fetch-ticket",
      parameters: {
        type: "object",
        properties: { ticketId: { type: "string" }, priority: { enum: ["low", "high"] } },
        required: ["ticketId"],
        additionalProperties: false,
      },
      execute: () => {
        calls++;
        return "ran";
      },
    });
    const run = await runCall(fetchTicket, { priority: "urgent", extra: 1 });
    expect(calls).toBe(0);
    expect(run.toolResults[0]?.is_error).toBe(true);
    const text = textOfBlock(run.toolResults[0]);
    expect(text).toMatch(/^Invalid input for tool "fetch-ticket":/);
    expect(issueLine(text, "ticketId")).toMatch(/required field is missing/);
    expect(issueLine(text, "extra")).toMatch(/unknown field/);
    expect(issueLine(text, "priority")).toMatch(/\["low","high"\].*"urgent"/);

    const wrongType = await runCall(fetchTicket, { ticketId: 5 });
    expect(issueLine(textOfBlock(wrongType.toolResults[0]), "ticketId")).toMatch(
      /expected string.*number 5/,
    );
    expect(calls).toBe(0);
  });

  it("refuses an invalid JSON Schema at assembly", () => {
    expect(() =>
      defineTool({ id: "bad", parameters: { type: "no-such-type" }, execute: () => "x" }),
    ).toThrow(/defineTool\("bad"\): invalid JSON Schema/);
  });
});

describe("defineTool() onToolCalled / onResponseReceived", () => {
  it("onToolCalled returning a value answers the call without execute; undefined lets execute run", async () => {
    const executed: unknown[] = [];
    const cached = defineTool({
      id: "cached",
      parameters: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
      onToolCalled: (input: { key: string }) =>
        input.key === "hit" ? { cached: true } : undefined,
      execute: (input: { key: string }) => {
        executed.push(input);
        return "computed";
      },
    });
    expect(textOfBlock((await runCall(cached, { key: "hit" })).toolResults[0])).toBe(
      '{"cached":true}',
    );
    expect(textOfBlock((await runCall(cached, { key: "miss" })).toolResults[0])).toBe("computed");
    expect(executed).toEqual([{ key: "miss" }]);
  });

  it("onToolCalled returning null pauses; onResponseReceived turns the app's response into the output", async () => {
    const received: unknown[] = [];
    const ask = defineTool({
      id: "ask_user",
      parameters: { type: "object", properties: { question: { type: "string" } } },
      onToolCalled: () => null,
      onResponseReceived: (response, input: { question: string }) => {
        received.push([response, input]);
        return `${input.question} -> ${String(response)}`;
      },
      execute: () => "never",
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "q1", name: "ask_user", input: { question: "Ship it?" } }] },
      { text: "thanks" },
    ]);
    const agent = createBareAgent({ model, tools: [ask] });
    const paused = await agent.run("go");
    expect(paused.subtype).toBe("paused");
    expect(paused.pending).toEqual([
      { id: "q1", name: "ask_user", input: { question: "Ship it?" }, reason: "external" },
    ]);
    const resumed = await agent.resume(JSON.stringify(paused.state), {
      toolOutputs: { q1: "yes" },
    });
    expect(received).toEqual([["yes", { question: "Ship it?" }]]);
    expect(resumed.subtype).toBe("success");
    expect(model.requests[1]?.messages.at(-1)?.content).toEqual([
      { type: "tool_result", tool_use_id: "q1", content: "Ship it? -> yes", is_error: false },
    ]);
  });
});

describe("defineTool() timeoutMs", () => {
  it("aborts the tool's signal and fails the run with ToolTimeoutError (the defineTool default)", async () => {
    let sawAbort: unknown;
    const slow = defineTool({
      id: "slow",
      timeoutMs: 20,
      execute: (_input: unknown, context) =>
        new Promise<string>((resolve) => {
          context.signal.addEventListener("abort", () => {
            sawAbort = context.signal.reason;
            resolve("late");
          });
        }),
    });
    const run = await runCall(slow, {});
    expect(run.result.subtype).toBe("error_during_execution");
    expect(run.result.isError).toBe(true);
    expect(run.result.error?.name).toBe("ToolTimeoutError");
    expect((sawAbort as Error).name).toBe("ToolTimeoutError");
    expect(run.toolResults[0]?.is_error).toBe(true);
    expect(textOfBlock(run.toolResults[0])).toMatch(/"slow" timed out after 20 ms/);
  });
});
