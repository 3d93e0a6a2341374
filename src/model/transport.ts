import type { EventSourceMessage } from "eventsource-parser";
import {
  type APIError,
  apiErrorFor,
  describeThrown,
  ModelError,
  ProtocolError,
} from "../errors.ts";
import { Attempt } from "./attempt.ts";
import { type BatchedStream, EVENT_BATCHES, type ModelStreamEvent } from "./model.ts";
import { retryDelay, shouldRetry, sleep } from "./retry-policy.ts";

/** The resilience settings every provider shares (DESIGN: provider options). */
export interface TransportOptions {
  maxRetries: number;
  /** A `retry-after` longer than this is not waited for; normal backoff applies. */
  maxRetryDelayMs: number;
  /** Until the response headers arrive. */
  timeoutMs: number;
  /** Between stream events; comments and pings do not reset it. */
  idleTimeoutMs: number;
  /** The whole of one attempt, headers and body: a server that trickles forever still ends. */
  totalTimeoutMs: number;
  /** The user's `fetch` (provider option), for every attempt; else `globalThis.fetch`, read at call time. */
  fetch?: typeof globalThis.fetch;
}

/** How one protocol reads one attempt's stream. A fresh decoder per attempt. */
export interface StreamDecoder {
  /**
   * Reads one server-sent event; adds what to pass on to `out` (the read's events, shared by
   * every event of one network read). Throws `ProtocolError` or `APIError`.
   */
  push(event: EventSourceMessage, out: ModelStreamEvent[]): void;
  /** The stream ended: adds the closing events to `out`, or throws if the turn was not complete. */
  end(out: ModelStreamEvent[]): void;
  /** True once the protocol's stop event arrived (`message_stop`, `[DONE]`). */
  isComplete?(): boolean;
  /** Events that only keep the connection alive (Anthropic's `ping`): they never reset the idle watchdog. */
  isKeepAlive?(event: EventSourceMessage): boolean;
}

export interface StreamRequest {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal;
  transport: TransportOptions;
  /** Builds the typed error for a non-2xx answer from its status, headers and body text. */
  readError(status: number, headers: Record<string, string>, body: string): APIError;
  createDecoder(): StreamDecoder;
}

/**
 * Streams one model turn with retries owned here, in one place (RELIABILITY contract 1-5):
 * an attempt is retried only while nothing of it was passed on (no text, thinking or tool call
 * yet); each retry is announced with a `retry` event; after that, a failure is thrown and the
 * engine keeps the partial text as an incomplete message and never runs its tool calls.
 *
 * The stream offers its events one at a time, and to the engine also a network read at a time
 * (`EVENT_BATCHES`): the same events in the same order, for a few awaits per turn instead of
 * several per event.
 */
export function streamWithRetries(
  request: StreamRequest,
): AsyncIterable<ModelStreamEvent> & BatchedStream {
  return new ProviderStream(request);
}

/**
 * A model call's stream. Nothing is sent until it is read; the engine reads the batches, and the
 * event-by-event view is made only for a consumer that asks for it.
 */
class ProviderStream implements AsyncIterable<ModelStreamEvent>, BatchedStream {
  readonly #request: StreamRequest;
  #batches: AsyncGenerator<ModelStreamEvent[]> | undefined;

  constructor(request: StreamRequest) {
    this.#request = request;
  }

  [EVENT_BATCHES](): AsyncGenerator<ModelStreamEvent[]> {
    this.#batches ??= retryingBatches(this.#request);
    return this.#batches;
  }

  [Symbol.asyncIterator](): AsyncIterator<ModelStreamEvent> {
    return eachEvent(this[EVENT_BATCHES]());
  }
}

async function* eachEvent(
  batches: AsyncGenerator<ModelStreamEvent[]>,
): AsyncGenerator<ModelStreamEvent> {
  for await (const batch of batches) yield* batch;
}

/**
 * What makes an attempt final: once one of these reached the engine, a failure is not retried.
 * `tool_input_delta` is deliberately not among them: a call's input counts once its `tool_call`
 * is passed on, so a cut after only deltas is still retried (the next attempt streams its
 * deltas from the start, after the `retry` event).
 */
const passesOn = (event: ModelStreamEvent) =>
  event.type === "text_delta" || event.type === "thinking_delta" || event.type === "tool_call";

async function* retryingBatches(request: StreamRequest): AsyncGenerator<ModelStreamEvent[]> {
  // Aborted before anything was sent: no request at all.
  request.signal.throwIfAborted();
  for (let attempt = 1; ; attempt++) {
    let passedOn = false;
    const once = new Attempt(request);
    try {
      await once.open();
      while (true) {
        const batch = await once.read();
        if (!batch) return;
        if (!passedOn) passedOn = batch.some(passesOn);
        yield batch;
      }
    } catch (error) {
      once.close();
      if (request.signal.aborted) throw request.signal.reason ?? error;
      if (error instanceof ModelError) error.attempts = attempt;
      if (passedOn || attempt > request.transport.maxRetries || !shouldRetry(error)) throw error;
      const delayMs = retryDelay(error, attempt, request.transport.maxRetryDelayMs);
      const info = describeThrown(error);
      const status = error instanceof ModelError ? error.status : undefined;
      yield [
        {
          type: "retry",
          attempt,
          delayMs,
          error: status === undefined ? info : { ...info, status },
        },
      ];
      await sleep(delayMs, request.signal);
    } finally {
      // Its timer and abort listener go; a body not read to its end is closed (once only).
      once.close();
    }
  }
}

/**
 * Reads a provider's JSON error body (`{ error: { message, type } }`), or the start of a non-JSON
 * body (an HTML 502 page). `missingKeyHint` (no key was sent) is added to a 401's message.
 */
export function readErrorBody(
  status: number,
  headers: Record<string, string>,
  body: string,
  requestIdHeader: string,
  missingKeyHint?: string,
): APIError {
  let message: string | undefined;
  let type: string | undefined;
  try {
    const parsed = JSON.parse(body) as {
      error?: { message?: unknown; type?: unknown } | string;
      message?: unknown;
    };
    const inner = typeof parsed.error === "object" ? parsed.error : undefined;
    if (typeof inner?.message === "string") message = inner.message;
    else if (typeof parsed.error === "string") message = parsed.error;
    else if (typeof parsed.message === "string") message = parsed.message;
    if (typeof inner?.type === "string") type = inner.type;
  } catch {
    message =
      body
        .replace(/<[^>]*>/g, " ")
        .replace(/\s+/g, " ")
        .trim()
        .slice(0, 300) || undefined;
  }
  let text = `${status}${type ? ` ${type}` : ""}: ${message ?? "the model API answered with an error and no message"}`;
  if (status === 401 && missingKeyHint) text = `${text.replace(/\.?$/, ".")} ${missingKeyHint}`;
  return apiErrorFor(status, text, { type, requestId: headers[requestIdHeader], headers });
}

/** One event's data as a JSON object; anything else is a `ProtocolError` (never retried). */
export function parseEventData(data: string): Record<string, unknown> {
  try {
    const value = JSON.parse(data);
    if (typeof value === "object" && value !== null) return value as Record<string, unknown>;
  } catch {
    // Reported below, with the data.
  }
  throw new ProtocolError(
    `The model's stream sent data that is not a JSON object: ${data.slice(0, 120)}`,
  );
}
