// OpenTelemetry spans for a run (design/mcp.md, "Tracing"), with the GenAI semantic conventions'
// attribute names written as strings (the constants moved out of @opentelemetry/semantic-conventions).
// Loaded only when an agent has a `tracer`; parents are passed explicitly (no context manager needed).

import {
  type Attributes,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { guardrailStarts, type RunTrace, type TraceStart } from "../run/trace.ts";
import type { AgentEvent } from "../run/types.ts";

export function otelTrace(start: TraceStart): RunTrace {
  const tracer = start.tracer as Tracer;
  const common: Attributes = {
    "gen_ai.provider.name": start.provider,
    "gen_ai.request.model": start.modelId,
  };
  const run = tracer.startSpan(
    start.agentId !== undefined ? `invoke_agent ${start.agentId}` : "invoke_agent",
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        ...common,
        "gen_ai.conversation.id": start.sessionId,
        ...(start.agentId !== undefined ? { "gen_ai.agent.name": start.agentId } : {}),
      },
    },
    context.active(),
  );
  const inRun = trace.setSpan(context.active(), run);
  const open = new Set<Span>();
  const tools = new Map<string, Span>();
  const child = (name: string, kind: SpanKind, attributes: Attributes) => {
    const span = tracer.startSpan(name, { kind, attributes }, inRun);
    open.add(span);
    return span;
  };
  const close = (span: Span) => {
    open.delete(span);
    span.end();
  };
  let ended = false;
  const guardrailSpan = (
    event: Extract<AgentEvent, { type: "guardrail" }>,
    startTime: number | undefined,
  ) => {
    const span = tracer.startSpan(
      `guardrail ${event.name}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          "skein.guardrail.name": event.name,
          "skein.guardrail.phase": event.phase,
          "skein.guardrail.tripped": event.tripped,
        },
        ...(startTime !== undefined ? { startTime } : {}),
      },
      inRun,
    );
    if (event.tripped) failed(span, "GuardrailTripwireError");
    span.end();
  };

  return {
    observe: (emit) => (event: AgentEvent) => {
      // The run's own calls only: a child agent's calls belong to its own run.
      if ((event as { parentCallId?: string }).parentCallId === undefined) {
        if (event.type === "tool_start" && !tools.has(event.callId))
          tools.set(
            event.callId,
            child(`execute_tool ${event.name}`, SpanKind.INTERNAL, {
              "gen_ai.operation.name": "execute_tool",
              "gen_ai.tool.name": event.name,
              "gen_ai.tool.call.id": event.callId,
              "gen_ai.tool.type": "function",
            }),
          );
        else if (event.type === "guardrail") guardrailSpan(event, guardrailStarts.get(event));
        else if (event.type === "tool_end") {
          const span = tools.get(event.callId);
          if (span) {
            tools.delete(event.callId);
            if (event.isError) failed(span, reasonOf(event.details));
            close(span);
          }
        }
      }
      emit(event);
    },
    modelCall(model) {
      const span = child(`chat ${model.modelId}`, SpanKind.CLIENT, {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": model.provider,
        "gen_ai.request.model": model.modelId,
      });
      return {
        end(outcome) {
          if (outcome.usage) {
            span.setAttribute("gen_ai.usage.input_tokens", outcome.usage.inputTokens ?? 0);
            span.setAttribute("gen_ai.usage.output_tokens", outcome.usage.outputTokens ?? 0);
          }
          if (outcome.stopReason !== undefined)
            span.setAttribute("gen_ai.response.finish_reasons", [outcome.stopReason]);
          if (outcome.error) failed(span, outcome.error.name);
          close(span);
        },
      };
    },
    end(outcome) {
      if (ended) return;
      ended = true;
      // Every span started is ended, on abort too.
      for (const span of [...open]) {
        if ("aborted" in outcome) failed(span, "AbortError");
        close(span);
      }
      tools.clear();
      const usage = "aborted" in outcome ? outcome.usage : outcome.result.usage;
      run.setAttribute("gen_ai.usage.input_tokens", usage.inputTokens);
      run.setAttribute("gen_ai.usage.output_tokens", usage.outputTokens);
      if ("aborted" in outcome) failed(run, "AbortError");
      else if (outcome.result.isError)
        failed(run, outcome.result.error?.name ?? outcome.result.subtype);
      run.end();
    },
  };
}

function failed(span: Span, type: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.setAttribute("error.type", type);
}

/** The typed reason of an error result (`threw`, `denied`, ...); `tool_error` when the tool itself said so. */
function reasonOf(details: unknown): string {
  const reason = (details as { reason?: unknown } | null)?.reason;
  return typeof reason === "string" ? reason : "tool_error";
}
