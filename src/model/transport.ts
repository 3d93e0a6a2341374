import { createParser, type EventSourceMessage } from "eventsource-parser";
import {
  APIConnectionError,
  type APIError,
  APITimeoutError,
  apiErrorFor,
  describeThrown,
  ModelError,
  ProtocolError,
} from "../errors.ts";
import { describeValue } from "../options.ts";
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
  /** Reads one server-sent event; returns what to pass on. Throws `ProtocolError` or `APIError`. */
  push(event: EventSourceMessage): ModelStreamEvent[];
  /** The stream ended: returns the closing events, or throws if the turn was not complete. */
  end(): ModelStreamEvent[];
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
): AsyncGenerator<ModelStreamEvent> & BatchedStream {
  const batches = retryingBatches(request);
  const events = eachEvent(batches) as AsyncGenerator<ModelStreamEvent> & BatchedStream;
  events[EVENT_BATCHES] = () => batches;
  return events;
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
    try {
      for await (const batch of streamOnce(request)) {
        if (!passedOn) passedOn = batch.some(passesOn);
        yield batch;
      }
      return;
    } catch (error) {
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
    }
  }
}

async function* streamOnce(request: StreamRequest): AsyncGenerator<ModelStreamEvent[]> {
  const { transport, signal } = request;
  const controller = new AbortController();
  const forwardAbort = () => controller.abort(signal.reason);
  signal.addEventListener("abort", forwardAbort, { once: true });
  let idleTimer: NodeJS.Timeout | undefined;
  let bodyDone = false;
  // One timer per attempt, pushed back on each event (refresh, not a new timer per event).
  const armIdle = () => {
    if (idleTimer) idleTimer.refresh();
    else {
      idleTimer = setTimeout(
        () =>
          controller.abort(
            new APITimeoutError(`The model API sent nothing for ${transport.idleTimeoutMs} ms.`),
          ),
        transport.idleTimeoutMs,
      );
    }
  };
  // RELIABILITY contract 5: an overall deadline, since a trickle of events keeps the idle watchdog quiet.
  const deadline = setTimeout(
    () =>
      controller.abort(
        new APITimeoutError(
          `The model API's reply did not complete within ${transport.totalTimeoutMs} ms (totalTimeoutMs).`,
        ),
      ),
    transport.totalTimeoutMs,
  );
  const headersTimer = setTimeout(
    () =>
      controller.abort(
        new APITimeoutError(`No response from the model API within ${transport.timeoutMs} ms.`),
      ),
    transport.timeoutMs,
  );
  try {
    let response: Response;
    try {
      const send = transport.fetch ?? fetch;
      response = await send(request.url, {
        method: "POST",
        headers: request.headers,
        body: JSON.stringify(request.body),
        signal: controller.signal,
        // A redirect could carry the key to another host: refuse it.
        redirect: "error",
      });
    } catch (error) {
      throw connectionError(error, controller.signal, request.url, "connect");
    } finally {
      clearTimeout(headersTimer);
    }
    if (!isResponse(response)) {
      // Not retried: a user-supplied fetch that answers with something else will do so again.
      throw new ProtocolError(
        `The fetch function given to the provider resolved with ${describeValue(response)} instead of a Response (with a web ReadableStream body): give a fetch with the signature of globalThis.fetch.`,
      );
    }
    if (!response.ok || !response.body) {
      // The error body is read under the idle watchdog and a size cap: a stalled one cannot hang the run.
      armIdle();
      const text = await readCapped(response, 64 * 1024).catch(() => "");
      throw request.readError(response.status, Object.fromEntries(response.headers), text);
    }
    const contentType = response.headers.get("content-type") ?? "";
    if (!contentType.includes("text/event-stream")) {
      armIdle();
      const text = await readCapped(response, 2_000).catch(() => "");
      throw new ProtocolError(
        `The model API answered ${response.status} with ${contentType || "no content type"} instead of an event stream; it may not support streaming at this URL: ${text.slice(0, 200)}`,
      );
    }

    const decoder = request.createDecoder();
    const pending: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (event) => pending.push(event) });
    armIdle();
    const reader = response.body.getReader();
    const text = new TextDecoder();
    while (true) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        throw connectionError(error, controller.signal, request.url, "read");
      }
      parser.feed(chunk.done ? text.decode() : text.decode(chunk.value, { stream: true }));
      // The events of this read, in order, up to the stop event. A decoder failure ends the
      // attempt after the events before it, as if they had been passed on one by one.
      const batch: ModelStreamEvent[] = [];
      let live = false;
      let stopAt = -1;
      let failure: { error: unknown } | undefined;
      try {
        for (const event of pending) {
          if (!live && !decoder.isKeepAlive?.(event)) live = true;
          const before = batch.length;
          for (const out of decoder.push(event)) batch.push(out);
          if (decoder.isComplete?.()) {
            stopAt = before;
            break;
          }
        }
      } catch (error) {
        failure = { error };
      }
      pending.length = 0;
      // Once per read, not per event: the events of one read arrived at the same moment.
      if (live) armIdle();
      if (stopAt >= 0 && !chunk.done) {
        // The stop event ends the turn: a connection the server leaves open must not fail it.
        // Reading the body's end first (briefly) lets the connection be reused, not torn down.
        if (stopAt > 0) yield batch.slice(0, stopAt);
        bodyDone = await drainBriefly(reader);
        if (batch.length > stopAt) yield batch.slice(stopAt);
      } else if (batch.length) yield batch;
      if (failure) throw failure.error;
      if (chunk.done) bodyDone = true;
      if (chunk.done || stopAt >= 0) break;
    }
    const tail = decoder.end();
    if (tail.length) yield tail;
  } finally {
    clearTimeout(deadline);
    clearTimeout(headersTimer);
    clearTimeout(idleTimer);
    signal.removeEventListener("abort", forwardAbort);
    // Closes the connection if the body was not read to the end (abort, error, early return).
    if (!bodyDone) controller.abort();
  }
}

/** What the code below reads of a Response: a user's fetch may return anything. */
function isResponse(value: unknown): value is Response {
  const response = value as Response | null;
  return (
    typeof response === "object" &&
    response !== null &&
    typeof response.ok === "boolean" &&
    typeof response.status === "number" &&
    typeof response.headers?.get === "function" &&
    (response.body === null || typeof response.body?.getReader === "function")
  );
}

/** What a failed fetch or read means: our own timeout, the caller's abort, or a broken connection. */
function connectionError(
  error: unknown,
  signal: AbortSignal,
  url: string,
  phase: "connect" | "read",
): unknown {
  if (signal.aborted && signal.reason instanceof APITimeoutError) return signal.reason;
  if (signal.aborted) return signal.reason ?? error;
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  const detail = cause?.code ?? cause?.message ?? describeThrown(error).message;
  if (/redirect/i.test(detail)) {
    // Not retried: the same request gets the same redirect.
    return new ProtocolError(
      `The model API at ${new URL(url).origin} answered with a redirect, which skein does not follow (it could carry the key to another host). Set the base URL to where it redirects.`,
      { cause: error },
    );
  }
  const origin = new URL(url).origin;
  const message =
    phase === "connect"
      ? `Could not reach the model API at ${origin} (${detail}).`
      : `The connection to the model API at ${origin} broke while the reply was streaming (${detail}).`;
  return new APIConnectionError(message, { cause: error });
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

/** The body as text, at most `limit` bytes (an error page can be large, and the model needs only its start). */
async function readCapped(response: Response, limit: number): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    // Timed out or cut: what arrived is still worth showing.
  }
  await reader.cancel().catch(() => {});
  return new TextDecoder().decode(Buffer.concat(chunks).subarray(0, limit));
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

/** Reads what is left of a body for at most 50 ms; true when it ended (the connection can be reused). */
async function drainBriefly(reader: { read(): Promise<{ done: boolean }> }): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), 50);
  });
  try {
    while (true) {
      const step = await Promise.race([reader.read(), timeout]);
      if (step === "timeout") return false;
      if (step.done) return true;
    }
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
