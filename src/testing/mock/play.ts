import type { ServerResponse } from "node:http";
import type { SseEvent, TurnPlan, Wire } from "./plan.ts";
import type { MockTurn, StreamPosition } from "./types.ts";

/**
 * Writes one answer with the turn's faults. Every wait is cut short by `signal`, which fires
 * when the client goes away or the server closes; after that nothing more is written.
 */
export interface Playback {
  response: ServerResponse;
  turn: MockTurn;
  headers: Record<string, string>;
  signal: AbortSignal;
}

/** Resolves after `ms`, or at once when `signal` fires; `Infinity` waits for the signal only. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
    signal.addEventListener("abort", done, { once: true });
  });
}

/** A non-streamed answer: `body` in full, or the first half of it before a cut or a stall. */
export async function playBody(
  playback: Playback,
  answer: { status: number; body: string; contentType: string },
): Promise<void> {
  const { response, turn, signal } = playback;
  const bytes = Buffer.from(answer.body);
  response.writeHead(answer.status, {
    "content-type": answer.contentType,
    "content-length": String(bytes.length),
    ...playback.headers,
  });
  if (turn.cutAfter === undefined && turn.stallAfter === undefined) {
    response.end(bytes);
    return;
  }
  await write(response, bytes.subarray(0, Math.floor(bytes.length / 2)));
  if (turn.cutAfter !== undefined) await reset(response, signal);
  else await sleep(Number.POSITIVE_INFINITY, signal);
}

/** A streamed answer: the events in order, with the turn's stream faults at their positions. */
export async function playStream(
  playback: Playback,
  plan: TurnPlan,
  events: readonly SseEvent[],
  wire: Wire,
): Promise<void> {
  const { response, turn, signal } = playback;
  response.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    ...playback.headers,
  });
  response.flushHeaders();
  const writer = new SseWriter(playback, wire);
  const total = events.length;
  const errorEvent =
    typeof turn.errorEvent === "number" ? { after: turn.errorEvent } : turn.errorEvent;
  const malformed = typeof turn.malformed === "number" ? { after: turn.malformed } : turn.malformed;
  const errorAt = positionOf(errorEvent?.after, total);
  const malformedAt = positionOf(malformed?.after, total);
  const cutAt = positionOf(turn.cutAfter, total);
  const endAt = positionOf(turn.endAfter, total);
  const stallAt = positionOf(turn.stallAfter, total);
  const trickle = turn.trickleMs === undefined ? undefined : wire.trickle(plan, events);
  for (let index = 0; index <= total; index += 1) {
    if (signal.aborted) return;
    if (index === malformedAt && malformed) await writer.event(wire.malformed(malformed.data));
    if (index === errorAt && errorEvent) {
      await writer.event(wire.errorEvent(errorEvent));
      break;
    }
    if (index === cutAt) return reset(response, signal);
    if (index === stallAt) return writer.idle(Number.POSITIVE_INFINITY);
    if (index === trickle?.at) return writer.trickle(trickle.event, turn.trickleMs!);
    if (index === endAt || index === total) break;
    await writer.event(events[index]!);
  }
  if (!signal.aborted) response.end();
}

function positionOf(position: StreamPosition | undefined, total: number): number | undefined {
  if (position === undefined) return undefined;
  return position < 0 ? Math.max(0, total + position) : Math.min(position, total);
}

/** SSE framing, line endings, piecewise writes, gaps and keep-alives. */
class SseWriter {
  private sent = 0;
  private readonly lineEnd: string;
  private readonly keepAlive: { everyMs: number; kind: "comment" | "ping" } | undefined;

  constructor(
    private readonly playback: Playback,
    private readonly wire: Wire,
  ) {
    const { keepAlive, crlf } = playback.turn;
    this.lineEnd = crlf ? "\r\n" : "\n";
    this.keepAlive =
      typeof keepAlive === "number"
        ? { everyMs: keepAlive, kind: "comment" }
        : keepAlive && { everyMs: keepAlive.everyMs, kind: keepAlive.kind ?? "comment" };
  }

  /** Sends one counted event, after the turn's gap if it is not the first. */
  async event(event: SseEvent): Promise<void> {
    const gapMs = this.playback.turn.gapMs ?? 0;
    if (this.sent > 0 && gapMs > 0) await this.idle(gapMs);
    if (this.playback.signal.aborted) return;
    this.sent += 1;
    await this.raw(this.frame(event));
  }

  /** Waits `ms` with nothing but keep-alives, if the turn asks for them. */
  async idle(ms: number): Promise<void> {
    const { signal } = this.playback;
    if (!this.keepAlive) return sleep(ms, signal);
    const until = Date.now() + ms;
    while (!signal.aborted && Date.now() < until) {
      await sleep(Math.min(this.keepAlive.everyMs, until - Date.now()), signal);
      if (signal.aborted || Date.now() >= until) return;
      const ping = this.keepAlive.kind === "ping" ? this.wire.ping() : undefined;
      await this.raw(ping ? this.frame(ping) : `: keep-alive${this.lineEnd}${this.lineEnd}`);
    }
  }

  /** Sends `event` every `everyMs`, forever (until the client goes or the server closes). */
  async trickle(event: SseEvent, everyMs: number): Promise<void> {
    const { signal } = this.playback;
    while (!signal.aborted) {
      await sleep(everyMs, signal);
      if (signal.aborted) return;
      await this.raw(this.frame(event));
    }
  }

  private frame(event: SseEvent): string {
    const name = event.event === undefined ? "" : `event: ${event.event}${this.lineEnd}`;
    return `${name}data: ${event.data}${this.lineEnd}${this.lineEnd}`;
  }

  /** Writes text, in pieces of `chunkBytes` (each its own write, a tick apart) when asked. */
  private async raw(text: string): Promise<void> {
    const { response, turn, signal } = this.playback;
    const bytes = Buffer.from(text);
    const size = turn.chunkBytes ?? bytes.length;
    for (let start = 0; start < bytes.length; start += size) {
      if (signal.aborted) return;
      if (start > 0) await new Promise((resolve) => setImmediate(resolve));
      await write(response, bytes.subarray(start, start + size));
    }
  }
}

function write(response: ServerResponse, bytes: Uint8Array): Promise<void> {
  return new Promise((resolve) => {
    if (response.destroyed || bytes.length === 0) return resolve();
    response.write(bytes, () => resolve());
  });
}

/**
 * Resets the TCP connection. It waits a moment first: a reset discards what the peer has not
 * read yet, and the bytes sent before the cut must reach the client, as they would in real life.
 */
async function reset(response: ServerResponse, signal: AbortSignal): Promise<void> {
  await sleep(CUT_GRACE_MS, signal);
  response.socket?.resetAndDestroy();
}

const CUT_GRACE_MS = 20;
