// Watching a run on another machine: its result (waitForRun) and its events, live (followRun).
// Postgres LISTEN/NOTIFY wakes the watcher at once; polling covers a missed notification.

import { ConfigurationError, SessionError } from "../core/errors.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";
import type { AgentEvent, SDKResultMessage } from "../run/types.ts";
import { assertSessionId } from "../sessions/validate.ts";
import { type Board, boardOf, CHANNEL, type RunRecord } from "./board.ts";
import { HANDOFF_PREFIX } from "./mailbox.ts";
import { cancelledError, refusedError } from "./results.ts";
import type { FollowRunOptions, WaitForRunOptions } from "./types.ts";

const WAIT_KEYS: ReadonlySet<string> = new Set(["runId", "signal", "pollIntervalMs"]);

/**
 * Resolves with the result of the run (`runId`, default the session's latest enqueued) once it
 * ended or paused; rejects with `AbortError` when it was cancelled, and with `ResumeError` when a
 * worker refused to resume it (its paused state failed its checks: a seal made under another
 * approval secret, an approval for a call that is not waiting). Waits through a database restart
 * (its reads are retried at each poll).
 */
export async function waitForRun<TOutput = unknown>(
  sessionStore: unknown,
  sessionId: string,
  options?: WaitForRunOptions,
): Promise<SDKResultMessage<TOutput>> {
  // Woken by the run's end only: its events have a channel of their own.
  const watch = await watcher("waitForRun()", sessionStore, sessionId, options, [CHANNEL.run]);
  try {
    while (true) {
      const record = await watch.record();
      if (record?.status === "ended" || record?.status === "paused") {
        const result = JSON.parse(record.result!) as SDKResultMessage<TOutput>;
        const refused = refusedError(result);
        if (refused) throw refused;
        return result;
      }
      if (record?.status === "cancelled") throw cancelledError(record.result, sessionId);
      await watch.next();
    }
  } finally {
    watch.close();
  }
}

/**
 * The run's events as its worker records them (those of an execution that died first, then
 * those of the one that recovered it), live, ending after its `result` event. A cancelled run's
 * events end with `AbortError`, as a stream aborted in one process does, and a refused resume's
 * with `ResumeError`, as `agent.resumeStream` throws it.
 */
export async function* followRun<TOutput = unknown>(
  sessionStore: unknown,
  sessionId: string,
  options?: FollowRunOptions,
): AsyncGenerator<AgentEvent<TOutput>, void, undefined> {
  const watch = await watcher("followRun()", sessionStore, sessionId, options, [
    CHANNEL.run,
    CHANNEL.events,
  ]);
  try {
    let after = 0;
    while (true) {
      // The status first: a run's events are all written before its status changes.
      const record = await watch.record();
      const events = await watch.events(after);
      for (const { n, data } of events) {
        after = n;
        const event = JSON.parse(data) as AgentEvent<TOutput>;
        const refused = event.type === "result" ? refusedError(event) : undefined;
        if (refused) throw refused;
        yield event;
        if (event.type === "result") return;
      }
      if (record?.status === "cancelled") throw cancelledError(record.result, sessionId);
      if (record?.status === "ended" || record?.status === "paused") {
        // Ended without a recorded result event (it never ran, or its events were lost).
        const result = JSON.parse(record.result!) as SDKResultMessage<TOutput>;
        const refused = refusedError(result);
        if (refused) throw refused;
        yield result;
        return;
      }
      if (events.length === 0) await watch.next();
    }
  } finally {
    watch.close();
  }
}

interface Watcher {
  record(): Promise<RunRecord | undefined>;
  events(after: number): Promise<{ n: number; data: string }[]>;
  /** Resolves at the next notification for the run, or the next poll. */
  next(): Promise<void>;
  close(): void;
}

async function watcher(
  prefix: string,
  sessionStore: unknown,
  sessionId: string,
  options: WaitForRunOptions | undefined,
  channels: string[],
): Promise<Watcher> {
  assertKnownOptions(prefix, options, WAIT_KEYS);
  assertSessionId(prefix, sessionId);
  const board = boardOf(prefix, sessionStore);
  const { signal, pollIntervalMs = 1_000 } = options ?? {};
  if (typeof pollIntervalMs !== "number" || !(pollIntervalMs >= 10))
    throw new ConfigurationError(
      `${prefix}: pollIntervalMs must be a number of at least 10, received ${describeValue(pollIntervalMs)}.`,
    );
  if (options?.runId !== undefined && (typeof options.runId !== "string" || options.runId === ""))
    throw new ConfigurationError(
      `${prefix}: runId must be the runId enqueueRun or resumeRun returned, received ${describeValue(options.runId)}.`,
    );
  signal?.throwIfAborted();
  const runId = options?.runId ?? (await latestRunId(board, sessionId));
  let wake: (() => void) | undefined;
  const nudge = () => {
    const resume = wake;
    wake = undefined;
    resume?.();
  };
  const unlisteners = channels.map((channel) =>
    board.listen(channel, (payload) => {
      if (payload === runId) nudge();
    }),
  );
  signal?.addEventListener("abort", nudge);
  /** A read that fails (the database restarts) is retried at the next poll. */
  const retried = async <T>(read: () => Promise<T>, fallback: T): Promise<T> => {
    try {
      return await read();
    } catch {
      return fallback;
    }
  };
  return {
    record: async () => {
      const record = await retried(() => board.getRun(runId), undefined);
      if (record && record.sessionId !== sessionId)
        throw new ConfigurationError(
          `${prefix}: run ${runId} belongs to session "${record.sessionId}", not "${sessionId}".`,
        );
      return record;
    },
    events: (after) => retried(() => board.readEvents(runId, after), []),
    next: async () => {
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(nudge, pollIntervalMs).unref();
      });
      signal?.throwIfAborted();
    },
    close: () => {
      for (const unlisten of unlisteners) unlisten();
      signal?.removeEventListener("abort", nudge);
    },
  };
}

async function latestRunId(board: Board, sessionId: string): Promise<string> {
  const latest = await board.latestRun(sessionId);
  // A handoff's run is named after its session; its record appears when a worker takes it.
  if (!latest && sessionId.startsWith(HANDOFF_PREFIX)) return sessionId;
  if (!latest)
    throw new SessionError(
      `No run of session "${sessionId}" was enqueued (enqueueRun records one); pass the runId it returned.`,
      { code: "not_found", sessionId },
    );
  return latest.runId;
}
