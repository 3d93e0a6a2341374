import { describeThrown, ModelError } from "../errors.ts";
import type { ContentBlock, Message, ToolResultBlock, Usage } from "../model/messages.ts";
import {
  type BatchedStream,
  EVENT_BATCHES,
  type IncompleteToolCall,
  type Model,
  type ModelRequest,
  type ModelStreamEvent,
  type StopReason,
} from "../model/model.ts";
import type { EngineConfig } from "./config.ts";
import { parsePartial } from "./partial-json.ts";
import type { AgentEvent, ErrorInfo } from "./types.ts";

/** What a run needs to pair its turn events: its turn count, its sink and whether a turn is open. */
interface TurnEvents {
  numTurns: number;
  emit: (event: AgentEvent) => void;
  turnOpen?: boolean;
}

/**
 * Opens a turn: a model call (`turns` counts it already), or a paused batch resumed. Every
 * `turn_start` gets exactly one `turn_end` in the same stream, whatever ends the turn.
 */
export function startTurn(run: TurnEvents): void {
  run.turnOpen = true;
  run.emit({ type: "turn_start", turn: run.numTurns });
}

/**
 * Closes the open turn (nothing when none is open). `message` is the turn's assistant message;
 * for a model call that failed before any text, an empty one marked `incomplete`.
 */
export function endTurn(
  run: TurnEvents,
  message: Message = { role: "assistant", content: [], incomplete: true },
  toolResults: ToolResultBlock[] = [],
): void {
  if (!run.turnOpen) return;
  run.turnOpen = false;
  run.emit({ type: "turn_end", turn: run.numTurns, message, toolResults });
}

export type ModelTurn =
  | {
      ok: true;
      message: Message;
      stopReason: StopReason;
      usage?: Partial<Usage>;
      incompleteToolCalls: IncompleteToolCall[];
    }
  | { ok: false; error: ErrorInfo; partial?: Message };

/** Finds the model for a run; a failure (such as a missing key) is reported on the result, not thrown. */
export function resolveModel(config: EngineConfig): Model | ErrorInfo {
  const choice = config.model;
  if (choice.kind === "object") return choice.model;
  try {
    return config.modelFactory(choice);
  } catch (error) {
    return describeThrown(error);
  }
}

/**
 * Asks the model for one turn and relays its stream. A failure after some text keeps that text
 * as an incomplete assistant message; its tool calls are never run.
 */
export async function callModel(options: {
  model: Model;
  request: ModelRequest;
  signal: AbortSignal;
  emit: (event: AgentEvent) => void;
  /** Eager execution: told of each tool call as its block completes in the stream. */
  onToolCall?: (call: { id: string; name: string; input: unknown }) => void;
}): Promise<ModelTurn> {
  const { model, request, signal, emit } = options;
  let partialText = "";
  // Each call's arguments as streamed so far (tool_input_delta), by call id.
  let partialInputs: Map<string, string> | undefined;
  try {
    // Each step of the model's stream is raced against the signal: a model that ignores it
    // cannot keep an aborted run alive. skein's providers offer their events a network read at
    // a time (the same events, in order): one step, one race and one await for all of them.
    const stream = model.stream(request, { signal });
    const batches = (stream as Partial<BatchedStream>)[EVENT_BATCHES]?.();
    const iterator: AsyncIterator<ModelStreamEvent | ModelStreamEvent[]> =
      batches ?? stream[Symbol.asyncIterator]();
    // One abort promise for the whole call, raced with each step (no listener per event).
    let rejectAborted: (reason: unknown) => void = () => {};
    const aborted = new Promise<never>((_, reject) => {
      rejectAborted = reject;
    });
    aborted.catch(() => {});
    const stopIterator = () => {
      rejectAborted(signal.reason);
      void Promise.resolve(iterator.return?.()).catch(() => {});
    };
    if (signal.aborted) stopIterator();
    signal.addEventListener("abort", stopIterator, { once: true });
    /** Relays one event; the final message ends the turn. */
    const take = (event: ModelStreamEvent): ModelTurn | undefined => {
      switch (event.type) {
        case "text_delta":
          partialText += event.text;
          emit(event);
          break;
        case "thinking_delta":
          emit(event);
          break;
        case "tool_input_delta": {
          partialInputs ??= new Map();
          const text = (partialInputs.get(event.id) ?? "") + event.delta;
          partialInputs.set(event.id, text);
          // Parsed when read: a run nobody streams (run()) never pays for it.
          let parsed: { value: unknown } | undefined;
          emit({
            type: "tool_input_delta",
            callId: event.id,
            name: event.name,
            delta: event.delta,
            get partialInput() {
              parsed ??= { value: parsePartial(text) };
              return parsed.value;
            },
          });
          break;
        }
        case "retry":
          // The failed attempt's partial inputs are void: the next one streams from the start.
          partialInputs = undefined;
          emit({
            type: "retry",
            attempt: event.attempt,
            delayMs: event.delayMs ?? 0,
            error: event.error,
          });
          break;
        case "tool_call":
          options.onToolCall?.(event);
          break;
        case "message":
          return {
            ok: true,
            message: normaliseMessage(event.message),
            stopReason: event.stopReason,
            usage: event.usage,
            incompleteToolCalls: event.incompleteToolCalls ?? [],
          };
      }
      return undefined;
    };
    try {
      while (true) {
        const step = await Promise.race([iterator.next(), aborted]);
        if (step.done) break;
        if (batches) {
          for (const event of step.value as ModelStreamEvent[]) {
            const turn = take(event);
            if (turn) return turn;
          }
        } else {
          const turn = take(step.value as ModelStreamEvent);
          if (turn) return turn;
        }
      }
      throw new ModelError("The model's stream ended without a final message.");
    } finally {
      signal.removeEventListener("abort", stopIterator);
      stopIterator();
    }
  } catch (error) {
    // On abort too: the partial text goes into the transcript, marked incomplete, before AbortError.
    const partial: Message | undefined = partialText
      ? { role: "assistant", content: [{ type: "text", text: partialText }], incomplete: true }
      : undefined;
    return { ok: false, error: errorInfo(error), partial };
  }
}

function normaliseMessage(message: Message): Message {
  const content: ContentBlock[] =
    typeof message.content === "string"
      ? [{ type: "text", text: message.content }]
      : message.content;
  return { role: "assistant", content };
}

/** What the result says of a model failure: name and message, and the provider's status, request id and attempts where known. */
function errorInfo(error: unknown): ErrorInfo {
  const info: ErrorInfo = describeThrown(error);
  const { status, requestId, attempts } = (error ?? {}) as {
    status?: unknown;
    requestId?: unknown;
    attempts?: unknown;
  };
  if (typeof status === "number") info.status = status;
  if (typeof requestId === "string") info.requestId = requestId;
  if (typeof attempts === "number") info.attempts = attempts;
  return info;
}
