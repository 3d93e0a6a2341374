/** What the scheduler needs to know of a call. */
export interface Schedulable {
  /** Runs alone: everything before it has finished, nothing after it starts until it has. */
  exclusive: boolean;
  /** Calls sharing a key never overlap; among them, call order decides who goes first. */
  keys: readonly string[];
}

/**
 * A pool that starts calls in call order, at most `maxConcurrency` at once. Calls may join while
 * the model is still streaming (eager execution); a call added as `held` waits, and blocks every
 * call after it, until `close()` says the batch is complete. After the signal aborts, nothing new
 * starts.
 *
 * `run` must not reject (the call layer turns every failure into a result).
 */
export class Scheduler<T extends Schedulable> {
  readonly #maxConcurrency: number;
  readonly #signal: AbortSignal;
  readonly #run: (item: T) => Promise<void>;
  readonly #queue: { item: T; held: boolean }[] = [];
  readonly #heldKeys = new Map<string, number>();
  #running = 0;
  /** An exclusive call is running: nothing else may start. */
  #exclusiveRunning = false;
  #settle: ((neverStarted: T[]) => void) | undefined;

  constructor(options: {
    maxConcurrency: number;
    signal: AbortSignal;
    run: (item: T) => Promise<void>;
  }) {
    this.#maxConcurrency = options.maxConcurrency;
    this.#signal = options.signal;
    this.#run = options.run;
  }

  add(item: T, options: { held?: boolean } = {}): void {
    this.#queue.push({ item, held: options.held === true });
    this.#pump();
  }

  /** No more calls: held ones may start. Resolves once every started call has settled, with those that never started. */
  close(): Promise<T[]> {
    for (const entry of this.#queue) entry.held = false;
    const settled = new Promise<T[]>((resolve) => {
      this.#settle = resolve;
    });
    this.#signal.addEventListener("abort", this.#finish, { once: true });
    this.#pump();
    return settled;
  }

  #start(item: T): void {
    this.#running++;
    if (item.exclusive) this.#exclusiveRunning = true;
    for (const key of item.keys) this.#heldKeys.set(key, (this.#heldKeys.get(key) ?? 0) + 1);
    this.#run(item).then(() => {
      this.#running--;
      if (item.exclusive) this.#exclusiveRunning = false;
      for (const key of item.keys) {
        const count = this.#heldKeys.get(key)! - 1;
        if (count === 0) this.#heldKeys.delete(key);
        else this.#heldKeys.set(key, count);
      }
      this.#pump();
    });
  }

  #pump(): void {
    if (!this.#signal.aborted && !this.#exclusiveRunning) {
      // Keys wanted by an earlier call that could not start yet: later calls must not jump it.
      const reserved = new Set<string>();
      for (let index = 0; index < this.#queue.length && this.#running < this.#maxConcurrency; ) {
        const { item, held } = this.#queue[index]!;
        if (held) break;
        if (item.exclusive) {
          if (index === 0 && this.#running === 0) {
            this.#queue.shift();
            this.#start(item);
          }
          break;
        }
        if (item.keys.some((key) => this.#heldKeys.has(key) || reserved.has(key))) {
          for (const key of item.keys) reserved.add(key);
          index++;
          continue;
        }
        this.#queue.splice(index, 1);
        this.#start(item);
      }
    }
    this.#finish();
  }

  #finish = (): void => {
    if (!this.#settle || this.#running > 0) return;
    if (this.#queue.length > 0 && !this.#signal.aborted) return;
    const settle = this.#settle;
    this.#settle = undefined;
    this.#signal.removeEventListener("abort", this.#finish);
    settle(this.#queue.map((entry) => entry.item));
  };
}
