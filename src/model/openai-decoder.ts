import type { EventSourceMessage } from "eventsource-parser";
import {
  APIConnectionError,
  apiErrorFor,
  InternalServerError,
  ProtocolError,
} from "../core/errors.ts";
import type { ContentBlock, Usage } from "../core/messages.ts";
import type { IncompleteToolCall, ModelStreamEvent } from "./model.ts";
import { parseEventData, type StreamDecoder } from "./transport.ts";

interface PartialToolCall {
  id: string;
  name: string;
  arguments: string;
  /** The call's `extra_content` (Gemini's OpenAI endpoint: its thought signature), kept as sent. */
  extraContent?: unknown;
  input?: unknown;
  /** Why the call cannot run, once read. */
  incomplete?: string;
  /** The length of `arguments` when it last failed to parse while a later call streamed. */
  triedAt?: number;
}

/**
 * Reads `chat.completion.chunk` events into model stream events. A turn is complete at
 * `data: [DONE]`, or when the stream closes after every choice has its `finish_reason` and the
 * usage chunk has arrived (servers such as MiniMax send no `[DONE]`); a stream that closes
 * before that was cut.
 */
export class OpenAIDecoder implements StreamDecoder {
  readonly #restore: ((name: string, input: unknown) => unknown) | undefined;
  /** Where the reply came from, kept with a call's `extra_content` (only that origin gets it back). */
  readonly #origin: string;

  constructor(restore?: (name: string, input: unknown) => unknown, origin = "") {
    this.#restore = restore;
    this.#origin = origin;
  }

  #text = "";
  #reasoning = "";
  #calls: PartialToolCall[] = [];
  #finishReason = "";
  #usage: Partial<Usage> | undefined;
  #done = false;
  /**
   * Each choice seen, by index: true once it had its finish_reason (a later chunk never undoes
   * it). An array: the index is a small integer (others are read as 0), nearly always 0 alone.
   */
  #choices: boolean[] = [];
  /** Calls read so far (complete ones announced, in order). */
  #announced = 0;
  /** False after a call that was cut short: no later call may overtake it. */
  #announcing = true;

  isComplete(): boolean {
    return this.#done;
  }

  push(event: EventSourceMessage, out: ModelStreamEvent[]): void {
    const data = event.data;
    // A chunk is a JSON object: only data that does not start like one can be the end.
    if (data.charCodeAt(0) !== 123 /* { */ && data.trim() === "[DONE]") {
      this.#done = true;
      return;
    }
    const chunk = parseEventData(data);
    if (chunk.error) {
      // OpenRouter and others report failures inside the stream, with the HTTP status as `code`.
      const error = chunk.error as { message?: string; type?: string; code?: unknown };
      const message = `The model's stream reported an error: ${error.message ?? JSON.stringify(error)}`;
      const type = typeof error.type === "string" ? error.type : undefined;
      if (typeof error.code === "number") throw apiErrorFor(error.code, message, { type });
      // With no status to go by, an error event is a server-side failure: retried while nothing was passed on.
      throw new InternalServerError(message, { type });
    }
    if (typeof chunk.usage === "object" && chunk.usage !== null)
      this.#usage = readUsage(chunk.usage as Record<string, unknown>);
    if (!Array.isArray(chunk.choices)) return;
    for (const entry of chunk.choices as unknown[]) {
      if (typeof entry !== "object" || entry === null) continue;
      const choice = entry as Record<string, unknown>;
      const index =
        Number.isInteger(choice.index) && (choice.index as number) >= 0
          ? Math.min(choice.index as number, MAX_CHOICES)
          : 0;
      const finished = typeof choice.finish_reason === "string" && choice.finish_reason !== "";
      this.#choices[index] = this.#choices[index] === true || finished;
      if (finished) this.#finishReason = choice.finish_reason as string;
      // MiniMax and Azure send chunks with no delta at all (a finish, or content filter results).
      const delta = choice.delta as Record<string, unknown> | null | undefined;
      if (typeof delta !== "object" || delta === null) continue;
      if (typeof delta.content === "string" && delta.content) {
        this.#text += delta.content;
        out.push({ type: "text_delta", text: delta.content });
      }
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (typeof reasoning === "string" && reasoning) {
        this.#reasoning += reasoning;
        out.push({ type: "thinking_delta", thinking: reasoning });
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const call of delta.tool_calls as Record<string, unknown>[])
          this.#toolCallDelta(call, out);
      }
    }
  }

  /**
   * Assembles fragments, passing each non-empty one on as a `tool_input_delta`. Parallel calls
   * are told apart by `index`, and their fragments may interleave: a call is announced (eager
   * execution) once a later call streams and its own JSON is complete, never while it may still
   * grow; the rest are read at the end.
   */
  #toolCallDelta(call: Record<string, unknown>, out: ModelStreamEvent[]): void {
    const index = typeof call.index === "number" ? call.index : this.#calls.length;
    // A hostile index must not make us walk or allocate a huge array.
    if (!Number.isInteger(index) || index < 0 || index > this.#calls.length + 16) {
      throw new ProtocolError(`A tool call delta has an unusable index (${String(call.index)}).`);
    }
    const fn = (call.function ?? {}) as { name?: string; arguments?: string };
    const current = this.#calls[index] ?? { id: "", name: "", arguments: "" };
    this.#calls[index] = current;
    if (typeof call.id === "string" && call.id) current.id = call.id;
    if (call.extra_content !== undefined && call.extra_content !== null)
      current.extraContent = call.extra_content;
    // Some servers repeat the name in every chunk: the name is set, not appended (as openai-node does).
    if (typeof fn.name === "string" && fn.name) current.name = fn.name;
    if (typeof fn.arguments === "string" && fn.arguments !== "") {
      current.arguments += fn.arguments;
      // A call already announced has complete JSON (only whitespace can follow it): its input is
      // settled, and no delta may come after its tool_call.
      if (index >= this.#announced) {
        const id = current.id || `call_${index}`;
        out.push({ type: "tool_input_delta", id, name: current.name, delta: fn.arguments });
      }
    }
    while (this.#announced < index && this.#complete(this.#announced))
      this.#announce(this.#announced++, false, out);
  }

  /**
   * True when call `index`'s JSON is complete (a JSON text that parses cannot grow into another
   * one), or was read as broken. Tried again only once its text changed, so a call that streams
   * beside another is parsed at most once per fragment of its own that ends like a JSON object.
   */
  #complete(index: number): boolean {
    const call = this.#calls[index];
    if (!call) return true;
    const text = call.arguments.trimEnd();
    if (!text.endsWith("}") && !text.endsWith("]")) return false;
    if (call.triedAt === text.length) return false;
    try {
      JSON.parse(text);
      return true;
    } catch {
      call.triedAt = text.length;
      return false;
    }
  }

  /** Reads call `index`; adds its tool_call event when it is complete and nothing before it was cut. */
  #announce(index: number, last: boolean, out: ModelStreamEvent[]): void {
    const call = this.#calls[index];
    if (!call) return;
    const id = call.id || `call_${index}`;
    let reason: string | undefined;
    try {
      call.input = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
      if (typeof call.input !== "object" || call.input === null || Array.isArray(call.input)) {
        reason = "its input was not a JSON object";
        call.input = {};
      }
      if (this.#restore) call.input = this.#restore(call.name, call.input);
      if (last && this.#finishReason === "length")
        reason = "the reply hit the length limit while writing it";
    } catch {
      reason =
        this.#finishReason === "length" && last
          ? "the reply hit the length limit while writing it"
          : "its input was not valid JSON";
    }
    if (reason) {
      call.incomplete = reason;
      this.#announcing = false;
      return;
    }
    if (this.#announcing) out.push({ type: "tool_call", id, name: call.name, input: call.input });
  }

  /** True when the stream said all it had to say, `[DONE]` or not. */
  #finished(): boolean {
    if (this.#done) return true;
    if (this.#usage === undefined || this.#choices.length === 0) return false;
    // A hole is an index no chunk named: not a choice.
    return this.#choices.every((finished) => finished);
  }

  /** A stream that ends before it finished is cut, never a finished turn. */
  end(out: ModelStreamEvent[]): void {
    if (!this.#finished()) {
      throw new APIConnectionError(
        this.#choices.length > 0 && this.#choices.every(Boolean)
          ? "The model's stream ended without [DONE] and without its usage chunk: the turn is incomplete."
          : "The model's stream ended without [DONE] before every choice had a finish_reason: the turn is incomplete.",
      );
    }
    const content: ContentBlock[] = [];
    if (this.#reasoning) content.push({ type: "thinking", thinking: this.#reasoning });
    if (this.#text) content.push({ type: "text", text: this.#text });
    const incomplete: IncompleteToolCall[] = [];
    while (this.#announced < this.#calls.length) {
      this.#announce(this.#announced, this.#announced === this.#calls.length - 1, out);
      this.#announced++;
    }
    this.#calls.forEach((call, index) => {
      const id = call.id || `call_${index}`;
      if (call.incomplete) incomplete.push({ id, name: call.name, reason: call.incomplete });
      content.push({
        type: "tool_use",
        id,
        name: call.name,
        input: call.incomplete ? {} : call.input,
        ...(call.extraContent === undefined
          ? {}
          : {
              providerData: {
                wire: "openai-chat",
                origin: this.#origin,
                extraContent: call.extraContent,
              },
            }),
      });
    });
    const message: ModelStreamEvent = {
      type: "message",
      message: { role: "assistant", content },
      stopReason: Object.hasOwn(STOP_REASONS, this.#finishReason)
        ? STOP_REASONS[this.#finishReason]!
        : this.#finishReason || "end_turn",
    };
    if (this.#usage) message.usage = this.#usage;
    if (incomplete.length) message.incompleteToolCalls = incomplete;
    out.push(message);
  }
}

/** Choice indexes above this are read as this one (a hostile index must not grow an array). */
const MAX_CHOICES = 64;

const STOP_REASONS: Record<string, string> = {
  stop: "end_turn",
  tool_calls: "tool_use",
  length: "max_tokens",
  function_call: "tool_use",
};

/** `prompt_tokens` include cached tokens: those go to cacheReadInputTokens (DeepSeek names them `prompt_cache_hit_tokens`). */
function readUsage(usage: Record<string, unknown>): Partial<Usage> {
  const prompt = Number(usage.prompt_tokens ?? 0);
  const details = usage.prompt_tokens_details as { cached_tokens?: number } | undefined;
  const cached = Number(details?.cached_tokens ?? usage.prompt_cache_hit_tokens ?? 0);
  return {
    inputTokens: Math.max(0, prompt - cached),
    outputTokens: Number(usage.completion_tokens ?? 0),
    cacheReadInputTokens: cached,
    cacheCreationInputTokens: 0,
  };
}
