/**
 * Guardrail checks as trace spans (design/policy.md, "Guardrails"): each check is a span
 * `guardrail <name>` under the run's span, with its phase and whether it tripped; a tripwire's
 * span has status ERROR. Spans are read from the trace SDK's in-memory exporter.
 */
import { SpanStatusCode } from "@opentelemetry/api";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

function tracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { tracer: provider.getTracer("skein-test"), spans: () => exporter.getFinishedSpans() };
}

const echo = tool("echo", "Echoes", z.object({ text: z.string() }), async ({ text }) => text);

describe("guardrail spans", () => {
  it("every check is a span under the run's, with its phase; a tripwire's span is an error", async () => {
    const { tracer, spans } = tracing();
    const agent = createBareAgent({
      id: "guarded",
      model: scriptedModel([
        { toolCalls: [{ id: "e1", name: "echo", input: { text: "hello" } }] },
        { text: "the secret is 42" },
      ]),
      tools: [echo],
      tracer,
      guardrails: {
        input: [
          {
            name: "polite",
            blocking: true,
            check: async () => {
              await new Promise((resolve) => setTimeout(resolve, 20));
              return { tripwire: false };
            },
          },
        ],
        toolInput: [{ name: "no-rm", check: () => ({ tripwire: false }) }],
        toolOutput: [{ name: "no-keys", check: () => ({ tripwire: false }) }],
        output: [
          {
            name: "no-secret",
            check: ({ result }) => ({ tripwire: result.includes("secret"), info: "a secret" }),
          },
        ],
      },
    });
    const result = await agent.run("go");
    expect(result.subtype).toBe("error_guardrail");
    const all = spans();
    const run = all.find((span) => span.name === "invoke_agent guarded")!;
    const rails = all.filter((span) => span.name.startsWith("guardrail "));
    expect(rails.map((span) => [span.name, span.attributes["skein.guardrail.phase"]])).toEqual([
      ["guardrail polite", "input"],
      ["guardrail no-rm", "toolInput"],
      ["guardrail no-keys", "toolOutput"],
      ["guardrail no-secret", "output"],
    ]);
    for (const span of rails) expect(span.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
    const [polite, , , secret] = rails;
    expect(polite!.attributes).toMatchObject({
      "skein.guardrail.name": "polite",
      "skein.guardrail.tripped": false,
    });
    expect(polite!.status.code).not.toBe(SpanStatusCode.ERROR);
    // The span covers the check (which waited), not only the moment it answered.
    const micros = (time: [number, number]) => time[0] * 1e6 + time[1] / 1e3;
    expect(micros(polite!.endTime) - micros(polite!.startTime)).toBeGreaterThan(0);
    expect(secret!.attributes).toMatchObject({ "skein.guardrail.tripped": true });
    expect(secret!.status.code).toBe(SpanStatusCode.ERROR);
    expect(secret!.attributes["error.type"]).toBe("GuardrailTripwireError");
    expect(run.status.code).toBe(SpanStatusCode.ERROR);
  });
});
