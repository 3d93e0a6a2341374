/**
 * Shared pieces of the agents-as-tools suite (issue 11, design/agents.md): child agents built
 * from scripted models, tools that record what ran, and readers for events, details and usage.
 */
import {
  type AgentEvent,
  createBareAgent,
  type SDKResultMessage,
  type ToolContext,
  type ToolDefinition,
  tool,
  type Usage,
} from "skein";
import { type ScriptedTurn, scriptedModel } from "skein/testing";
import { z } from "zod";
import { type Deferred, deferred } from "../support/promises.ts";
import { stepCall } from "../support/results.ts";

export { collect } from "../run/helpers.ts";

/** A usage object with only the two token counts that matter here (the cache counts zero). */
export function tokens(inputTokens: number, outputTokens: number): Usage {
  return { inputTokens, outputTokens, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
}

/** A scripted turn that reports usage. */
export function turn(fields: ScriptedTurn, input: number, output: number): ScriptedTurn {
  return { ...fields, usage: { inputTokens: input, outputTokens: output } };
}

/** A bare child agent with a scripted model, its tools and an id (the agent tool's default name). */
export function scriptedChild(
  id: string,
  script: Parameters<typeof scriptedModel>[0],
  options: { tools?: ToolDefinition[]; systemPrompt?: string; maxTurns?: number } = {},
) {
  const model = scriptedModel(script);
  const agent = createBareAgent({ id, model, ...options });
  return { agent, model };
}

/** A custom tool `{ note: string }` that records each run (call id, input, the ToolContext's call). */
export function noteTool(name = "note") {
  const runs: { callId: string; note: string; call: ToolContext["call"] }[] = [];
  const definition = tool(
    name,
    `The ${name} tool`,
    z.object({ note: z.string() }),
    (input, ctx) => {
      runs.push({ callId: ctx.callId, note: input.note, call: ctx.call });
      return `${name}: ${input.note}`;
    },
  );
  return { tool: definition, runs };
}

/** A tool that ends its run with `endTurn` and a structured result. */
export function finishTool(structuredResult: unknown, text = "") {
  return tool("finish", "Submit the answer", z.object({}), async () => ({
    content: text,
    endTurn: true,
    structuredResult,
  }));
}

/**
 * A tool that waits until its signal aborts, then throws its reason. `started` resolves when it
 * runs, `sawAbort` once it saw the abort; `state.aborted` records the signal's state then.
 */
export function waitingTool(name = "wait") {
  const started: Deferred<void> = deferred();
  const sawAbort: Deferred<void> = deferred();
  const state = { aborted: false, runs: 0 };
  const definition = tool(name, "Waits for the abort", z.object({}), async (_input, ctx) => {
    state.runs++;
    started.resolve();
    await new Promise<void>((resolve) => {
      if (ctx.signal.aborted) resolve();
      else ctx.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    state.aborted = ctx.signal.aborted;
    sawAbort.resolve();
    throw ctx.signal.reason;
  });
  return { tool: definition, started, sawAbort, state };
}

/** `details` of the step call `id` (the agent call's details: agent, sessionId, subtype, ...). */
export function detailsOf(result: SDKResultMessage, id: string): Record<string, unknown> {
  return stepCall(result, id).result.details as Record<string, unknown>;
}

type ToolEnd = Extract<AgentEvent, { type: "tool_end" }>;
type ToolStart = Extract<AgentEvent, { type: "tool_start" }>;

export function toolEnds(events: AgentEvent[]): ToolEnd[] {
  return events.filter((event): event is ToolEnd => event.type === "tool_end");
}

export function toolStarts(events: AgentEvent[]): ToolStart[] {
  return events.filter((event): event is ToolStart => event.type === "tool_start");
}

/** The position of the first event matching `match` (-1 when none). */
export function indexWhere(events: AgentEvent[], match: (event: AgentEvent) => boolean): number {
  return events.findIndex(match);
}

/** The parent's own tool_start / tool_end of call `id` (events with no parentCallId). */
export function ownCallBounds(events: AgentEvent[], id: string): [number, number] {
  const start = events.findIndex(
    (event) =>
      event.type === "tool_start" && event.callId === id && event.parentCallId === undefined,
  );
  const end = events.findIndex(
    (event) => event.type === "tool_end" && event.callId === id && event.parentCallId === undefined,
  );
  return [start, end];
}

/** `parentCallId` of an event (undefined for the result and for the parent's own events). */
export function parentOf(event: AgentEvent): string | undefined {
  return (event as { parentCallId?: string }).parentCallId;
}

/** Every string sent to a model in its requests, as one JSON text (to search for leaks). */
export function requestText(model: { requests: unknown[] }): string {
  return JSON.stringify(model.requests);
}

/** Tool names offered in request `index` of a scripted model. */
export function offered(model: { requests: { tools: { name: string }[] }[] }, index = 0): string[] {
  return model.requests[index]!.tools.map((spec) => spec.name);
}
