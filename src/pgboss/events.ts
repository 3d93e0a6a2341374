// A run's events on their way to the board: batched (a streamed reply is many small events),
// written in order, one write at a time, kept and retried when a write fails. A write may ride
// in a statement the execution sends anyway (an append to its session's log, the run's end):
// then the events cost no round trip of their own.

import type { Board, EventBatch } from "./board.ts";

const BATCH_DELAY_MS = 15;
const BATCH_MAX = 256;

export class EventWriter {
  #buffer: string[] = [];
  #next: number;
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> | undefined;

  constructor(
    private readonly board: Board,
    private readonly runId: string,
    first: number,
    private readonly report: (error: unknown) => void,
  ) {
    this.#next = first;
  }

  push(event: string): void {
    this.#buffer.push(event);
    if (this.#buffer.length >= BATCH_MAX) this.#flushSoon(0);
    else this.#flushSoon(BATCH_DELAY_MS);
  }

  /**
   * The events waiting, for a statement about to be sent (undefined: none, or a write is in
   * flight, which keeps them in order); `settle(true)` once that statement committed them,
   * `settle(false)` when it failed: they are written again, first.
   */
  take(): { batch: EventBatch; settle(written: boolean): void } | undefined {
    if (this.#writing || this.#buffer.length === 0) return undefined;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const list = this.#buffer;
    this.#buffer = [];
    let done!: () => void;
    this.#writing = new Promise<void>((resolve) => {
      done = resolve;
    });
    let settled = false;
    return {
      batch: { first: this.#next, list },
      settle: (written) => {
        if (settled) return;
        settled = true;
        if (written) this.#next += list.length;
        else this.#buffer = [...list, ...this.#buffer];
        this.#writing = undefined;
        done();
        if (this.#buffer.length > 0) this.#flushSoon(BATCH_DELAY_MS);
      },
    };
  }

  /** Writes what is left; rejects when it cannot. */
  async close(): Promise<void> {
    const rest = await this.rest();
    if (rest.list.length === 0) return;
    try {
      await this.board.appendEvents(this.runId, rest.first, rest.list);
    } catch (error) {
      this.#buffer = [...rest.list, ...this.#buffer];
      throw error;
    }
  }

  /**
   * Stops the timer, waits for a write in flight, and hands over what is left (numbered) for the
   * statement that ends the run; nothing is written here.
   */
  async rest(): Promise<EventBatch> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.#writing) await this.#writing;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const list = this.#buffer;
    this.#buffer = [];
    const batch = { first: this.#next, list };
    this.#next += list.length;
    return batch;
  }

  #flushSoon(delayMs: number): void {
    if (this.#timer || this.#writing) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#writing = this.#write()
        .catch(this.report)
        .finally(() => {
          this.#writing = undefined;
          if (this.#buffer.length > 0) this.#flushSoon(BATCH_DELAY_MS);
        });
    }, delayMs);
  }

  async #write(): Promise<void> {
    const batch = this.#buffer;
    this.#buffer = [];
    try {
      await this.board.appendEvents(this.runId, this.#next, batch);
      this.#next += batch.length;
    } catch (error) {
      this.#buffer = [...batch, ...this.#buffer];
      throw error;
    }
  }
}
