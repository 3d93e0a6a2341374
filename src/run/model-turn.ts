import { describeThrown, ModelError } from "../core/errors.ts";
import type { ContentBlock, Message, ToolResultBlock, Usage } from "../core/messages.ts";
import {
  type BatchedStream,
  EVENT_BATCHES,
  type IncompleteToolCall,
  type Model,
  type ModelRequest,
  type ModelStreamEvent,
  SETTLES_ON_ABORT,
  type StopReason,
} from "../model/model.ts";
import type { EngineConfig } from "./config.ts";
import { unheard } from "./new-run.ts";
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
  const relay = new Relay(options.emit, options.onToolCall);
  try {
    const { model, request, signal } = options;
    const stream = model.stream(request, { signal });
    // skein's providers offer their events a network read at a time (the same events, in
    // order): one step and one await for all of them.
    const batched = stream as Partial<BatchedStream>;
    const batches = batched[EVENT_BATCHES]?.();
    const iterator: AsyncIterator<ModelStreamEvent | ModelStreamEvent[]> =
      batches ?? stream[Symbol.asyncIterator]();
    // Each step is raced against the signal, so that a model that ignores it cannot keep an
    // aborted run alive; except for batches that settle on the run's signal by themselves (a
    // skein provider given that signal), whose pending step an abort rejects at once.
    const race =
      batches && batched[SETTLES_ON_ABORT] === signal ? undefined : abortRace(signal, iterator);
    try {
      while (true) {
        const step = race
          ? await Promise.race([iterator.next(), race.aborted])
          : await iterator.next();
        if (step.done) break;
        if (batches) {
          for (const event of step.value as ModelStreamEvent[]) {
            const turn = relay.take(event);
            if (turn) return turn;
          }
        } else {
          const turn = relay.take(step.value as ModelStreamEvent);
          if (turn) return turn;
        }
      }
      throw new ModelError("The model's stream ended without a final message.");
    } finally {
      // The turn is complete (or failed): the stream's attempt ends now.
      if (race) race.end();
      else stopReading(iterator);
    }
  } catch (error) {
    // On abort too: the partial text goes into the transcript, marked incomplete, before AbortError.
    const partial: Message | undefined = relay.partialText
      ? {
          role: "assistant",
          content: [{ type: "text", text: relay.partialText }],
          incomplete: true,
        }
      : undefined;
    return { ok: false, error: errorInfo(error), partial };
  }
}

/**
 * One abort promise for a whole model call, raced with each step (no listener per event); `end`
 * removes the listener and stops the stream.
 */
function abortRace(
  signal: AbortSignal,
  iterator: AsyncIterator<unknown>,
): { aborted: Promise<never>; end(): void } {
  let rejectAborted: (reason: unknown) => void = () => {};
  const aborted = new Promise<never>((_, reject) => {
    rejectAborted = reject;
  });
  aborted.catch(() => {});
  const stopIterator = () => {
    rejectAborted(signal.reason);
    stopReading(iterator);
  };
  if (signal.aborted) stopIterator();
  signal.addEventListener("abort", stopIterator, { once: true });
  return {
    aborted,
    end() {
      signal.removeEventListener("abort", stopIterator);
      stopIterator();
    },
  };
}

function stopReading(iterator: AsyncIterator<unknown>): void {
  void Promise.resolve(iterator.return?.()).catch(() => {});
}

/** Relays a model call's events to the run and keeps what a failure leaves (the partial text). */
class Relay {
  partialText = "";
  /** Each call's arguments as streamed so far (tool_input_delta), by call id. */
  #partialInputs: Map<string, string> | undefined;
  readonly #emit: (event: AgentEvent) => void;
  readonly #onToolCall: ((call: { id: string; name: string; input: unknown }) => void) | undefined;
  /** Nobody hears the run's events (`run()`): events that cost something to build are not built. */
  readonly #unheard: boolean;

  constructor(
    emit: (event: AgentEvent) => void,
    onToolCall: ((call: { id: string; name: string; input: unknown }) => void) | undefined,
  ) {
    this.#emit = emit;
    this.#onToolCall = onToolCall;
    this.#unheard = emit === unheard;
  }

  /** Relays one event; the final message ends the turn. */
  take(event: ModelStreamEvent): ModelTurn | undefined {
    switch (event.type) {
      case "text_delta":
        this.partialText += event.text;
        this.#emit(event);
        break;
      case "thinking_delta":
        this.#emit(event);
        break;
      case "tool_input_delta": {
        if (this.#unheard) break;
        this.#partialInputs ??= new Map();
        const text = (this.#partialInputs.get(event.id) ?? "") + event.delta;
        this.#partialInputs.set(event.id, text);
        // Parsed when read: a run nobody streams (run()) never pays for it.
        let parsed: { value: unknown } | undefined;
        this.#emit({
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
        this.#partialInputs = undefined;
        this.#emit({
          type: "retry",
          attempt: event.attempt,
          delayMs: event.delayMs ?? 0,
          error: event.error,
        });
        break;
      case "tool_call":
        this.#onToolCall?.(event);
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
