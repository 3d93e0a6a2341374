/** Promises a test controls or inspects. */
import { LIVENESS_MS } from "./liveness.ts";

/** A promise with its resolve and reject at hand: the test decides when something happens. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A promise's rejection (fails the test if it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  const outcome = await promise.then(
    (value) => ({ resolved: true as const, value }),
    (error: unknown) => ({ resolved: false as const, error }),
  );
  if (outcome.resolved) {
    throw new Error(
      `expected a rejection, but it resolved with ${JSON.stringify(outcome.value)?.slice(0, 300)}`,
    );
  }
  return outcome.error as Error;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls until `check` returns a value other than undefined, or throws after `withinMs` (the
 * liveness limit: a busy machine is slow, not broken).
 */
export async function waitFor<T>(
  check: () => T | undefined | Promise<T | undefined>,
  withinMs = LIVENESS_MS,
): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${withinMs} ms`);
    await sleep(25);
  }
}
