import type { EventSourceMessage } from "eventsource-parser";
import {
  type APIError,
  apiErrorFor,
  describeThrown,
  ModelError,
  ProtocolError,
} from "../core/errors.ts";
import { Attempt } from "./attempt.ts";
import {
  type BatchedStream,
  EVENT_BATCHES,
  type ModelStreamEvent,
  SETTLES_ON_ABORT,
} from "./model.ts";
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
  fetch?: typeof globalThis.fetch | undefined;
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
  #batches: RetryingBatches | undefined;

  constructor(request: StreamRequest) {
    this.#request = request;
  }

  [EVENT_BATCHES](): AsyncIterator<ModelStreamEvent[]> {
    this.#batches ??= new RetryingBatches(this.#request);
    return this.#batches;
  }

  /** The batches settle (rejecting with its reason) as soon as this signal aborts. */
  get [SETTLES_ON_ABORT](): AbortSignal {
    return this.#request.signal;
  }

  [Symbol.asyncIterator](): AsyncIterator<ModelStreamEvent> {
    return eachEvent(this[EVENT_BATCHES]());
  }
}

async function* eachEvent(
  batches: AsyncIterator<ModelStreamEvent[]>,
): AsyncGenerator<ModelStreamEvent> {
  try {
    while (true) {
      const step = await batches.next();
      if (step.done) return;
      yield* step.value;
    }
  } finally {
    await batches.return?.();
  }
}

/**
 * What makes an attempt final: once one of these reached the engine, a failure is not retried.
 * `tool_input_delta` is deliberately not among them: a call's input counts once its `tool_call`
 * is passed on, so a cut after only deltas is still retried (the next attempt streams its
 * deltas from the start, after the `retry` event).
 */
const passesOn = (event: ModelStreamEvent) =>
  event.type === "text_delta" || event.type === "thinking_delta" || event.type === "tool_call";

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/**
 * The attempts of one model call, a network read at a time: each `next()` is one read of the
 * current attempt, a `retry` event between attempts, or the end. Written as an iterator rather
 * than an async generator, for one promise per read. Settles as soon as the request's signal
 * aborts (the attempt races its reads and its request against the abort; the retry wait listens
 * to the signal), rejecting with the signal's reason.
 */
class RetryingBatches implements AsyncIterator<ModelStreamEvent[]> {
  readonly #request: StreamRequest;
  /** The attempt being read; undefined between attempts and once the call ended. */
  #current: Attempt | undefined;
  #attempt = 0;
  /** Something of the current attempt that makes it final was passed on. */
  #passedOn = false;
  /** The wait before the next attempt, announced by the last batch (a `retry` event). */
  #retryDelayMs: number | undefined;
  #ended = false;

  constructor(request: StreamRequest) {
    this.#request = request;
  }

  async next(): Promise<IteratorResult<ModelStreamEvent[]>> {
    if (this.#ended) return DONE;
    const { signal } = this.#request;
    let once = this.#current;
    try {
      if (!once) {
        if (this.#retryDelayMs !== undefined) {
          const delayMs = this.#retryDelayMs;
          this.#retryDelayMs = undefined;
          await sleep(delayMs, signal);
        }
        // Aborted before anything was sent: no request at all.
        signal.throwIfAborted();
        this.#attempt++;
        this.#passedOn = false;
        once = new Attempt(this.#request);
        this.#current = once;
        await once.open();
      }
      const batch = await once.read();
      // An abort while the read finished (the body's end after the stop event) still ends the call.
      signal.throwIfAborted();
      if (!batch) {
        this.#end();
        return DONE;
      }
      if (!this.#passedOn) this.#passedOn = batch.some(passesOn);
      // The turn's last read: its timer and listener go now, not when the engine lets go.
      if (once.settled) this.#end();
      return { done: false, value: batch };
    } catch (error) {
      return this.#failed(error, once);
    }
  }

  /** The engine stops reading (the turn is complete, or the run aborted): the attempt ends now. */
  async return(): Promise<IteratorResult<ModelStreamEvent[]>> {
    this.#end();
    return DONE;
  }

  #end(): void {
    this.#ended = true;
    this.#current?.close();
    this.#current = undefined;
  }

  /** A failed attempt: thrown, or retried after a `retry` event while nothing was passed on. */
  #failed(error: unknown, once: Attempt | undefined): IteratorResult<ModelStreamEvent[]> {
    once?.close();
    this.#current = undefined;
    const { signal, transport } = this.#request;
    const attempt = this.#attempt;
    if (this.#ended || signal.aborted) {
      this.#ended = true;
      throw signal.aborted ? (signal.reason ?? error) : error;
    }
    if (error instanceof ModelError) error.attempts = attempt;
    if (
      once === undefined ||
      this.#passedOn ||
      attempt > transport.maxRetries ||
      !shouldRetry(error)
    ) {
      this.#ended = true;
      throw error;
    }
    const delayMs = retryDelay(error, attempt, transport.maxRetryDelayMs);
    this.#retryDelayMs = delayMs;
    const info = describeThrown(error);
    const status = error instanceof ModelError ? error.status : undefined;
    return {
      done: false,
      value: [
        {
          type: "retry",
          attempt,
          delayMs,
          error: status === undefined ? info : { ...info, status },
        },
      ],
    };
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
    // Out of credit, said by the code where the type is generic: never retried.
    if ((inner as { code?: unknown } | undefined)?.code === "insufficient_quota")
      type = "insufficient_quota";
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
