// What a session's log says: its transcript, its checkpoints, and where its last run stopped.

import { SessionError } from "../core/errors.ts";
import { addUsage, emptyUsage, type Message, type Usage } from "../core/messages.ts";
import type { SessionStore } from "../core/session-store.ts";
import { sealMatches } from "../run/seal.ts";
import type { RunState, Step } from "../run/types.ts";
import type { ToolResult } from "../tools/types.ts";
import { type LogEntry, parseLog, type StoredEntry } from "./log-entries.ts";

export interface Checkpoint {
  /** The id `rewindFiles` and `forkSession` take (also the run's id). */
  id: string;
  /** The prompt's text. */
  prompt: string;
  /** The seq of the run's `input` entry. */
  seq: number;
}

/** The last run, when it did not finish. */
export interface UnfinishedRun {
  runId: string;
  /** Model calls the run made so far; a recovered run goes on counting. */
  numTurns: number;
  usage: Usage;
  /** Set when the run paused (and was not taken over since). */
  pausedState?: RunState;
  /** The last reply whose calls have no results message yet: the batch a crash interrupted. */
  batch?: InterruptedBatch;
  /** The last reply answered without tool calls, but the run logged no end. */
  finalReply?: Message;
  /** The last model call failed mid-stream (its partial reply logged), and the run logged no end. */
  failedMidStream?: boolean;
  /** The permission mode the run last switched to (`setPermissionMode`), as logged. */
  permissionMode?: string;
}

export interface InterruptedBatch {
  step: Step;
  /** Calls whose result was logged (or kept in a paused state), by call id. */
  results: Map<string, ToolResult>;
  /** Calls whose handler was about to run when the log stopped. */
  started: Set<string>;
}

export interface SessionView {
  sessionId: string;
  /** The seq of the session's last stored entry (a torn one included): the next append is lastSeq + 1. */
  lastSeq: number;
  status: "idle" | "paused" | "interrupted";
  messages: Message[];
  checkpoints: Checkpoint[];
  /** The latest runData a call logged, if its seal holds under this secret. */
  runData: Record<string, unknown> | undefined;
  unfinished?: UnfinishedRun;
  entries: StoredEntry[];
}

/** Reads a session; undefined when the store has no entry for it. Throws `SessionError` "damaged". */
export async function readSession(
  store: SessionStore,
  sessionId: string,
  secret: string | undefined,
): Promise<SessionView | undefined> {
  const rows = await store.read(sessionId);
  if (rows.length === 0) return undefined;
  return viewOf(sessionId, parseLog(sessionId, rows), rows.at(-1)!.seq, secret);
}

/** Like `readSession`, but an unknown session is `SessionError` "not_found". */
export async function requireSession(
  store: SessionStore,
  sessionId: string,
  secret: string | undefined,
): Promise<SessionView> {
  const view = await readSession(store, sessionId, secret);
  if (!view)
    throw new SessionError(`Session "${sessionId}" does not exist in this store.`, {
      code: "not_found",
      sessionId,
    });
  return view;
}

export function viewOf(
  sessionId: string,
  entries: StoredEntry[],
  lastSeq: number,
  secret: string | undefined,
): SessionView {
  const messages: Message[] = [];
  const checkpoints: Checkpoint[] = [];
  let runData: Record<string, unknown> | undefined;
  let run: (UnfinishedRun & { open: boolean }) | undefined;
  for (const { seq, entry } of entries) {
    switch (entry.type) {
      case "input":
        messages.push(entry.message);
        checkpoints.push({ id: entry.checkpointId, prompt: promptText(entry.message), seq });
        run = { runId: entry.runId, numTurns: 0, usage: emptyUsage(), open: true };
        break;
      case "results_reply":
      case "reply":
        // The previous batch's results message, when it rode in this entry.
        if (entry.type === "results_reply") messages.push(entry.results);
        messages.push(entry.message);
        if (run) {
          run.numTurns++;
          run.failedMidStream = false;
          addUsage(run.usage, entry.usage);
          run.finalReply = hasToolUse(entry.message) ? undefined : entry.message;
          run.batch = hasToolUse(entry.message)
            ? {
                step: {
                  message: entry.message,
                  toolCalls: [],
                  usage: entry.usage,
                  stopReason: entry.stopReason,
                },
                results: new Map(Object.entries(entry.answered ?? {})),
                started: new Set(),
              }
            : undefined;
        }
        break;
      case "partial":
        messages.push(entry.message);
        if (run) {
          run.numTurns++;
          run.batch = undefined;
          run.finalReply = undefined;
          run.failedMidStream = true;
        }
        break;
      case "user_message":
        messages.push(entry.message);
        // The run went on past its final reply (a follow-up): recovery calls the model again.
        if (run) run.finalReply = undefined;
        break;
      case "started":
        run?.batch?.started.add(entry.callId);
        break;
      case "result":
        run?.batch?.results.set(entry.callId, entry.result);
        if (
          entry.runData &&
          sealMatches(secret, [sessionId, entry.runData.data], entry.runData.seal)
        )
          runData = entry.runData.data;
        break;
      case "results":
        messages.push(entry.message);
        if (run) run.batch = undefined;
        break;
      case "paused":
        if (run) {
          run.open = false;
          run.pausedState = entry.state;
          for (const call of entry.state.batch?.calls ?? [])
            if (call.status === "done") run.batch?.results.set(call.id, call.result);
        }
        break;
      case "resumed":
        // A run resumed from a state after it ended (a max_turns state, a higher limit) reopens.
        run ??= { runId: entry.runId, numTurns: 0, usage: emptyUsage(), open: true };
        run.open = true;
        run.pausedState = undefined;
        break;
      case "end":
        run = undefined;
        break;
      case "mode":
        if (run) run.permissionMode = entry.mode;
        break;
      case "origin":
      case "snapshot":
        break;
    }
  }
  const view: SessionView = {
    sessionId,
    lastSeq,
    status: run === undefined ? "idle" : run.open ? "interrupted" : "paused",
    messages,
    checkpoints,
    runData,
    entries,
  };
  if (run) {
    const { open: _open, ...unfinished } = run;
    view.unfinished = unfinished;
  }
  return view;
}

function hasToolUse(message: Message): boolean {
  return typeof message.content !== "string" && message.content.some((b) => b.type === "tool_use");
}

/** A prompt's text, for listings: text blocks joined, images as `[image]`. */
export function promptText(message: Message): string {
  if (typeof message.content === "string") return message.content;
  return message.content
    .map((block) => (block.type === "text" ? block.text : `[${block.type}]`))
    .join(" ");
}

export type { LogEntry };
