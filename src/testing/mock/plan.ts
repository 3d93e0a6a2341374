import { createHash } from "node:crypto";
import type { Usage } from "../../core/messages.ts";
import type { MockErrorSpec, MockProtocol, MockTurn } from "./types.ts";

/** One SSE event as the wire sends it: an optional `event:` name and one `data:` line. */
export interface SseEvent {
  event?: string;
  data: string;
}

export interface PlannedCall {
  id: string;
  name: string;
  /** The input's JSON text as sent: cut in half when `truncated`. */
  json: string;
  input: unknown;
  /** Cut short by a `max_tokens` stop: `json` is not valid JSON. */
  truncated: boolean;
}

/** A turn resolved into what both wire formats need: ids, defaults, usage, the cut tool call. */
export interface TurnPlan {
  seq: number;
  model: string;
  text: string;
  thinking: string;
  signature: string;
  calls: PlannedCall[];
  stopReason: string;
  usage: Usage;
}

/** The request's facts a plan and an error body depend on. */
export interface RequestContext {
  protocol: MockProtocol;
  /** Per-server response counter: ids stay unique and deterministic. */
  seq: number;
  index: number;
  model: string;
  requestBytes: number;
  /** OpenAI `stream_options.include_usage`. */
  includeUsage: boolean;
}

/** How each protocol renders a plan, an error and the stream's fault events. */
export interface Wire {
  /** The full JSON answer of a non-streamed request. */
  message(plan: TurnPlan): unknown;
  /** The SSE events of a streamed answer, in order. */
  events(plan: TurnPlan, context: RequestContext): SseEvent[];
  /** The JSON error body for an HTTP status. */
  errorBody(status: number, spec: MockErrorSpec, context: ErrorContext): unknown;
  /** The error event sent mid-stream by `errorEvent`. */
  errorEvent(spec: MockErrorSpec): SseEvent;
  /** The invalid-JSON event sent by `malformed`. */
  malformed(data: string | undefined): SseEvent;
  /** An Anthropic `ping`, or a comment where the protocol has none. */
  ping(): SseEvent | undefined;
  /** Where `trickleMs` starts (before the last block's end) and the event it repeats. */
  trickle(plan: TurnPlan, events: readonly SseEvent[]): { at: number; event: SseEvent };
  /** Why the real API would refuse this request body (400), or undefined. `model`: the model asked for. */
  validate(body: any, model?: string): MockErrorSpec | undefined;
  /** The response header that carries the request id. */
  requestIdHeader: string;
  models(ids: readonly string[]): unknown;
  model(id: string): unknown;
}

export interface ErrorContext {
  model: string | undefined;
  requestId: string;
  method: string;
  path: string;
}

export function planTurn(turn: MockTurn, context: RequestContext): TurnPlan {
  const stopReason = turn.stopReason ?? (turn.toolCalls?.length ? "tool_use" : "end_turn");
  const cutsLastCall = stopReason === "max_tokens" || stopReason === "length";
  const prefix = context.protocol === "anthropic" ? "toolu_mock" : "call_mock";
  const toolCalls = turn.toolCalls ?? [];
  const calls = toolCalls.map((call, position): PlannedCall => {
    const json = JSON.stringify(call.input ?? {});
    const truncated = cutsLastCall && position === toolCalls.length - 1;
    return {
      id: call.id ?? `${prefix}_${context.index + 1}_${position + 1}`,
      name: call.name,
      json: truncated ? halfOf(json) : json,
      input: call.input ?? {},
      truncated,
    };
  });
  const text = turn.text ?? "";
  const thinking = turn.thinking ?? "";
  const outputChars = text.length + thinking.length + calls.reduce((n, c) => n + c.json.length, 0);
  return {
    seq: context.seq,
    model: turn.model ?? context.model,
    text,
    thinking,
    signature: thinking ? signatureOf(thinking) : "",
    calls,
    stopReason,
    usage: {
      inputTokens: turn.usage?.inputTokens ?? Math.max(1, Math.ceil(context.requestBytes / 4)),
      outputTokens: turn.usage?.outputTokens ?? Math.max(1, Math.ceil(outputChars / 4)),
      cacheReadInputTokens: turn.usage?.cacheReadInputTokens ?? 0,
      cacheCreationInputTokens: turn.usage?.cacheCreationInputTokens ?? 0,
    },
  };
}

/** Text as the model streams it: one word (with the spaces after it) per piece. */
export function wordsOf(text: string): string[] {
  return text.match(/\S+\s*|\s+/gu) ?? [];
}

/** A tool call's JSON in several fragments, split between code points, so clients must join them. */
export function fragmentsOf(json: string, count = 3): string[] {
  const points = Array.from(json);
  const size = Math.max(1, Math.ceil(points.length / count));
  const pieces: string[] = [];
  for (let start = 0; start < points.length; start += size) {
    pieces.push(points.slice(start, start + size).join(""));
  }
  return pieces;
}

/** A proper prefix of a JSON object's text, which is never valid JSON itself. */
function halfOf(json: string): string {
  const points = Array.from(json);
  return points.slice(0, Math.max(1, Math.floor(points.length / 2))).join("");
}

/** Deterministic, so a test can check the signature is sent back unchanged. */
function signatureOf(thinking: string): string {
  return `mocksig_${createHash("sha256").update(thinking).digest("base64url").slice(0, 32)}`;
}
