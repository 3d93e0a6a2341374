// A run's events on their way to the board: batched (a streamed reply is many small events),
// written in order, one write at a time, kept and retried when a write fails.

import type { Board } from "./board.ts";

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

  /** Writes what is left; rejects when it cannot. */
  async close(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#writing;
    if (this.#buffer.length > 0) await this.#write();
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
