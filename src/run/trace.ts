// Tracing as the engine sees it (design/mcp.md, "Tracing"): a run, its model calls and its tool
// calls. The OpenTelemetry implementation (src/tracing/otel.ts) comes from the assembly as a
// loader, called only when an agent has a `tracer`: with none, nothing is created or loaded.

import type { Usage } from "../core/messages.ts";
import type { RunContext } from "./loop.ts";
import type { AgentEvent, ErrorInfo, SDKResultMessage } from "./types.ts";

/**
 * When each `guardrail` event's check started (epoch ms), for its span: the event itself keeps
 * the shape the contract fixes (`name`, `phase`, `tripped`, `info`).
 */
export const guardrailStarts = new WeakMap<AgentEvent, number>();

/** One run's trace. */
export interface RunTrace {
  /**
   * Wraps the run's event sink: each of the run's own calls is a span from `tool_start` to
   * `tool_end`, each of its guardrail checks a span ended by its `guardrail` event.
   */
  observe(emit: (event: AgentEvent) => void): (event: AgentEvent) => void;
  /** A model call, ended with what it cost or how it failed. */
  modelCall(model: { provider: string; modelId: string }): {
    end(outcome: { usage?: Partial<Usage>; stopReason?: string; error?: ErrorInfo }): void;
  };
  /** The run ended: with its result, or aborted (every span still open is ended too). */
  end(outcome: { result: SDKResultMessage } | { aborted: true; usage: Usage }): void;
}

export interface TraceStart {
  tracer: unknown;
  agentId?: string;
  sessionId: string;
  provider: string;
  modelId: string;
}

/** Starts a run's trace with the agent's tracer (loading the OpenTelemetry code on first use). */
export type TraceLoader = (start: TraceStart) => Promise<RunTrace>;

/** An agent's `tracer`, with the code that makes its spans. */
export interface Tracing {
  tracer: unknown;
  start: TraceLoader;
}

/** Starts the run's trace and routes its events through it (tool spans come from tool events). */
export async function traceRun(
  run: RunContext,
  model: { provider: string; modelId: string },
  tracing: Tracing,
): Promise<void> {
  run.trace = await tracing.start({
    tracer: tracing.tracer,
    ...(run.config.id !== undefined ? { agentId: run.config.id } : {}),
    sessionId: run.sessionId,
    provider: model.provider,
    modelId: model.modelId,
  });
  run.emit = run.trace.observe(run.emit);
}
