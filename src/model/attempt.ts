import { createParser, type EventSourceMessage, type EventSourceParser } from "eventsource-parser";
import { APITimeoutError, ProtocolError } from "../core/errors.ts";
import { describeValue } from "../core/options.ts";
import {
  addAbortListener,
  giveBackController,
  removeAbortListener,
  requestController,
} from "./abort-listeners.ts";
import type { ModelStreamEvent } from "./model.ts";
import { connectionError, isResponse, readCapped } from "./response.ts";
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
  /**
   * The request's controller: handed on from the caller signal's last attempt when that one was
   * read to its end (see `requestController`), so a run's model calls share one.
   */
  readonly #controller: AbortController;
  readonly #controllerUses: number;
  /** The controller's signal, read once (Node's getters for it and its state are not free). */
  readonly #signal: AbortSignal;
  /** Set by `#abort`, the only way the controller is aborted (no one else holds it). */
  #aborted = false;
  readonly #forwardAbort: () => void;
  readonly #startedAt = performance.now();
  #watchdog: NodeJS.Timeout;
  /** When the watchdog fires, in `performance.now()` time. */
  #dueAt: number;
  /** When the last event that counts arrived (the headers first); undefined until the headers. */
  #lastEventAt: number | undefined;
  #reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  /**
   * The body is a web ReadableStream of Node's own (the Response is one): an abort cancels it,
   * which ends a pending read at once, so reads need no race against the abort.
   */
  #webBody = false;
  #decoder: StreamDecoder | undefined;
  #parser: EventSourceParser | undefined;
  readonly #text = new TextDecoder();
  readonly #pending: EventSourceMessage[] = [];
  #bodyDone = false;
  /**
   * Ends the wait in progress (`#waitFor`) with the abort's reason: an abort (a limit passed, the
   * caller's signal, the drain's limit) ends the wait even if the fetch (a user's) or the body
   * stream does not react to the signal in time. Every abort goes through `#abort`, which calls
   * it: no listener on the signal, and no promise per attempt, is needed for it.
   */
  #endWait: ((reason: unknown) => void) | undefined;
  #finished = false;
  #closed = false;
  /** A failure met after some events of a read: those go first, the failure with the next read. */
  #failure: { error: unknown } | undefined;

  constructor(request: StreamRequest) {
    this.#request = request;
    const { signal, transport } = request;
    const { controller, uses } = requestController(signal);
    this.#controller = controller;
    this.#controllerUses = uses;
    this.#signal = controller.signal;
    this.#forwardAbort = () => this.#abort(signal.reason);
    addAbortListener(signal, this.#forwardAbort);
    const first = Math.min(transport.timeoutMs, transport.totalTimeoutMs);
    this.#dueAt = this.#startedAt + first;
    this.#watchdog = setTimeout(checkWatchdog, first, this);
  }

  /** Sends the request; resolves once an event stream answered, throws the typed error otherwise. */
  async open(): Promise<void> {
    const request = this.#request;
    const signal = this.#signal;
    let response: Response;
    try {
      const send = request.transport.fetch ?? fetch;
      const sent = send(request.url, {
        method: "POST",
        headers: request.headers,
        body: JSON.stringify(request.body),
        signal,
        // A redirect could carry the key to another host: refuse it.
        redirect: "error",
      });
      // Node's fetch rejects as soon as the signal aborts; a user's fetch (or a stand-in for the
      // global one) may not, and the abort must still end the wait.
      response = await this.#waitFor(sent);
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
      const text = await readCapped(response, 64 * 1024, this.#waitFor).catch(() => "");
      throw request.readError(response.status, Object.fromEntries(response.headers), text);
    }
    const contentType = response.headers.get("content-type") ?? "";
    if (!contentType.includes("text/event-stream")) {
      const text = await readCapped(response, 2_000, this.#waitFor).catch(() => "");
      throw new ProtocolError(
        `The model API answered ${response.status} with ${contentType || "no content type"} instead of an event stream; it may not support streaming at this URL: ${text.slice(0, 200)}`,
      );
    }
    this.#decoder = request.createDecoder();
    const pending = this.#pending;
    this.#parser = createParser({ onEvent: (event) => pending.push(event) });
    this.#reader = response.body.getReader();
    this.#webBody = response instanceof Response;
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
        chunk = await this.#nextChunk(reader);
        // A read the abort ended (by cancelling the body) reads as the body's end: it is not.
        if (this.#aborted) throw this.#signal.reason;
      } catch (error) {
        throw connectionError(error, this.#signal, this.#request.url, "read");
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

  /**
   * `promise`, or a rejection with the abort's reason as soon as the attempt is aborted (one wait
   * at a time: the request, or a read). An arrow, so that it can be handed on.
   */
  readonly #waitFor = <T>(promise: PromiseLike<T>): Promise<T> => {
    return new Promise<T>((resolve, reject) => {
      // Followed even when the wait is over already: its rejection must not go unhandled.
      promise.then(resolve, reject);
      if (this.#aborted) reject(this.#signal.reason);
      else this.#endWait = reject;
    });
  };

  /** The body's next read: raced against the abort unless an abort cancels the body itself. */
  #nextChunk(reader: ReadableStreamDefaultReader<Uint8Array>) {
    return this.#webBody ? reader.read() : this.#waitFor(reader.read());
  }

  /** Ends the attempt: its timer and abort listener go; a body not read to its end is closed. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#watchdog);
    const { signal } = this.#request;
    removeAbortListener(signal, this.#forwardAbort);
    if (!this.#bodyDone) this.#abort(undefined);
    // A request read to its end leaves the controller unused: the next attempt takes it.
    else if (!this.#aborted) giveBackController(signal, this.#controller, this.#controllerUses);
  }

  /** True once the turn was read to its end without a failure: nothing more can go wrong with it. */
  get settled(): boolean {
    return this.#finished && this.#failure === undefined;
  }

  /** Aborts the request (once; later calls change nothing) and ends a read waiting for the body. */
  #abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    const signal = this.#signal;
    this.#controller.abort(reason);
    this.#endWait?.(signal.reason);
    // Ends a pending read of the body now (it resolves as done), whatever the fetch makes of the
    // abort; the cancel's own outcome does not matter.
    if (this.#webBody) this.#reader!.cancel(signal.reason).catch(() => {});
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
    if (message) this.#abort(new APITimeoutError(message));
    else this.#arm(Math.min(totalAt, phaseAt));
  }

  /** Called by the drain's timer: the body's end did not come in time, the connection is closed. */
  stopDrain(): void {
    this.#abort(undefined);
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
      // A read the stream can answer from what it holds is settled already: noted by the time
      // a tick has passed.
      let settled: BodyRead | undefined;
      next.then(
        (step) => {
          settled = step;
        },
        () => {},
      );
      await undefined;
      if (settled?.done) {
        if (!this.#aborted) this.#bodyDone = true;
        return;
      }
      const timer = setTimeout(abortDrain, drainMs, this);
      try {
        let step = settled ?? (await (this.#webBody ? next : this.#waitFor(next)));
        while (!step.done) step = await this.#nextChunk(reader);
        // A read the abort ended reads as the end: the body was not read to it.
        if (!this.#aborted) this.#bodyDone = true;
      } finally {
        clearTimeout(timer);
      }
    } catch {
      // Cut or timed out: close() closes the connection.
    }
  }
}

type BodyRead = Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>["read"]>>;

function checkWatchdog(attempt: Attempt): void {
  attempt.check();
}

function abortDrain(attempt: Attempt): void {
  attempt.stopDrain();
}
