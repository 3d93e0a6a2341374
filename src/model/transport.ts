import { createParser, type EventSourceMessage } from "eventsource-parser";
import {
  APIConnectionError,
  APIError,
  APITimeoutError,
  apiErrorFor,
  describeThrown,
  InternalServerError,
  ModelError,
  OverloadedError,
  ProtocolError,
  RateLimitError,
} from "../errors.ts";
import type { ModelStreamEvent } from "./model.ts";

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
 */
export async function* streamWithRetries(request: StreamRequest): AsyncGenerator<ModelStreamEvent> {
  // Aborted before anything was sent: no request at all.
  request.signal.throwIfAborted();
  for (let attempt = 1; ; attempt++) {
    let passedOn = false;
    try {
      for await (const event of streamOnce(request)) {
        if (
          event.type === "text_delta" ||
          event.type === "thinking_delta" ||
          event.type === "tool_call"
        )
          passedOn = true;
        yield event;
      }
      return;
    } catch (error) {
      if (request.signal.aborted) throw request.signal.reason ?? error;
      if (error instanceof ModelError) error.attempts = attempt;
      if (passedOn || attempt > request.transport.maxRetries || !shouldRetry(error)) throw error;
      const delayMs = retryDelay(error, attempt, request.transport.maxRetryDelayMs);
      const info = describeThrown(error);
      const status = error instanceof ModelError ? error.status : undefined;
      yield {
        type: "retry",
        attempt,
        delayMs,
        error: status === undefined ? info : { ...info, status },
      };
      await sleep(delayMs, request.signal);
    }
  }
}

async function* streamOnce(request: StreamRequest): AsyncGenerator<ModelStreamEvent> {
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
      response = await fetch(request.url, {
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
    const headers = Object.fromEntries(response.headers);
    if (!response.ok || !response.body) {
      // The error body is read under the idle watchdog and a size cap: a stalled one cannot hang the run.
      armIdle();
      const text = await readCapped(response, 64 * 1024).catch(() => "");
      throw request.readError(response.status, headers, text);
    }
    if (!(headers["content-type"] ?? "").includes("text/event-stream")) {
      armIdle();
      const text = await readCapped(response, 2_000).catch(() => "");
      throw new ProtocolError(
        `The model API answered ${response.status} with ${headers["content-type"] || "no content type"} instead of an event stream; it may not support streaming at this URL: ${text.slice(0, 200)}`,
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
      for (const event of pending.splice(0)) {
        if (!decoder.isKeepAlive?.(event)) armIdle();
        const events = decoder.push(event);
        if (decoder.isComplete?.()) {
          // The stop event ends the turn: a connection the server leaves open must not fail it.
          // Reading the body's end first (briefly) lets the connection be reused, not torn down.
          if (!chunk.done) bodyDone = await drainBriefly(reader);
          yield* events;
          break;
        }
        yield* events;
      }
      if (chunk.done) bodyDone = true;
      if (chunk.done || decoder.isComplete?.()) break;
    }
    yield* decoder.end();
  } finally {
    clearTimeout(deadline);
    clearTimeout(headersTimer);
    clearTimeout(idleTimer);
    signal.removeEventListener("abort", forwardAbort);
    // Closes the connection if the body was not read to the end (abort, error, early return).
    if (!bodyDone) controller.abort();
  }
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

/** RELIABILITY contract 2: connection errors, 408, 409, 429, 5xx and overloaded errors are retried; `x-should-retry` decides first. */
export function shouldRetry(error: unknown): boolean {
  if (error instanceof APIConnectionError) return true;
  if (!(error instanceof APIError)) return false;
  const header = error.headers["x-should-retry"];
  if (header === "true") return true;
  if (header === "false") return false;
  // These are only made for retryable answers, with or without a status (an error event inside a stream has none).
  if (
    error instanceof OverloadedError ||
    error instanceof RateLimitError ||
    error instanceof InternalServerError
  )
    return true;
  const status = error.status;
  return (
    status === 408 || status === 409 || status === 429 || (status !== undefined && status >= 500)
  );
}

/** `retry-after-ms`, then `retry-after` (seconds or an HTTP date), within the cap; else exponential backoff with jitter. */
export function retryDelay(error: unknown, attempt: number, maxRetryDelayMs: number): number {
  const headers = error instanceof APIError ? error.headers : {};
  const fromHeaders = parseRetryAfter(headers["retry-after-ms"], headers["retry-after"]);
  if (fromHeaders !== undefined && fromHeaders >= 0 && fromHeaders <= maxRetryDelayMs)
    return fromHeaders;
  const base = Math.min(500 * 2 ** (attempt - 1), 8_000);
  return Math.round(base * (1 - Math.random() * 0.25));
}

function parseRetryAfter(
  milliseconds: string | undefined,
  seconds: string | undefined,
): number | undefined {
  if (milliseconds !== undefined && Number.isFinite(Number.parseFloat(milliseconds)))
    return Number.parseFloat(milliseconds);
  if (seconds === undefined) return undefined;
  const asNumber = Number.parseFloat(seconds);
  if (Number.isFinite(asNumber)) return asNumber * 1000;
  const date = Date.parse(seconds);
  return Number.isFinite(date) ? date - Date.now() : undefined;
}

function sleep(milliseconds: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, milliseconds);
    signal.addEventListener("abort", onAbort, { once: true });
  });
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
