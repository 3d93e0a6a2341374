import type { AgentEvent, SDKResultMessage } from "skein";
import { type Deferred, deferred } from "../support/promises.ts";

/**
 * Lets every promise chain that can move, move. Used only to show that something has NOT
 * happened (a run still waiting, a handler not started); ordering is driven by deferreds.
 */
export function drain(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Handlers that block until the test releases them, by key. `trace` records `start:<key>` and
 * `end:<key>` in the order they happen; `peak` is the most handlers that were inside at once.
 */
export class Gates {
  readonly trace: string[] = [];
  #started = new Map<string, Deferred<void>>();
  #ended = new Map<string, Deferred<void>>();
  #release = new Map<string, Deferred<void>>();
  #active = new Set<string>();
  #peak = 0;

  #get(map: Map<string, Deferred<void>>, key: string): Deferred<void> {
    let entry = map.get(key);
    if (!entry) {
      entry = deferred();
      map.set(key, entry);
    }
    return entry;
  }

  /** Called by a handler: records its start, waits for the test's release, records its end. */
  async pass(key: string): Promise<void> {
    this.trace.push(`start:${key}`);
    this.#active.add(key);
    this.#peak = Math.max(this.#peak, this.#active.size);
    this.#get(this.#started, key).resolve();
    try {
      await this.#get(this.#release, key).promise;
    } finally {
      this.#active.delete(key);
      this.trace.push(`end:${key}`);
      this.#get(this.#ended, key).resolve();
    }
  }

  started(...keys: string[]): Promise<void> {
    return Promise.all(keys.map((key) => this.#get(this.#started, key).promise)).then(() => {});
  }

  ended(...keys: string[]): Promise<void> {
    return Promise.all(keys.map((key) => this.#get(this.#ended, key).promise)).then(() => {});
  }

  release(...keys: string[]): void {
    for (const key of keys) this.#get(this.#release, key).resolve();
  }

  /** Releases `key` and waits until its handler has finished. */
  async finish(key: string): Promise<void> {
    this.release(key);
    await this.ended(key);
  }

  fail(key: string, error: unknown): void {
    this.#get(this.#release, key).reject(error);
  }

  /** Keys whose handler is inside `pass` right now, in the order they started. */
  running(): string[] {
    return [...this.#active];
  }

  hasStarted(key: string): boolean {
    return this.trace.includes(`start:${key}`);
  }

  get peak(): number {
    return this.#peak;
  }
}

/** Counts how many callers are inside at once: for "never concurrent" checks. */
export class OverlapMeter {
  #active = 0;
  peak = 0;
  async around<T>(work: () => T | Promise<T>): Promise<T> {
    this.#active++;
    this.peak = Math.max(this.peak, this.#active);
    try {
      // Give a concurrent caller every chance to come in while this one is inside.
      await Promise.resolve();
      await Promise.resolve();
      return await work();
    } finally {
      this.#active--;
    }
  }
}

/** Drains a stream; the result event is also returned on its own. */
export async function collect(
  stream: AsyncIterable<AgentEvent>,
): Promise<{ events: AgentEvent[]; result: SDKResultMessage }> {
  const events: AgentEvent[] = [];
  for await (const event of stream) events.push(event);
  const last = events.at(-1);
  if (last?.type !== "result") throw new Error("the stream did not end with a result event");
  return { events, result: last as SDKResultMessage };
}

/** `type`, or `type:callId` for tool events, or `type:id` for custom events carrying an `id`. */
export function label(event: AgentEvent): string {
  const record = event as unknown as Record<string, unknown>;
  if (typeof record.callId === "string") return `${event.type}:${record.callId}`;
  if (typeof record.id === "string" && event.type.includes("."))
    return `${event.type}:${record.id}`;
  return event.type;
}

export function labels(events: AgentEvent[]): string[] {
  return events.map(label);
}

/**
 * A batch policy that allows every batch. Setting any `toolBatchPolicy` turns eager execution
 * off (DESIGN: a policy sees the whole batch before any handler runs), so tests that assert the
 * non-eager order of decision 5 ("all of them before the first handler") pass this one.
 */
export const noEager = { validate: () => ({ allowed: true as const }) };
