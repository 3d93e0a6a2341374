/** What the scheduler needs to know of a call. */
export interface Schedulable {
  /** Runs alone: everything before it has finished, nothing after it starts until it has. */
  exclusive: boolean;
  /** Calls sharing a key never overlap; among them, call order decides who goes first. */
  keys: readonly string[];
}

/**
 * Runs `items` with at most `maxConcurrency` at once, starting them in call order. Resolves once
 * every started item has settled. After `signal` aborts, nothing new starts; the items that never
 * started are returned so the caller can answer them.
 *
 * `run` must not reject (the call layer turns every failure into a result).
 */
export function schedule<T extends Schedulable>(options: {
  items: readonly T[];
  maxConcurrency: number;
  signal: AbortSignal;
  run: (item: T) => Promise<void>;
}): Promise<T[]> {
  const { items, maxConcurrency, signal, run } = options;
  const queue = items.slice();
  const heldKeys = new Map<string, number>();
  let running = 0;

  return new Promise((resolve) => {
    let finished = false;
    const finish = () => {
      if (finished || running > 0) return;
      if (queue.length > 0 && !signal.aborted) return;
      finished = true;
      signal.removeEventListener("abort", finish);
      resolve(queue);
    };

    const start = (item: T) => {
      running++;
      for (const key of item.keys) heldKeys.set(key, (heldKeys.get(key) ?? 0) + 1);
      run(item).then(() => {
        running--;
        for (const key of item.keys) {
          const count = heldKeys.get(key)! - 1;
          if (count === 0) heldKeys.delete(key);
          else heldKeys.set(key, count);
        }
        pump();
      });
    };

    const pump = () => {
      if (!signal.aborted) {
        // Keys wanted by an earlier call that could not start yet: later calls must not jump it.
        const reserved = new Set<string>();
        for (let index = 0; index < queue.length && running < maxConcurrency; ) {
          const item = queue[index]!;
          if (item.exclusive) {
            if (index === 0 && running === 0) {
              queue.shift();
              start(item);
            }
            break;
          }
          if (item.keys.some((key) => heldKeys.has(key) || reserved.has(key))) {
            for (const key of item.keys) reserved.add(key);
            index++;
            continue;
          }
          queue.splice(index, 1);
          start(item);
        }
      }
      finish();
    };

    signal.addEventListener("abort", finish, { once: true });
    pump();
  });
}
