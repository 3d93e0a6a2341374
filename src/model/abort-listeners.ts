/**
 * Abort listeners that come and go often on one long-lived signal (a run's: one per model call
 * attempt, one per batch that hands out its signal). Each signal gets one listener of its own on
 * first use; adding and removing a listener here is a set operation, not an EventTarget one, which
 * costs about ten times as much in Node.
 *
 * Listeners run once, in the order they were added, when the signal aborts. One added while the
 * signal is aborted (or while its listeners run) is never called, as with `addEventListener`. A
 * listener that throws does not keep the others from running; its error is thrown afterwards, out
 * of the abort, as an EventTarget listener's error is.
 */

const listeners = new WeakMap<AbortSignal, Set<() => void>>();

export function addAbortListener(signal: AbortSignal, listener: () => void): void {
  if (signal.aborted) return;
  let set = listeners.get(signal);
  if (!set) {
    const created = new Set<() => void>();
    set = created;
    listeners.set(signal, created);
    signal.addEventListener("abort", () => runListeners(signal, created), { once: true });
  }
  set.add(listener);
}

export function removeAbortListener(signal: AbortSignal, listener: () => void): void {
  listeners.get(signal)?.delete(listener);
}

function runListeners(signal: AbortSignal, set: Set<() => void>): void {
  // Live: a listener that removes another, not yet run, keeps it from running.
  for (const listener of set) {
    set.delete(listener);
    try {
      listener();
    } catch (error) {
      queueMicrotask(() => {
        throw error;
      });
    }
  }
  listeners.delete(signal);
}
