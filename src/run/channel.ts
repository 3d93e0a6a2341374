/**
 * A single-consumer async queue: producers push from anywhere (the loop, concurrent handlers),
 * the consumer iterates. Ends with `close()` or `fail(error)`, so a `for await` can never hang
 * on a producer that died.
 */
export class EventChannel<T> implements AsyncIterable<T> {
  #buffer: T[] = [];
  #head = 0;
  #waiting: ((result: IteratorResult<T>) => void) | undefined;
  #failWaiting: ((error: unknown) => void) | undefined;
  #done = false;
  #error: { value: unknown } | undefined;

  push(value: T): void {
    if (this.#done) return;
    const waiting = this.#waiting;
    if (waiting) {
      this.#waiting = this.#failWaiting = undefined;
      waiting({ value, done: false });
    } else {
      this.#buffer.push(value);
    }
  }

  close(): void {
    this.#done = true;
    this.#wake();
  }

  fail(error: unknown): void {
    this.#error = { value: error };
    this.#done = true;
    this.#wake();
  }

  #wake(): void {
    if (this.#head < this.#buffer.length) return;
    if (this.#error && this.#failWaiting) this.#failWaiting(this.#error.value);
    else this.#waiting?.({ value: undefined, done: true });
    this.#waiting = this.#failWaiting = undefined;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.#head < this.#buffer.length) {
          const value = this.#buffer[this.#head++] as T;
          if (this.#head > 1024 && this.#head * 2 > this.#buffer.length) {
            this.#buffer = this.#buffer.slice(this.#head);
            this.#head = 0;
          }
          return Promise.resolve({ value, done: false });
        }
        if (this.#error) return Promise.reject(this.#error.value);
        if (this.#done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => {
          this.#waiting = resolve;
          this.#failWaiting = reject;
        });
      },
    };
  }
}
