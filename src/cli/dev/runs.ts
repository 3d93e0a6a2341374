// `skein dev`: the runs this inspector resumed and drives: their live events (for the page), their
// steering, the durations it measured (the log holds no times), and how each ended.

import type { AgentEvent, AgentRun } from "../../index.ts";
import type { SessionView } from "../../sessions/session-view.ts";
import { messageOf } from "./http.ts";
import type { Timings } from "./timeline.ts";

/** What the live stream sends about a run this process drives. */
export type LiveEvent =
  | { type: "text"; text: string }
  | { type: "tool_start"; callId: string; name: string; parentCallId?: string }
  | { type: "tool_end"; callId: string; name: string; isError: boolean; durationMs: number }
  | { type: "end"; subtype: string }
  | { type: "error"; message: string };

/** A run this process resumed and still drives. */
export interface ActiveRun {
  stream: AgentRun;
  listeners: Set<(event: LiveEvent) => void>;
}

interface Measured {
  /** The session's last seq when the run started: its replies come after. */
  startSeq: number;
  /** Model calls' durations, in order. */
  replies: number[];
  calls: Map<string, number>;
}

export class LiveRuns {
  readonly #active = new Map<string, ActiveRun>();
  /** Sessions a run is being started for: a second click must not resume twice. */
  readonly #starting = new Set<string>();
  readonly #measured = new Map<string, Measured>();
  readonly #errors = new Map<string, string>();
  readonly #driving = new Set<Promise<void>>();
  readonly #controller = new AbortController();

  /** Aborted when the inspector stops: the runs it drives stop at their next safe point. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get(sessionId: string): ActiveRun | undefined {
    return this.#active.get(sessionId);
  }

  busy(sessionId: string): boolean {
    return this.#active.has(sessionId) || this.#starting.has(sessionId);
  }

  /** Why the last run this inspector drove in the session failed, if it did. */
  error(sessionId: string): string | undefined {
    return this.#errors.get(sessionId);
  }

  /** Holds the session while `start` checks and opens its run; none else starts meanwhile. */
  async starting<T>(sessionId: string, start: () => Promise<T>): Promise<T> {
    if (this.busy(sessionId)) throw new Busy();
    this.#starting.add(sessionId);
    try {
      return await start();
    } finally {
      this.#starting.delete(sessionId);
    }
  }

  /**
   * Drives `stream` in the background. Waits for its first event first: a run that cannot
   * start (a seal that does not match, say) rejects here, and nothing is left running.
   */
  async drive(sessionId: string, startSeq: number, stream: AgentRun): Promise<void> {
    const iterator = stream[Symbol.asyncIterator]();
    const measured: Measured = { startSeq, replies: [], calls: new Map() };
    this.#errors.delete(sessionId);
    const first = await iterator.next();
    this.#measured.set(sessionId, measured);
    const run: ActiveRun = { stream, listeners: new Set() };
    this.#active.set(sessionId, run);
    const driving = this.#follow(sessionId, run, measured, first, iterator).finally(() => {
      this.#active.delete(sessionId);
      this.#driving.delete(driving);
    });
    this.#driving.add(driving);
  }

  async #follow(
    sessionId: string,
    run: ActiveRun,
    measured: Measured,
    first: IteratorResult<AgentEvent>,
    iterator: AsyncIterator<AgentEvent>,
  ): Promise<void> {
    const emit = (event: LiveEvent) => {
      for (const listener of run.listeners) listener(event);
    };
    let turnStarted = Date.now();
    try {
      for (let next = first; !next.done; next = await iterator.next()) {
        const event = next.value;
        const parentCallId =
          "parentCallId" in event && typeof event.parentCallId === "string"
            ? event.parentCallId
            : undefined;
        switch (event.type) {
          case "turn_start":
            if (parentCallId === undefined) turnStarted = Date.now();
            break;
          case "message":
            if (parentCallId === undefined && event.message.role === "assistant")
              measured.replies.push(Date.now() - turnStarted);
            break;
          case "text_delta":
            if (parentCallId === undefined) emit({ type: "text", text: event.text });
            break;
          case "tool_start":
            emit({
              type: "tool_start",
              callId: event.callId,
              name: event.name,
              ...(parentCallId !== undefined ? { parentCallId } : {}),
            });
            break;
          case "tool_end":
            measured.calls.set(event.callId, event.durationMs);
            emit({
              type: "tool_end",
              callId: event.callId,
              name: event.name,
              isError: event.isError,
              durationMs: event.durationMs,
            });
            break;
          case "result":
            if (event.isError && event.error) this.#errors.set(sessionId, event.error.message);
            emit({ type: "end", subtype: event.subtype });
            break;
        }
      }
    } catch (error) {
      this.#errors.set(sessionId, messageOf(error));
      emit({ type: "error", message: messageOf(error) });
    }
  }

  /** The durations measured for the runs this process drove, by reply seq and call id. */
  timings(sessionId: string, view: SessionView): Timings | undefined {
    const taken = this.#measured.get(sessionId);
    if (!taken) return undefined;
    const replies = new Map<number, number>();
    let index = 0;
    for (const { seq, entry } of view.entries) {
      if (seq <= taken.startSeq) continue;
      if (entry.type !== "reply" && entry.type !== "results_reply" && entry.type !== "partial")
        continue;
      const duration = taken.replies[index++];
      if (duration !== undefined) replies.set(seq, duration);
    }
    return { replies, calls: taken.calls };
  }

  /** Stops the runs (at their next safe point) and waits for them. */
  async close(): Promise<void> {
    this.#controller.abort();
    await Promise.allSettled([...this.#driving]);
  }
}

/** A run of the session is in progress (or starting) in this inspector. */
export class Busy extends Error {}
