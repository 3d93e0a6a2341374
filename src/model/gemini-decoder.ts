// Gemini's `streamGenerateContent?alt=sse` read into model stream events: each event is a whole
// `GenerateContentResponse` chunk.

import { randomUUID } from "node:crypto";
import type { EventSourceMessage } from "eventsource-parser";
import {
  APIConnectionError,
  apiErrorFor,
  ContentFilterError,
  InternalServerError,
  ProtocolError,
} from "../core/errors.ts";
import type { ContentBlock, ProviderData, Usage } from "../core/messages.ts";
import type { ModelStreamEvent } from "./model.ts";
import { parseEventData, type StreamDecoder } from "./transport.ts";

/** The finish reasons that mean the answer was blocked: a typed error, never an empty answer. */
const BLOCKED: ReadonlySet<string> = new Set([
  "SAFETY",
  "RECITATION",
  "PROHIBITED_CONTENT",
  "BLOCKLIST",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION",
  "LANGUAGE",
]);

/**
 * Reads one Gemini reply. Text and thought parts stream as deltas (consecutive pieces join into
 * one block, and a part's `thoughtSignature` closes the block it came with, so it goes back on
 * the same part); a function call arrives whole in one chunk and is announced at once (eager
 * execution). The reply is complete when the first candidate's `finishReason` has arrived and
 * the stream closed; a close before it is a broken connection.
 */
export class GeminiDecoder implements StreamDecoder {
  readonly #origin: string;
  readonly #content: ContentBlock[] = [];
  /** The block the next text or thought piece joins, while it may still grow. */
  #open: ContentBlock | undefined;
  #calls = 0;
  #finishReason = "";
  #finishMessage = "";
  #usage: Partial<Usage> | undefined;

  /** `origin`: where the reply came from, kept with each signature (only that origin gets it back). */
  constructor(origin: string) {
    this.#origin = origin;
  }

  push(event: EventSourceMessage, out: ModelStreamEvent[]): void {
    const chunk = parseEventData(event.data);
    if (chunk.error) throw streamError(chunk.error);
    if (typeof chunk.usageMetadata === "object" && chunk.usageMetadata !== null)
      this.#usage = readUsage(chunk.usageMetadata as Record<string, unknown>);
    const feedback = chunk.promptFeedback as { blockReason?: unknown } | undefined;
    if (typeof feedback?.blockReason === "string" && feedback.blockReason) {
      const reason = feedback.blockReason;
      throw new ContentFilterError(
        `Gemini refused the prompt (promptFeedback.blockReason ${reason}): nothing was generated. Change the prompt or the conversation; the same request gets the same answer.`,
        { reason },
      );
    }
    const candidates = chunk.candidates;
    if (!Array.isArray(candidates)) return;
    // One candidate is asked for (candidateCount is never sent); another index is not this reply.
    const candidate = candidates.find(
      (entry) => typeof entry === "object" && entry !== null && (entry.index ?? 0) === 0,
    ) as Record<string, unknown> | undefined;
    if (!candidate) return;
    const parts = (candidate.content as { parts?: unknown } | undefined)?.parts;
    if (Array.isArray(parts)) {
      for (const part of parts) {
        if (typeof part === "object" && part !== null) this.#part(part, out);
      }
    }
    if (typeof candidate.finishReason === "string" && candidate.finishReason) {
      this.#finishReason = candidate.finishReason;
      if (typeof candidate.finishMessage === "string")
        this.#finishMessage = candidate.finishMessage;
      if (BLOCKED.has(this.#finishReason)) {
        const reason = this.#finishReason;
        throw new ContentFilterError(
          `Gemini stopped the answer with finishReason ${reason}${this.#finishMessage ? ` (${this.#finishMessage})` : ""}: the reply was blocked by its filters. Change the prompt or the conversation.`,
          { reason },
        );
      }
    }
  }

  #part(part: Record<string, unknown>, out: ModelStreamEvent[]): void {
    const signature =
      typeof part.thoughtSignature === "string" && part.thoughtSignature
        ? part.thoughtSignature
        : undefined;
    const call = part.functionCall as Record<string, unknown> | undefined;
    if (typeof call === "object" && call !== null) {
      this.#open = undefined;
      this.#call(call, signature, out);
      return;
    }
    if (typeof part.text !== "string") {
      // Parts of kinds skein does not ask for (inline images, code execution): a signature on
      // one is still kept, on an empty text part in its place.
      if (signature)
        this.#content.push({ type: "text", text: "", providerData: this.#data(signature) });
      return;
    }
    const text = part.text;
    const thought = part.thought === true;
    const open = this.#open;
    let block: ContentBlock;
    if (open && (thought ? open.type === "thinking" : open.type === "text") && text !== "") {
      block = open;
      if (block.type === "thinking") block.thinking += text;
      else if (block.type === "text") block.text += text;
    } else {
      // A thought is Gemini's own, signed or not: marked, so no other provider is sent it.
      block = thought
        ? { type: "thinking", thinking: text, providerData: this.#data(undefined) }
        : { type: "text", text };
      // An empty piece with nothing to keep is no block at all.
      if (text === "" && !signature) return;
      this.#content.push(block);
    }
    if (text) {
      if (thought) out.push({ type: "thinking_delta", thinking: text });
      else out.push({ type: "text_delta", text });
    }
    if (signature) {
      (block as { providerData?: ProviderData }).providerData = this.#data(signature);
      // The signature belongs to this part: later text starts a part of its own.
      this.#open = undefined;
    } else this.#open = block;
  }

  #call(
    call: Record<string, unknown>,
    signature: string | undefined,
    out: ModelStreamEvent[],
  ): void {
    if (call.willContinue !== undefined || call.partialArgs !== undefined || !call.name) {
      // Function call arguments streamed in pieces come only when asked for, which skein never does.
      throw new ProtocolError(
        "Gemini sent a function call in pieces (willContinue / partialArgs) or without a name; skein asks for whole calls and cannot read this one.",
      );
    }
    const name = typeof call.name === "string" ? call.name : "";
    const given = typeof call.id === "string" && call.id ? call.id : undefined;
    // Gemini's developer API names no call ids: a made one is unique, and never sent back.
    const id = given ?? `call_gemini_${randomUUID().replace(/-/g, "").slice(0, 20)}`;
    const args = call.args ?? {};
    const input = typeof args === "object" && !Array.isArray(args) && args !== null ? args : {};
    const data: ProviderData | undefined =
      signature || !given
        ? {
            ...this.#data(signature),
            ...(given ? {} : { madeId: true }),
          }
        : undefined;
    this.#content.push({
      type: "tool_use",
      id,
      name,
      input,
      ...(data ? { providerData: data } : {}),
    });
    this.#calls++;
    out.push({ type: "tool_input_delta", id, name, delta: JSON.stringify(input) });
    out.push({ type: "tool_call", id, name, input });
  }

  #data(signature: string | undefined): ProviderData {
    const data: ProviderData = { wire: "gemini", origin: this.#origin };
    if (signature) data.thoughtSignature = signature;
    return data;
  }

  end(out: ModelStreamEvent[]): void {
    const reason = this.#finishReason;
    if (!reason) {
      throw new APIConnectionError(
        "The Gemini stream ended before a finishReason: the turn is incomplete.",
      );
    }
    if (reason === "MALFORMED_FUNCTION_CALL" && this.#calls === 0) {
      // Retried while nothing was passed on; after that, the turn ends with this error.
      throw new ProtocolError(
        `Gemini ended the reply with finishReason MALFORMED_FUNCTION_CALL: the model wrote a function call that could not be read${this.#finishMessage ? ` (${this.#finishMessage.slice(0, 300)})` : ""}.`,
        { retryable: true },
      );
    }
    const message: ModelStreamEvent = {
      type: "message",
      message: { role: "assistant", content: this.#content },
      stopReason: stopReasonOf(reason, this.#calls > 0),
    };
    if (this.#usage) message.usage = this.#usage;
    out.push(message);
  }
}

function stopReasonOf(reason: string, calls: boolean): string {
  if (calls) return "tool_use";
  switch (reason) {
    case "STOP":
      return "end_turn";
    case "MAX_TOKENS":
      return "max_tokens";
    default:
      return reason.toLowerCase();
  }
}

/** An error inside the stream (`{"error":{code,message,status}}`), typed by its code. */
function streamError(value: unknown): Error {
  const error = (typeof value === "object" && value !== null ? value : {}) as {
    code?: unknown;
    message?: unknown;
    status?: unknown;
  };
  const message = `The Gemini stream reported an error: ${typeof error.message === "string" ? error.message : JSON.stringify(value)}`;
  const type = typeof error.status === "string" ? error.status : undefined;
  if (typeof error.code === "number" && error.code >= 400)
    return apiErrorFor(error.code, message, { type });
  // With no status to go by, an error event is a server-side failure: retried while nothing was passed on.
  return new InternalServerError(message, { type });
}

/**
 * `promptTokenCount` includes the cached tokens; the output is billed as candidates and thoughts
 * together, the thoughts also reported as `reasoningTokens`.
 */
function readUsage(usage: Record<string, unknown>): Partial<Usage> {
  const count = (name: string) => {
    const value = Number(usage[name] ?? 0);
    return Number.isFinite(value) && value > 0 ? value : 0;
  };
  const cached = count("cachedContentTokenCount");
  const thoughts = count("thoughtsTokenCount");
  return {
    inputTokens: Math.max(0, count("promptTokenCount") - cached),
    outputTokens: count("candidatesTokenCount") + thoughts,
    cacheReadInputTokens: cached,
    cacheCreationInputTokens: 0,
    ...(thoughts > 0 ? { reasoningTokens: thoughts } : {}),
  };
}
