import type { EventSourceMessage } from "eventsource-parser";
import {
  APIConnectionError,
  APIError,
  apiErrorFor,
  InternalServerError,
  ProtocolError,
  RateLimitError,
} from "../core/errors.ts";
import type { ContentBlock, Usage } from "../core/messages.ts";
import type { IncompleteToolCall, ModelStreamEvent } from "./model.ts";
import { RESPONSES_PROTOCOL } from "./responses-request.ts";
import { parseEventData, type StreamDecoder } from "./transport.ts";

/** One output item as it streams, by its `output_index`. */
type Item =
  | { kind: "reasoning"; summary: string; done?: Record<string, unknown> }
  | { kind: "message"; text: string }
  | {
      kind: "call";
      itemId: string | undefined;
      callId: string;
      name: string;
      arguments: string;
      done: boolean;
    }
  | { kind: "other" };

/**
 * Reads Responses API stream events into model stream events. The turn is complete at
 * `response.completed` (or `response.incomplete`, a reply cut by `max_output_tokens`); a stream
 * that closes before either was cut. A function call is announced (`tool_call`, for eager
 * execution) when its item is done, in output order; reasoning items are kept whole, as
 * received, to be sent back.
 */
export class ResponsesDecoder implements StreamDecoder {
  readonly #origin: string;
  readonly #restore: ((name: string, input: unknown) => unknown) | undefined;
  #items: Item[] = [];
  #done = false;
  #incomplete: string | undefined;
  #usage: Partial<Usage> | undefined;
  /** Calls announced so far, in output order; false after one that could not be. */
  #announcing = true;
  #inputs = new Map<number, unknown>();
  #broken = new Map<number, string>();

  constructor(origin: string, restore?: (name: string, input: unknown) => unknown) {
    this.#origin = origin;
    this.#restore = restore;
  }

  isComplete(): boolean {
    return this.#done;
  }

  push(event: EventSourceMessage, out: ModelStreamEvent[]): void {
    const data = parseEventData(event.data);
    const type = typeof data.type === "string" ? data.type : event.event;
    switch (type) {
      case "response.output_text.delta": {
        const item = this.#item(data, "message");
        const delta = typeof data.delta === "string" ? data.delta : "";
        if (item?.kind === "message" && delta) {
          item.text += delta;
          out.push({ type: "text_delta", text: delta });
        }
        return;
      }
      case "response.function_call_arguments.delta": {
        const item = this.#item(data, "call");
        const delta = typeof data.delta === "string" ? data.delta : "";
        if (item?.kind === "call" && delta && !item.done) {
          item.arguments += delta;
          out.push({ type: "tool_input_delta", id: item.callId, name: item.name, delta });
        }
        return;
      }
      case "response.reasoning_summary_text.delta": {
        const item = this.#item(data, "reasoning");
        const delta = typeof data.delta === "string" ? data.delta : "";
        if (item?.kind === "reasoning" && delta) {
          item.summary += delta;
          out.push({ type: "thinking_delta", thinking: delta });
        }
        return;
      }
      case "response.reasoning_summary_part.added": {
        // Summary parts are separated by a blank line in the readable text.
        const item = this.#item(data, "reasoning");
        if (item?.kind === "reasoning" && item.summary !== "") {
          item.summary += "\n\n";
          out.push({ type: "thinking_delta", thinking: "\n\n" });
        }
        return;
      }
      case "response.output_item.added":
        this.#added(data);
        return;
      case "response.output_item.done":
        this.#itemDone(data, out);
        return;
      case "response.completed":
      case "response.incomplete":
        this.#finished(data);
        return;
      case "response.failed":
        throw failure((data.response as { error?: unknown } | undefined)?.error, "response.failed");
      case "error":
        // The details at the top level, or (as recorded from OpenAI) under `error`.
        throw failure(
          typeof data.error === "object" && data.error !== null ? data.error : data,
          "error",
        );
      default:
        return;
    }
  }

  #index(data: Record<string, unknown>): number {
    const index = data.output_index;
    // A hostile index must not make us allocate a huge array.
    if (
      !Number.isInteger(index) ||
      (index as number) < 0 ||
      (index as number) > this.#items.length + 16
    )
      throw new ProtocolError(
        `A Responses stream event has an unusable output_index (${String(index)}).`,
      );
    return index as number;
  }

  /** The item an event names; a delta for an item never announced is read as one. */
  #item(data: Record<string, unknown>, kind: "message" | "reasoning" | "call"): Item | undefined {
    const index = this.#index(data);
    let item = this.#items[index];
    if (!item && kind !== "call") {
      item = kind === "message" ? { kind, text: "" } : { kind, summary: "" };
      this.#items[index] = item;
    }
    return item;
  }

  #added(data: Record<string, unknown>): void {
    const index = this.#index(data);
    const item = (data.item ?? {}) as Record<string, unknown>;
    if (item.type === "function_call") {
      this.#items[index] = {
        kind: "call",
        itemId: typeof item.id === "string" ? item.id : undefined,
        callId: typeof item.call_id === "string" ? item.call_id : `call_${index}`,
        name: typeof item.name === "string" ? item.name : "",
        arguments: typeof item.arguments === "string" ? item.arguments : "",
        done: false,
      };
    } else if (item.type === "reasoning") this.#items[index] = { kind: "reasoning", summary: "" };
    else if (item.type === "message") this.#items[index] = { kind: "message", text: "" };
    else this.#items[index] = { kind: "other" };
  }

  #itemDone(data: Record<string, unknown>, out: ModelStreamEvent[]): void {
    const index = this.#index(data);
    const item = (data.item ?? {}) as Record<string, unknown>;
    if (item.type === "reasoning") {
      const current = this.#items[index];
      const summary = current?.kind === "reasoning" ? current.summary : summaryText(item.summary);
      this.#items[index] = { kind: "reasoning", summary, done: item };
      return;
    }
    if (item.type === "message") {
      // The finished item's text is the whole text: it stands over the deltas.
      const text = messageText(item.content);
      const current = this.#items[index];
      if (text !== "" || current?.kind !== "message")
        this.#items[index] = { kind: "message", text };
      return;
    }
    if (item.type !== "function_call") return;
    let call = this.#items[index];
    if (call?.kind !== "call") {
      this.#added(data);
      call = this.#items[index];
    }
    if (call?.kind !== "call") return;
    // The item's own arguments are the whole text: they stand over the deltas.
    if (typeof item.arguments === "string") call.arguments = item.arguments;
    if (typeof item.id === "string") call.itemId = item.id;
    call.done = true;
    this.#read(index, call, out);
  }

  /** Reads a finished call; announces it when nothing before it was left unannounced. */
  #read(index: number, call: Extract<Item, { kind: "call" }>, out: ModelStreamEvent[]): void {
    let input: unknown;
    try {
      input = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
    } catch {
      this.#broken.set(index, "its input was not valid JSON");
      this.#announcing = false;
      return;
    }
    if (typeof input !== "object" || input === null || Array.isArray(input)) {
      this.#broken.set(index, "its input was not a JSON object");
      this.#announcing = false;
      return;
    }
    if (this.#restore) input = this.#restore(call.name, input);
    this.#inputs.set(index, input);
    // A call before this one still open: announcing this one would overtake it.
    for (let earlier = 0; earlier < index; earlier++) {
      const other = this.#items[earlier];
      if (other?.kind === "call" && !other.done) this.#announcing = false;
    }
    if (this.#announcing) out.push({ type: "tool_call", id: call.callId, name: call.name, input });
  }

  #finished(data: Record<string, unknown>): void {
    const response = (data.response ?? {}) as Record<string, unknown>;
    if (typeof response.usage === "object" && response.usage !== null)
      this.#usage = readUsage(response.usage as Record<string, unknown>);
    if (data.type === "response.incomplete" || response.status === "incomplete") {
      const details = response.incomplete_details as { reason?: unknown } | null | undefined;
      this.#incomplete = typeof details?.reason === "string" ? details.reason : "incomplete";
    }
    this.#done = true;
  }

  end(out: ModelStreamEvent[]): void {
    if (!this.#done)
      throw new APIConnectionError(
        "The model's stream ended before response.completed: the turn is incomplete.",
      );
    const content: ContentBlock[] = [];
    const incomplete: IncompleteToolCall[] = [];
    let calls = 0;
    this.#items.forEach((item, index) => {
      if (!item) return;
      if (item.kind === "reasoning") {
        // Only a finished item can be sent back: a cut one is shown, never replayed.
        if (item.done)
          content.push({
            type: "reasoning",
            text: item.summary,
            providerData: { wire: RESPONSES_PROTOCOL, origin: this.#origin, item: item.done },
          });
        else if (item.summary) content.push({ type: "thinking", thinking: item.summary });
      } else if (item.kind === "message") {
        if (item.text) content.push({ type: "text", text: item.text });
      } else if (item.kind === "call") {
        calls++;
        const reason = item.done
          ? this.#broken.get(index)
          : "the reply hit the length limit while writing it";
        if (reason) incomplete.push({ id: item.callId, name: item.name, reason });
        content.push({
          type: "tool_use",
          id: item.callId,
          name: item.name,
          input: reason ? {} : this.#inputs.get(index),
          ...(item.itemId
            ? {
                providerData: {
                  wire: RESPONSES_PROTOCOL,
                  origin: this.#origin,
                  itemId: item.itemId,
                },
              }
            : {}),
        });
      }
    });
    const stopReason =
      this.#incomplete === "max_output_tokens"
        ? "max_tokens"
        : this.#incomplete !== undefined
          ? this.#incomplete
          : calls > 0
            ? "tool_use"
            : "end_turn";
    const message: ModelStreamEvent = {
      type: "message",
      message: { role: "assistant", content },
      stopReason,
    };
    if (this.#usage) message.usage = this.#usage;
    if (incomplete.length) message.incompleteToolCalls = incomplete;
    out.push(message);
  }
}

function summaryText(summary: unknown): string {
  if (!Array.isArray(summary)) return "";
  return summary
    .map((part) => (typeof part?.text === "string" ? part.text : ""))
    .filter(Boolean)
    .join("\n\n");
}

function messageText(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => (part?.type === "output_text" ? String(part.text ?? "") : ""))
    .join("");
}

/**
 * A `response.failed` or `error` event as a typed error: rate limits and server errors are
 * retried while nothing was passed on (the transport decides), an exhausted quota never is.
 */
function failure(error: unknown, where: string): APIError {
  const given = (typeof error === "object" && error !== null ? error : {}) as {
    code?: unknown;
    message?: unknown;
    type?: unknown;
  };
  const code = typeof given.code === "string" ? given.code : undefined;
  const message = `The model's stream reported an error (${where}${code ? `, ${code}` : ""}): ${
    typeof given.message === "string" ? given.message : JSON.stringify(error)
  }`;
  const type = code ?? (typeof given.type === "string" ? given.type : undefined);
  if (code === "insufficient_quota" || type === "insufficient_quota")
    return apiErrorFor(429, message, { type: code });
  if (code === "rate_limit_exceeded") return new RateLimitError(message, { type });
  if (typeof given.code === "number") return apiErrorFor(given.code, message, { type });
  if (code === undefined || code === "server_error" || code === "internal_error")
    return new InternalServerError(message, { type });
  // A request the API could not serve for a reason of its own (a refusal, an invalid prompt).
  return new APIError(message, { type, status: 400 });
}

/** `input_tokens` include cached tokens: those go to cacheReadInputTokens, as for Chat Completions. */
function readUsage(usage: Record<string, unknown>): Partial<Usage> {
  const input = Number(usage.input_tokens ?? 0);
  const cached = Number(
    (usage.input_tokens_details as { cached_tokens?: number } | undefined)?.cached_tokens ?? 0,
  );
  const reasoning = (usage.output_tokens_details as { reasoning_tokens?: number } | undefined)
    ?.reasoning_tokens;
  return {
    inputTokens: Math.max(0, input - cached),
    outputTokens: Number(usage.output_tokens ?? 0),
    cacheReadInputTokens: cached,
    cacheCreationInputTokens: 0,
    // Said only when some were spent, as the other protocols (which report none) leave it out.
    ...(typeof reasoning === "number" && reasoning > 0 ? { reasoningTokens: reasoning } : {}),
  };
}
