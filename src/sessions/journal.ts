// A run's write-ahead log over a SessionStore: serialised appends, an expected seq, fail closed.

import { SessionConflictError, SessionStoreError } from "../core/errors.ts";
import { emptyUsage, type Message } from "../core/messages.ts";
import type { SessionStore } from "../core/session-store.ts";
import type { RunDataSnapshot, RunEnd, RunJournal } from "../run/journal.ts";
import { toJsonValue } from "../run/json.ts";
import { canonicalJson, sealValue } from "../run/seal.ts";
import type { RunState, Step } from "../run/types.ts";
import type { ToolResult } from "../tools/types.ts";
import { encodeEntry, type LogEntry } from "./log-entries.ts";

/** Delays before the two retries of a failed append (a conflict is never retried). */
const RETRY_DELAYS_MS = [50, 200];

/** An entry, or its JSON text when the journal wrote it directly. */
type Pending = LogEntry | string;

const textOf = (entry: Pending): string => (typeof entry === "string" ? entry : encodeEntry(entry));

interface Waiting {
  entries: Pending[];
  resolve: () => void;
  reject: (error: Error) => void;
}

/**
 * Appends one run's entries to its session. Appends are serialised (each at the session's last
 * seq + 1, so a second writer of the same session loses every race), and entries written while an
 * append is in flight share the next one. The first failure stops the journal: every later write
 * rejects with it, so no guarded step runs after a write that did not happen.
 */
export class SessionJournal implements RunJournal {
  readonly #store: SessionStore;
  readonly #sessionId: string;
  readonly #runId: string;
  /** The run id as JSON text, for the entries written directly. */
  readonly #runIdText: string;
  readonly #secret: string | undefined;
  #lastSeq: number;
  /** The batch's results message, written with the next entry. */
  #deferred: LogEntry[] = [];
  #waiting: Waiting[] = [];
  #writing = false;
  #failure: Error | undefined;
  #loggedRunData = "{}";
  /** How many appends reached the store (the sessions benchmark reports it). */
  appends = 0;

  constructor(options: {
    store: SessionStore;
    sessionId: string;
    runId: string;
    lastSeq: number;
    secret: string | undefined;
  }) {
    this.#store = options.store;
    this.#sessionId = options.sessionId;
    this.#runId = options.runId;
    this.#runIdText = JSON.stringify(options.runId);
    this.#lastSeq = options.lastSeq;
    this.#secret = options.secret;
  }

  get failure(): Error | undefined {
    return this.#failure;
  }

  get lastSeq(): number {
    return this.#lastSeq;
  }

  /** Starts from runData the session already holds, so an unchanged map is not logged again. */
  knowRunData(data: Record<string, unknown>): void {
    this.#loggedRunData = canonicalJson(data);
  }

  input(message: Message): Promise<void> {
    return this.#write({ type: "input", runId: this.#runId, checkpointId: this.#runId, message });
  }

  reply(step: Step, answered: { id: string; result: ToolResult }[]): Promise<void> {
    const fields = {
      runId: this.#runId,
      message: step.message,
      usage: { ...emptyUsage(), ...step.usage },
      stopReason: step.stopReason ?? "end_turn",
    };
    // The last batch's results message rides in this entry: one row where two cost a second
    // insert and index entry in the same commit.
    const results = this.#takeResults();
    const entry: LogEntry = results
      ? { type: "results_reply", ...fields, results }
      : { type: "reply", ...fields };
    if (answered.length > 0) {
      entry.answered = Object.fromEntries(
        answered.map(({ id, result }) => [id, toJsonValue(result) as ToolResult]),
      );
      return this.#write(entry);
    }
    // One per model call, so written as text (what encodeEntry gives for this entry); a message
    // JSON cannot write goes to #write as the entry, which fails the journal with it.
    let text: string;
    try {
      const head = results
        ? `{"type":"results_reply","runId":${this.#runIdText},"results":${JSON.stringify(results)},`
        : `{"type":"reply","runId":${this.#runIdText},`;
      text = `${head}"message":${JSON.stringify(entry.message)},"usage":${JSON.stringify(entry.usage)},"stopReason":${JSON.stringify(entry.stopReason)}}`;
    } catch {
      return this.#write(entry);
    }
    return this.#write(text);
  }

  /** The deferred results message, taken for the reply that carries it. */
  #takeResults(): Message | undefined {
    const deferred = this.#deferred[0];
    if (this.#deferred.length !== 1 || deferred?.type !== "results") return undefined;
    this.#deferred = [];
    return deferred.message;
  }

  userMessage(message: Message): Promise<void> {
    return this.#write({ type: "user_message", runId: this.#runId, message });
  }

  partial(message: Message): Promise<void> {
    return this.#write({ type: "partial", runId: this.#runId, message });
  }

  started(call: { id: string; name: string; input: unknown }): Promise<void> {
    // One per tool call, so written as text: what encodeEntry gives for the `started` entry
    // { type, runId, callId, name, inputHash } (the hash is hex, nothing to escape).
    return this.#write(
      `{"type":"started","runId":${this.#runIdText},"callId":${JSON.stringify(call.id)},"name":${JSON.stringify(call.name)},"inputHash":"${inputHash(call.input)}"}`,
    );
  }

  result(
    call: { id: string; name: string },
    result: ToolResult,
    runData: RunDataSnapshot,
  ): Promise<void> {
    // A handler's result was checked serialisable when it settled; `details` may still hold
    // what JSON turns into something else (a Date), as JSON.stringify would write it.
    const entry: LogEntry = {
      type: "result",
      runId: this.#runId,
      callId: call.id,
      name: call.name,
      result,
    };
    // runData is logged when the call changed it, sealed as a paused state's is (an empty map
    // that was empty is unchanged without being copied and compared).
    if (runData.size > 0 || this.#loggedRunData !== "{}") {
      const data = toJsonValue(Object.fromEntries(runData)) as Record<string, unknown>;
      const text = canonicalJson(data);
      if (text !== this.#loggedRunData) {
        this.#loggedRunData = text;
        entry.runData = { data, seal: sealValue(this.#secret, [this.#sessionId, data]) };
      }
    }
    if (entry.runData) return this.#write(entry);
    // One per tool call, so written as text: what encodeEntry gives for this entry. A result
    // JSON cannot write goes to #write as the entry, which fails the journal with it.
    let text: string;
    try {
      text = `{"type":"result","runId":${this.#runIdText},"callId":${JSON.stringify(call.id)},"name":${JSON.stringify(call.name)},"result":${JSON.stringify(result)}}`;
    } catch {
      return this.#write(entry);
    }
    return this.#write(text);
  }

  results(message: Message): void {
    // The blocks are what the model is sent: plain JSON already.
    this.#deferred.push({ type: "results", runId: this.#runId, message });
  }

  mode(mode: string): void {
    this.#deferred.push({ type: "mode", runId: this.#runId, mode });
  }

  paused(state: RunState): Promise<void> {
    return this.#write({ type: "paused", runId: this.#runId, state });
  }

  /** The recoverer's marker: it loses the race when another process took the run first. */
  resumed(): Promise<void> {
    return this.#write({ type: "resumed", runId: this.#runId });
  }

  ended(end: RunEnd): Promise<void> {
    return this.#write({ type: "end", runId: this.#runId, ...end });
  }

  snapshot(callId: string, path: string, content: string | null): Promise<void> {
    return this.#write({ type: "snapshot", runId: this.#runId, callId, path, content });
  }

  #write(entry: Pending): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    const deferred = this.#deferred.length > 0 ? this.#deferred.splice(0) : undefined;
    if (this.#writing) {
      const entries = deferred ? [...deferred, entry] : [entry];
      return new Promise<void>((resolve, reject) => {
        this.#waiting.push({ entries, resolve, reject });
      });
    }
    // The common case, nothing in flight: append at once, without queueing (one reaction on
    // the store's promise when it succeeds).
    let texts: string[];
    try {
      texts = deferred ? [...deferred, entry].map(textOf) : [textOf(entry)];
    } catch (error) {
      this.#failure ??= asJournalError(error, this.#sessionId);
      return Promise.reject(this.#failure);
    }
    this.#writing = true;
    this.#inFlight = texts;
    return this.#tryAppend(this.#lastSeq + 1, texts).then(this.#appended, this.#appendFailed);
  }

  /** The texts of the append in flight from #write (one at a time: #writing). */
  #inFlight: string[] = [];

  readonly #appended = (): void => {
    this.#lastSeq += this.#inFlight.length;
    // Not kept past its append (a reply's text can be large).
    this.#inFlight = [];
    this.#next();
  };

  readonly #appendFailed = (error: unknown): Promise<void> => {
    const texts = this.#inFlight;
    return this.#retry(this.#lastSeq + 1, texts, error).then(
      () => this.#next(),
      (failure: unknown) => {
        this.#failure ??= asJournalError(failure, this.#sessionId);
        this.#next();
        throw this.#failure;
      },
    );
  };

  /** After an append settles: writes that arrived meanwhile go out together. */
  #next(): void {
    if (this.#waiting.length > 0) void this.#drain();
    else this.#writing = false;
  }

  /** Writes everything waiting in one append, until nothing waits. */
  async #drain(): Promise<void> {
    while (this.#waiting.length > 0) {
      const group = this.#waiting.splice(0);
      try {
        if (this.#failure) throw this.#failure;
        const texts = group.flatMap((waiting) => waiting.entries.map(textOf));
        await this.#append(texts);
        for (const waiting of group) waiting.resolve();
      } catch (error) {
        this.#failure ??= asJournalError(error, this.#sessionId);
        for (const waiting of group) waiting.reject(this.#failure);
      }
    }
    this.#writing = false;
  }

  /** One append at the next seq; a failure other than a conflict is tried twice more. */
  async #append(texts: string[]): Promise<void> {
    const seq = this.#lastSeq + 1;
    try {
      await this.#tryAppend(seq, texts);
      this.#lastSeq += texts.length;
    } catch (error) {
      await this.#retry(seq, texts, error);
    }
  }

  /** One try; a store that throws instead of rejecting fails the same way. */
  #tryAppend(seq: number, texts: string[]): Promise<void> {
    this.appends++;
    try {
      return Promise.resolve(this.#store.append(this.#sessionId, seq, texts));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The retries after a failed first try: resolves once one lands (and counts it), or throws. */
  async #retry(seq: number, texts: string[], first: unknown): Promise<void> {
    let error = first;
    for (let attempt = 0; ; attempt++) {
      if (error instanceof SessionConflictError || attempt >= RETRY_DELAYS_MS.length) throw error;
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAYS_MS[attempt]));
      try {
        await this.#tryAppend(seq, texts);
        this.#lastSeq += texts.length;
        return;
      } catch (next) {
        // A retried append whose first try did commit (its answer was lost) finds itself there.
        if (next instanceof SessionConflictError && (await this.#landed(seq, texts))) {
          this.#lastSeq += texts.length;
          return;
        }
        error = next;
      }
    }
  }

  async #landed(seq: number, texts: string[]): Promise<boolean> {
    try {
      const rows = await this.#store.read(this.#sessionId, { after: seq - 1 });
      return (
        rows.length >= texts.length &&
        texts.every((text, index) => rows[index]?.seq === seq + index && rows[index]?.data === text)
      );
    } catch {
      return false;
    }
  }
}

/**
 * A hash of a call's canonical input, for its `started` entry: an identifier, not a seal (nothing
 * is proven with it; approvals and paused states have HMAC seals). 64 bits as 16 hex digits, from
 * two multiply-xor lanes over the text's UTF-16 code units with a final mix (cyrb53's scheme, both
 * lanes kept). In JavaScript rather than node:crypto: a one-shot SHA-256 (OpenSSL's setup, cold
 * between calls) cost about 6 µs more per tool call inside a run; for long inputs neither is the
 * cost, building the canonical text is.
 */
export function inputHash(input: unknown): string {
  const text = canonicalJson(input);
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    h1 = Math.imul(h1 ^ unit, 2654435761);
    h2 = Math.imul(h2 ^ unit, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return hex32(h2) + hex32(h1);
}

const HEX = "0123456789abcdef";

/** 8 hex digits (a table per nibble: toString(16) of a value past the small-integer range is slow). */
function hex32(value: number): string {
  let text = "";
  for (let shift = 28; shift >= 0; shift -= 4) text += HEX[(value >>> shift) & 15];
  return text;
}

function asJournalError(error: unknown, sessionId: string): Error {
  if (error instanceof SessionConflictError || error instanceof SessionStoreError) return error;
  return new SessionStoreError(
    `The session store failed to log session "${sessionId}" (${error instanceof Error ? error.message : String(error)}), after retries; the run stopped before the step that write guarded.`,
    { cause: error },
  );
}
