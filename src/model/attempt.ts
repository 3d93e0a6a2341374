import { createParser, type EventSourceMessage, type EventSourceParser } from "eventsource-parser";
import { APIConnectionError, APITimeoutError, describeThrown, ProtocolError } from "../errors.ts";
import { describeValue } from "../options.ts";
import type { ModelStreamEvent } from "./model.ts";
import type { StreamDecoder, StreamRequest } from "./transport.ts";

/** After the stop event, the body's end is waited for this long (then the connection is closed). */
const DRAIN_MS = 50;
let drainMs = DRAIN_MS;

/** Test seam: the wait for the body's end after the stop event (`undefined` restores 50 ms). */
export function setDrainWindowForTesting(milliseconds: number | undefined): void {
  drainMs = milliseconds ?? DRAIN_MS;
}

/**
 * One HTTP attempt of a model call: the request, its response's event stream read a network read
 * at a time, and its time limits (RELIABILITY contract 5): until the headers (`timeoutMs`),
 * between events (`idleTimeoutMs`; comments and pings do not count) and for the whole attempt
 * (`totalTimeoutMs`, since a trickle of events keeps the idle limit quiet). A limit that passes
 * aborts the request with an `APITimeoutError`, which the read then throws.
 *
 * Cheap per call, since a busy process runs hundreds at once: one timer watches all three limits
 * (it fires at the earliest one that could have passed, and re-arms when none has), an event
 * only notes the time, and the body's end after the stop event is read without a timer when it
 * is already there, as it nearly always is.
 */
export class Attempt {
  readonly #request: StreamRequest;
  readonly #controller = new AbortController();
  readonly #forwardAbort: () => void;
  readonly #startedAt = performance.now();
  #watchdog: NodeJS.Timeout;
  /** When the watchdog fires, in `performance.now()` time. */
  #dueAt: number;
  /** When the last event that counts arrived (the headers first); undefined until the headers. */
  #lastEventAt: number | undefined;
  #reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  #decoder: StreamDecoder | undefined;
  #parser: EventSourceParser | undefined;
  readonly #text = new TextDecoder();
  readonly #pending: EventSourceMessage[] = [];
  #bodyDone = false;
  /** Rejects when the attempt is aborted (set once the body is being read). */
  #abortedRead: Promise<never> | undefined;
  #finished = false;
  #closed = false;
  /** A failure met after some events of a read: those go first, the failure with the next read. */
  #failure: { error: unknown } | undefined;

  constructor(request: StreamRequest) {
    this.#request = request;
    const { signal, transport } = request;
    const controller = this.#controller;
    this.#forwardAbort = () => controller.abort(signal.reason);
    signal.addEventListener("abort", this.#forwardAbort, { once: true });
    const first = Math.min(transport.timeoutMs, transport.totalTimeoutMs);
    this.#dueAt = this.#startedAt + first;
    this.#watchdog = setTimeout(checkWatchdog, first, this);
  }

  /** Sends the request; resolves once an event stream answered, throws the typed error otherwise. */
  async open(): Promise<void> {
    const request = this.#request;
    const signal = this.#controller.signal;
    let response: Response;
    try {
      const send = request.transport.fetch ?? fetch;
      response = await send(request.url, {
        method: "POST",
        headers: request.headers,
        body: JSON.stringify(request.body),
        signal,
        // A redirect could carry the key to another host: refuse it.
        redirect: "error",
      });
    } catch (error) {
      throw connectionError(error, signal, request.url, "connect");
    }
    // From here on the idle limit applies, to an error body as to the event stream.
    this.#noteEvent(true);
    if (!isResponse(response)) {
      // Not retried: a user-supplied fetch that answers with something else will do so again.
      throw new ProtocolError(
        `The fetch function given to the provider resolved with ${describeValue(response)} instead of a Response (with a web ReadableStream body): give a fetch with the signature of globalThis.fetch.`,
      );
    }
    if (!response.ok || !response.body) {
      // The error body is read under the idle limit and a size cap: a stalled one cannot hang the run.
      const text = await readCapped(response, 64 * 1024).catch(() => "");
      throw request.readError(response.status, Object.fromEntries(response.headers), text);
    }
    const contentType = response.headers.get("content-type") ?? "";
    if (!contentType.includes("text/event-stream")) {
      const text = await readCapped(response, 2_000).catch(() => "");
      throw new ProtocolError(
        `The model API answered ${response.status} with ${contentType || "no content type"} instead of an event stream; it may not support streaming at this URL: ${text.slice(0, 200)}`,
      );
    }
    this.#decoder = request.createDecoder();
    const pending = this.#pending;
    this.#parser = createParser({ onEvent: (event) => pending.push(event) });
    this.#reader = response.body.getReader();
    // A read waits for the body, or for this attempt's abort (a limit passed, the caller's
    // signal): the abort ends the wait even if the body stream is not errored by it in time.
    this.#abortedRead = new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
    this.#abortedRead.catch(() => {});
  }

  /**
   * The events of the next network read, in order, up to the stop event; the closing events
   * (the final message) come with the read that ended the turn. Undefined once all are out. A
   * decoder failure ends the attempt after the events before it, as if they had been passed on
   * one by one.
   */
  async read(): Promise<ModelStreamEvent[] | undefined> {
    if (this.#failure) throw this.#failure.error;
    if (this.#finished) return undefined;
    const reader = this.#reader!;
    const decoder = this.#decoder!;
    const pending = this.#pending;
    while (true) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await Promise.race([reader.read(), this.#abortedRead!]);
      } catch (error) {
        throw connectionError(error, this.#controller.signal, this.#request.url, "read");
      }
      this.#parser!.feed(
        chunk.done ? this.#text.decode() : this.#text.decode(chunk.value, { stream: true }),
      );
      const batch: ModelStreamEvent[] = [];
      let live = false;
      let stopped = false;
      let before = 0;
      try {
        for (const event of pending) {
          if (!live && !decoder.isKeepAlive?.(event)) live = true;
          before = batch.length;
          decoder.push(event, batch);
          if (decoder.isComplete?.()) {
            stopped = true;
            break;
          }
        }
      } catch (error) {
        // Nothing of the event that failed is passed on.
        batch.length = before;
        this.#failure = { error };
      }
      pending.length = 0;
      // Once per read, not per event: the events of one read arrived at the same moment.
      if (live) this.#noteEvent(false);
      if (!this.#failure && (stopped || chunk.done)) {
        this.#finished = true;
        // The stop event ends the turn: a connection the server leaves open must not fail it.
        // Reading the body's end first (briefly) lets the connection be reused, not torn down.
        if (chunk.done) this.#bodyDone = true;
        else await this.#drain();
        const closing = batch.length;
        try {
          decoder.end(batch);
        } catch (error) {
          batch.length = closing;
          this.#failure = { error };
        }
      }
      if (batch.length) return batch;
      if (this.#failure) throw this.#failure.error;
      if (this.#finished) return undefined;
    }
  }

  /** Ends the attempt: its timer and abort listener go; a body not read to its end is closed. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#watchdog);
    this.#request.signal.removeEventListener("abort", this.#forwardAbort);
    if (!this.#bodyDone) this.#controller.abort();
  }

  /** Called by the watchdog's timer: aborts the request if a limit passed, or re-arms. */
  check(): void {
    const { timeoutMs, idleTimeoutMs, totalTimeoutMs } = this.#request.transport;
    const now = performance.now();
    // Within a millisecond counts as passed: timers keep whole milliseconds.
    const passed = (at: number) => at - now < 1;
    const totalAt = this.#startedAt + totalTimeoutMs;
    const phaseAt =
      this.#lastEventAt === undefined
        ? this.#startedAt + timeoutMs
        : this.#lastEventAt + idleTimeoutMs;
    let message: string | undefined;
    if (passed(totalAt)) {
      message = `The model API's reply did not complete within ${totalTimeoutMs} ms (totalTimeoutMs).`;
    } else if (passed(phaseAt)) {
      message =
        this.#lastEventAt === undefined
          ? `No response from the model API within ${timeoutMs} ms.`
          : `The model API sent nothing for ${idleTimeoutMs} ms.`;
    }
    if (message) this.#controller.abort(new APITimeoutError(message));
    else this.#arm(Math.min(totalAt, phaseAt));
  }

  #arm(at: number): void {
    this.#dueAt = at;
    this.#watchdog = setTimeout(
      checkWatchdog,
      Math.max(1, Math.ceil(at - performance.now())),
      this,
    );
  }

  /** An event that counts (or the headers, `first`): the idle limit starts again from now. */
  #noteEvent(first: boolean): void {
    const now = performance.now();
    this.#lastEventAt = now;
    if (!first) return;
    // The idle limit may be shorter than the wait for headers the timer was set for.
    const idleAt = now + this.#request.transport.idleTimeoutMs;
    if (idleAt < this.#dueAt) {
      clearTimeout(this.#watchdog);
      this.#arm(idleAt);
    }
  }

  /** Reads the body's end after the stop event: at once when it is there, else for up to 50 ms. */
  async #drain(): Promise<void> {
    const reader = this.#reader!;
    try {
      const next = reader.read();
      // A read the stream can answer from what it holds is settled already and wins the race.
      let step = await Promise.race([next, NOT_SETTLED]);
      if (step !== NOT_YET && step.done) {
        this.#bodyDone = true;
        return;
      }
      const timer = setTimeout(abortRequest, drainMs, this.#controller);
      try {
        if (step === NOT_YET) step = await next;
        while (!step.done) step = await reader.read();
        this.#bodyDone = true;
      } finally {
        clearTimeout(timer);
      }
    } catch {
      // Cut or timed out: close() closes the connection.
    }
  }
}

const NOT_YET = Symbol("not yet");
const NOT_SETTLED = Promise.resolve(NOT_YET);

function checkWatchdog(attempt: Attempt): void {
  attempt.check();
}

function abortRequest(controller: AbortController): void {
  controller.abort();
}

/** What the code above reads of a Response: a user's fetch may return anything. */
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
