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
 * call after it, until `close()` says the batch is complete. Once `aborted()` says so, nothing new
 * starts, and `close()` settles when the calls already running have (each call's end is when the
 * pool looks again: with none running, every queued call has started or the batch was aborted, so
 * the pool needs no abort listener).
 *
 * `run` must not reject (the call layer turns every failure into a result).
 */
export class Scheduler<T extends Schedulable> {
  readonly #maxConcurrency: number;
  readonly #aborted: () => boolean;
  readonly #run: (item: T) => Promise<void>;
  readonly #queue: { item: T; held: boolean }[] = [];
  readonly #heldKeys = new Map<string, number>();
  #running = 0;
  /** An exclusive call is running: nothing else may start. */
  #exclusiveRunning = false;
  #settle: ((neverStarted: T[]) => void) | undefined;

  constructor(options: {
    maxConcurrency: number;
    aborted: () => boolean;
    run: (item: T) => Promise<void>;
  }) {
    this.#maxConcurrency = options.maxConcurrency;
    this.#aborted = options.aborted;
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
    if (!this.#aborted() && !this.#exclusiveRunning) {
      // Keys wanted by an earlier call that could not start yet: later calls must not jump it.
      let reserved: Set<string> | undefined;
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
        if (item.keys.length > 0 && this.#waitsForKeys(item.keys, reserved)) {
          reserved ??= new Set();
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

  #waitsForKeys(keys: readonly string[], reserved: Set<string> | undefined): boolean {
    for (const key of keys) if (this.#heldKeys.has(key) || reserved?.has(key)) return true;
    return false;
  }

  #finish(): void {
    if (!this.#settle || this.#running > 0) return;
    if (this.#queue.length > 0 && !this.#aborted()) return;
    const settle = this.#settle;
    this.#settle = undefined;
    settle(this.#queue.map((entry) => entry.item));
  }
}
