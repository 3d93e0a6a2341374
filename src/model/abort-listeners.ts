/**
 * Abort listeners that come and go often on one long-lived signal (a run's: one per model call
 * attempt, one per batch that hands out its signal), and the request controller its attempts
 * pass from one to the next. Each signal gets one listener of its own on first use; adding and
 * removing a listener here is a field or set operation, not an EventTarget one (which costs
 * several times as much in Node).
 *
 * Listeners run once when the signal aborts. One added while the signal is aborted (or while
 * its listeners run) is never called, as with `addEventListener`; one removed before its turn
 * is not called. The order among them is not guaranteed. A listener that throws does not keep
 * the others from running; its error is thrown afterwards, out of the abort, as an EventTarget
 * listener's error is.
 */

interface SignalListeners {
  /** Nearly always the only listener: an attempt's, or a batch's. */
  one: (() => void) | undefined;
  more: Set<() => void> | undefined;
  /** A request controller an attempt on this signal gave back, never aborted, and its uses. */
  spare: AbortController | undefined;
  spareUses: number;
}

const records = new WeakMap<AbortSignal, SignalListeners>();

/**
 * How many attempts may share one request controller. Each request leaves a listener of Node's
 * fetch on it until that request is collected: a bound keeps them few.
 */
const CONTROLLER_USES = 8;

function recordOf(signal: AbortSignal): SignalListeners {
  let record = records.get(signal);
  if (!record) {
    const created: SignalListeners = {
      one: undefined,
      more: undefined,
      spare: undefined,
      spareUses: 0,
    };
    record = created;
    records.set(signal, created);
    signal.addEventListener("abort", () => runListeners(signal, created), { once: true });
  }
  return record;
}

export function addAbortListener(signal: AbortSignal, listener: () => void): void {
  if (signal.aborted) return;
  const record = recordOf(signal);
  if (record.one === undefined && record.more === undefined) record.one = listener;
  else {
    record.more ??= new Set();
    record.more.add(listener);
  }
}

export function removeAbortListener(signal: AbortSignal, listener: () => void): void {
  const record = records.get(signal);
  if (!record) return;
  if (record.one === listener) record.one = undefined;
  else record.more?.delete(listener);
}

/**
 * A request controller for an attempt made on `signal`: one an earlier attempt on it gave back
 * (never aborted), else a new one. Creating an AbortController's signal is one of the dearer
 * things a model call does in Node.
 */
export function requestController(signal: AbortSignal): {
  controller: AbortController;
  uses: number;
} {
  const record = signal.aborted ? undefined : records.get(signal);
  const spare = record?.spare;
  if (!record || !spare) return { controller: new AbortController(), uses: 1 };
  record.spare = undefined;
  return { controller: spare, uses: record.spareUses + 1 };
}

/**
 * Gives a request controller back for the next attempt on `signal`: one never aborted (the
 * caller's word: it holds the controller), whose request was read to its end.
 */
export function giveBackController(
  signal: AbortSignal,
  controller: AbortController,
  uses: number,
): void {
  if (uses >= CONTROLLER_USES || signal.aborted) return;
  const record = records.get(signal);
  if (!record || record.spare) return;
  record.spare = controller;
  record.spareUses = uses;
}

function runListeners(signal: AbortSignal, record: SignalListeners): void {
  record.spare = undefined;
  const one = record.one;
  record.one = undefined;
  if (one) call(one);
  const more = record.more;
  // Live: a listener that removes another, not yet run, keeps it from running.
  if (more)
    for (const listener of more) {
      more.delete(listener);
      call(listener);
    }
  records.delete(signal);
}

function call(listener: () => void): void {
  try {
    listener();
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}
