// A run's first and last entries written from outside the engine: a job queue logs a run's input
// when it is enqueued (a job never points at a session without its input), and ends a run no
// engine will execute (cancelled while queued, or for an agent nobody serves).

import { randomUUID } from "node:crypto";
import { SessionError } from "../core/errors.ts";
import type { Message, ToolResultBlock } from "../core/messages.ts";
import type { SessionStore } from "../core/session-store.ts";
import { DEFAULT_MAX_RESULT_CHARS } from "../run/config.ts";
import type { ErrorInfo } from "../run/types.ts";
import { capResultContent } from "../tools/result.ts";
import { encodeEntry, type LogEntry } from "./log-entries.ts";
import { type InterruptedBatch, readSession, type SessionView } from "./session-view.ts";

/** A checkpoint id: sortable by time, unique across processes. */
export function newCheckpointId(): string {
  return `cp_${Date.now().toString(36)}_${randomUUID().slice(0, 8)}`;
}

/**
 * Logs `message` as a new run's input, as `run(prompt, { sessionId })` would before its first
 * model call; `agent.resume({ sessionId })` then runs it. The session's last run must have ended.
 * Two callers racing on one session: the expected-seq check lets one win.
 */
export async function logRunInput(
  store: SessionStore,
  sessionId: string,
  message: Message,
  options?: {
    /** A session id made just now: nothing to read, the input is its first entry (seq 1). */
    fresh?: boolean;
    /** Appends instead of `store.append` (the same check), knowing the new run's checkpoint id. */
    append?: (seq: number, entries: string[], checkpointId: string) => Promise<void>;
  },
): Promise<{ checkpointId: string; seq: number }> {
  const view = options?.fresh ? undefined : await readSession(store, sessionId, undefined);
  if (view && view.status !== "idle")
    throw new SessionError(
      `Session "${sessionId}" has an unfinished run (${view.status}); wait for it to end (or resume or cancel it) before enqueueing another.`,
      { code: "unfinished", sessionId },
    );
  const checkpointId = newCheckpointId();
  const seq = (view?.lastSeq ?? 0) + 1;
  const entry: LogEntry = { type: "input", runId: checkpointId, checkpointId, message };
  const entries = [encodeEntry(entry)];
  if (options?.append) await options.append(seq, entries, checkpointId);
  else await store.append(sessionId, seq, entries);
  return { checkpointId, seq };
}

/** Where the run that `checkpointId` opened stands in a session's log. */
export type LoggedRun =
  | { state: "missing" }
  | { state: "unfinished" | "paused" }
  | { state: "ended"; end: Extract<LogEntry, { type: "end" }> };

export function loggedRun(view: SessionView | undefined, checkpointId: string): LoggedRun {
  if (!view) return { state: "missing" };
  if (view.unfinished?.runId === checkpointId)
    return { state: view.status === "paused" ? "paused" : "unfinished" };
  for (let i = view.entries.length - 1; i >= 0; i--) {
    const { entry } = view.entries[i]!;
    if (entry.type === "end" && entry.runId === checkpointId) return { state: "ended", end: entry };
  }
  return { state: "missing" };
}

/**
 * Ends the session's unfinished run `checkpointId` with `end` (a run no engine will execute).
 * `false` when that run is not the session's unfinished one (it ended, or never was). A run that
 * stopped inside a batch (paused, or interrupted) first gets its results message, in the same
 * append: the session's next run then sends the model every tool_use answered, as the APIs
 * require.
 */
export async function logRunEnd(
  store: SessionStore,
  sessionId: string,
  checkpointId: string,
  end: { subtype: "aborted" | "error_during_execution"; error?: ErrorInfo },
): Promise<boolean> {
  const view = await readSession(store, sessionId, undefined);
  if (view?.unfinished?.runId !== checkpointId) return false;
  const entries: LogEntry[] = [];
  const batch = view.unfinished.batch;
  if (batch)
    entries.push({ type: "results", runId: checkpointId, message: closingResults(batch, end) });
  entries.push({ type: "end", runId: checkpointId, ...end });
  await store.append(sessionId, view.lastSeq + 1, entries.map(encodeEntry));
  return true;
}

/**
 * The answers of a batch whose run ends without running the rest: a logged result as the model
 * would have seen it; a call that started without one, "outcome unknown" (as recovery answers
 * it); a call that never started, "not run".
 */
function closingResults(
  batch: InterruptedBatch,
  end: { subtype: "aborted" | "error_during_execution" },
): Message {
  const why = end.subtype === "aborted" ? "the run was cancelled" : "the run failed";
  const content: ToolResultBlock[] = [];
  const blocks = typeof batch.step.message.content === "string" ? [] : batch.step.message.content;
  for (const block of blocks) {
    if (block.type !== "tool_use") continue;
    const logged = batch.results.get(block.id);
    const answer = logged
      ? {
          content: capResultContent(logged.content, DEFAULT_MAX_RESULT_CHARS),
          isError: logged.isError === true,
        }
      : batch.started.has(block.id)
        ? {
            content: `The call to ${block.name} was interrupted while it ran (outcome unknown): it may or may not have taken effect, and ${why} before its result was logged. Check before calling it again.`,
            isError: true,
          }
        : { content: `Tool "${block.name}" was not run: ${why} before it started.`, isError: true };
    content.push({
      type: "tool_result",
      tool_use_id: block.id,
      content: answer.content,
      is_error: answer.isError,
    });
  }
  return { role: "user", content };
}
