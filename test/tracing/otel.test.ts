/**
 * OpenTelemetry spans (design/mcp.md, "Tracing"): a run, its model calls and its tool calls, with
 * the GenAI attribute names, explicit parents, `error.type` on failures, every span ended (on
 * abort too), and nothing at all without a tracer. Spans are read from the trace SDK's in-memory
 * exporter.
 */
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { AbortError, agentTool, createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

function tracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { tracer: provider.getTracer("skein-test"), spans: () => exporter.getFinishedSpans() };
}

const byName = (spans: ReadableSpan[], name: string) => spans.filter((span) => span.name === name);
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

const echo = tool("echo", "Echoes", z.object({ text: z.string() }), async ({ text }) => text);
const broken = tool("broken", "Throws", z.object({}), async () => {
  throw new Error("disk full");
});

describe("a run with a tracer", () => {
  it("one invoke_agent span, a chat span per model call and an execute_tool span per call, all under the run", async () => {
    const { tracer, spans } = tracing();
    const model = scriptedModel(
      [
        {
          toolCalls: [{ id: "c1", name: "echo", input: { text: "hi" } }],
          usage: { inputTokens: 10, outputTokens: 3 },
        },
        { text: "done", usage: { inputTokens: 20, outputTokens: 4 } },
      ],
      { modelId: "claude-test" },
    );
    const agent = createBareAgent({ id: "helper", model, tools: [echo], tracer });
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");

    const all = spans();
    const [run] = byName(all, "invoke_agent helper");
    expect(run).toBeDefined();
    expect(run!.kind).toBe(SpanKind.INTERNAL);
    expect(run!.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.provider.name": "scripted",
      "gen_ai.request.model": "claude-test",
      "gen_ai.conversation.id": result.sessionId,
      "gen_ai.agent.name": "helper",
      "gen_ai.usage.input_tokens": 30,
      "gen_ai.usage.output_tokens": 7,
    });
    expect(run!.attributes).not.toHaveProperty("gen_ai.system");

    const chats = byName(all, "chat claude-test");
    expect(chats).toHaveLength(2);
    for (const chat of chats) {
      expect(chat.kind).toBe(SpanKind.CLIENT);
      expect(parentOf(chat)).toBe(run!.spanContext().spanId);
    }
    expect(chats[0]!.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.usage.input_tokens": 10,
      "gen_ai.usage.output_tokens": 3,
      "gen_ai.response.finish_reasons": ["tool_use"],
    });

    const [call] = byName(all, "execute_tool echo");
    expect(call!.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "echo",
      "gen_ai.tool.call.id": "c1",
      "gen_ai.tool.type": "function",
    });
    expect(parentOf(call!)).toBe(run!.spanContext().spanId);
    expect(call!.status.code).not.toBe(SpanStatusCode.ERROR);
    // No content is recorded: not the input, not the output.
    expect(JSON.stringify(all.map((span) => span.attributes))).not.toContain("hi");
  });

  it("an error result sets the tool span's status and error.type to its reason", async () => {
    const { tracer, spans } = tracing();
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "t1", name: "broken", input: {} },
          { id: "t2", name: "nowhere", input: {} },
          { id: "t3", name: "echo", input: { text: 5 } },
        ],
      },
      { text: "ok" },
    ]);
    const agent = createBareAgent({ model, tools: [echo, broken], tracer });
    await agent.run("go");
    const reasons = Object.fromEntries(
      spans()
        .filter((span) => span.name.startsWith("execute_tool "))
        .map((span) => [
          span.attributes["gen_ai.tool.call.id"],
          [span.status.code, span.attributes["error.type"]],
        ]),
    );
    expect(reasons).toEqual({
      t1: [SpanStatusCode.ERROR, "threw"],
      t2: [SpanStatusCode.ERROR, "not_found"],
      t3: [SpanStatusCode.ERROR, "invalid_input"],
    });
  });

  it("a failed model call marks its chat span and the run span", async () => {
    const { tracer, spans } = tracing();
    const model = scriptedModel([new Error("upstream exploded")]);
    const result = await createBareAgent({ model, tracer }).run("go");
    expect(result.subtype).toBe("error_during_execution");
    const [chat] = byName(spans(), "chat scripted");
    expect(chat!.status.code).toBe(SpanStatusCode.ERROR);
    expect(chat!.attributes["error.type"]).toBe("Error");
    const [run] = byName(spans(), "invoke_agent");
    expect(run!.status.code).toBe(SpanStatusCode.ERROR);
  });

  it("an aborted run ends every span it started, the running tool's included", async () => {
    const { tracer, spans } = tracing();
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const wait = tool("wait", "Waits", z.object({}), async (_input, ctx) => {
      started();
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      throw ctx.signal.reason;
    });
    const model = scriptedModel([{ toolCalls: [{ id: "w1", name: "wait", input: {} }] }]);
    const controller = new AbortController();
    const run = createBareAgent({ model, tools: [wait], tracer }).run("go", {
      signal: controller.signal,
    });
    await running;
    controller.abort();
    await expect(run).rejects.toBeInstanceOf(AbortError);
    const names = spans().map((span) => span.name);
    expect(names).toContain("execute_tool wait");
    expect(names).toContain("invoke_agent");
    const [root] = byName(spans(), "invoke_agent");
    expect(root!.attributes["error.type"]).toBe("AbortError");
  });

  it("a child agent's calls are spans of the child's run, not the parent's", async () => {
    const { tracer, spans } = tracing();
    const child = createBareAgent({
      id: "child",
      model: scriptedModel([
        { toolCalls: [{ id: "k1", name: "echo", input: { text: "x" } }] },
        { text: "child done" },
      ]),
      tools: [echo],
    });
    const parent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "p1", name: "child", input: { prompt: "go" } }] },
        { text: "parent done" },
      ]),
      tools: [agentTool(child, { description: "A child" })],
      tracer,
    });
    await parent.run("go");
    const tools = spans()
      .filter((span) => span.name.startsWith("execute_tool "))
      .map((span) => span.attributes["gen_ai.tool.call.id"]);
    expect(tools).toEqual(["p1"]);
  });
});

describe("a bad tracer", () => {
  it("is an assembly error naming what a tracer is", () => {
    expect(() => createBareAgent({ model: scriptedModel([]), tracer: {} })).toThrow(
      /tracer must be an OpenTelemetry Tracer/,
    );
  });
});
