import type { Message, Usage } from "../core/messages.ts";
import type { ReasoningSettings } from "./reasoning.ts";

/** A tool as the model sees it: nothing else (no metadata, no security, no functions) crosses this line. */
export interface ModelToolSpec {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

/** Sampling and tool-use settings. */
export interface ModelSettings {
  temperature?: number;
  topP?: number;
  stopSequences?: string[];
  /** `"required"` is the same as `"any"`: some tool must be called. */
  toolChoice?: "auto" | "any" | "required" | "none" | { name: string };
  maxOutputTokens?: number;
  /**
   * How the model reasons, on every protocol: Responses `reasoning`, Chat
   * Completions `reasoning_effort`, Anthropic `thinking`, Gemini `thinkingConfig`. What a protocol
   * cannot take is a `ConfigurationError` before any request.
   */
  reasoning?: ReasoningSettings;
}

export interface ModelRequest {
  system: string;
  messages: Message[];
  tools: ModelToolSpec[];
  maxTokens?: number;
  /** The model id to send, when the agent's `modelName` overrides the provider's own. */
  modelName?: string;
  /** The run's session id: a provider may send it as a cache key (Responses `prompt_cache_key`). */
  sessionId?: string;
  /** The settings in effect for this call (`toolChoice` `"required"` normalised to `"any"`); absent when none. */
  settings?: ModelSettings & { toolChoice?: "auto" | "any" | "none" | { name: string } };
  /**
   * Native structured output (only sent to a model whose `structuredOutputs` is true): the reply's
   * text is the answer, a JSON value of `schema`.
   */
  output?: { name: "final_output"; schema: Record<string, unknown> };
}

export type StopReason = "end_turn" | "tool_use" | "max_tokens" | "stop_sequence" | (string & {});

/** A tool call the model started but did not finish (cut by `max_tokens`, or input that is not JSON). */
export interface IncompleteToolCall {
  id: string;
  name: string;
  reason: string;
}

export type ModelStreamEvent =
  | { type: "text_delta"; text: string }
  | { type: "thinking_delta"; thinking: string }
  /** A fragment of a tool call's JSON arguments as the model writes them (before its `tool_call`). */
  | { type: "tool_input_delta"; id: string; name: string; delta: string }
  /**
   * A tool_use block is complete: eager execution may start it while the stream goes on. Sent in
   * block order; after a block that will not be announced (cut short, not valid JSON), announce no
   * later one, or it would overtake the earlier call. The final `message` is what counts.
   */
  | { type: "tool_call"; id: string; name: string; input: unknown }
  | {
      type: "retry";
      attempt: number;
      /** How long the provider waits before the next attempt, when it says. */
      delayMs?: number;
      error: { name: string; message: string; status?: number };
    }
  | {
      type: "message";
      message: Message;
      stopReason: StopReason;
      usage?: Partial<Usage>;
      incompleteToolCalls?: IncompleteToolCall[];
    };

/**
 * skein's own providers also hand the engine their events a network read at a time: the same
 * events in the same order, for a few awaits per turn instead of several per event. Internal,
 * and optional: a stream without it is read event by event.
 */
export const EVENT_BATCHES: unique symbol = Symbol("skein.eventBatches");

/**
 * The signal a stream's batches settle on: once it aborts, a pending or later `next()` rejects
 * with its reason at once (skein's providers race every wait against it). The engine then needs
 * no race of its own per step when the stream was given the run's signal. Internal.
 */
export const SETTLES_ON_ABORT: unique symbol = Symbol("skein.settlesOnAbort");

export interface BatchedStream {
  /** The stream's events, grouped; iterating it consumes the same stream. */
  [EVENT_BATCHES](): AsyncIterator<ModelStreamEvent[]>;
  readonly [SETTLES_ON_ABORT]?: AbortSignal;
}

/**
 * What providers implement (and `scriptedModel`). `stream` must end with exactly one `message`
 * event; a failure is thrown as an error, with `status` where there is one.
 */
export interface Model {
  readonly provider: string;
  readonly modelId: string;
  /** The model takes `ModelRequest.output` natively (else the engine offers a `final_output` tool). */
  readonly structuredOutputs?: boolean;
  stream(request: ModelRequest, options: { signal: AbortSignal }): AsyncIterable<ModelStreamEvent>;
}

export function isModel(value: unknown): value is Model {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { stream?: unknown }).stream === "function"
  );
}
