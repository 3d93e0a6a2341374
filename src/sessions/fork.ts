// forkSession and loadSession: a session's copy from a checkpoint, and what a session holds.

import { randomUUID } from "node:crypto";
import { ConfigurationError, SessionError } from "../core/errors.ts";
import type { Message } from "../core/messages.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";
import type { SessionStore } from "../core/session-store.ts";
import { pendingOf } from "../run/tree.ts";
import type { PendingToolCall } from "../run/types.ts";
import { encodeEntry } from "./log-entries.ts";
import { readSession, requireSession } from "./session-view.ts";
import { assertSessionId } from "./validate.ts";

const FORK_OPTION_KEYS: ReadonlySet<string> = new Set(["checkpointId", "sessionId"]);

/**
 * Copies a session into a new one: the entries before the checkpoint's input, or, without
 * `checkpointId`, everything up to the end of the last finished run (an unfinished tail is not
 * copied). The fork's first entry names its origin; the original is not changed. Resolves the
 * new session's id (random unless given).
 */
export async function forkSession(
  store: SessionStore,
  sessionId: string,
  options: { checkpointId?: string; sessionId?: string } = {},
): Promise<string> {
  const prefix = "forkSession()";
  assertKnownOptions(prefix, options, FORK_OPTION_KEYS);
  assertSessionId(prefix, sessionId);
  const target = options.sessionId ?? randomUUID();
  assertSessionId(prefix, target);
  if (options.checkpointId !== undefined && typeof options.checkpointId !== "string")
    throw new ConfigurationError(
      `${prefix}: checkpointId must be a string from a result's checkpointId, received ${describeValue(options.checkpointId)}.`,
    );
  // The seals of copied entries bind them to the original session; they are re-checked, never trusted.
  const view = await requireSession(store, sessionId, undefined);
  let end: number;
  if (options.checkpointId !== undefined) {
    const checkpoint = view.checkpoints.find((each) => each.id === options.checkpointId);
    if (!checkpoint)
      throw new SessionError(
        `forkSession: session "${sessionId}" has no checkpoint "${options.checkpointId}".`,
        { code: "not_found", sessionId },
      );
    end = checkpoint.seq;
  } else {
    // After the last entry that closed a run (its end), or nothing if no run finished.
    const lastEnd = view.entries.findLast(({ entry }) => entry.type === "end");
    end = view.status === "idle" ? view.lastSeq + 1 : (lastEnd?.seq ?? 0) + 1;
  }
  const copied = view.entries.filter(({ seq, entry }) => seq < end && entry.type !== "origin");
  const origin = encodeEntry({
    type: "origin",
    from: sessionId,
    ...(options.checkpointId !== undefined ? { checkpointId: options.checkpointId } : {}),
  });
  await store.append(target, 1, [origin, ...copied.map(({ entry }) => encodeEntry(entry))]);
  return target;
}

/** What `loadSession` tells about a stored session. */
export interface LoadedSession {
  sessionId: string;
  status: "idle" | "paused" | "interrupted";
  messages: Message[];
  /** Calls the paused run waits for, as on a paused result. */
  pending?: PendingToolCall[];
  checkpoints: { id: string; prompt: string }[];
  lastSeq: number;
}

/** A session as its log tells it; undefined for a session the store does not have. */
export async function loadSession(
  store: SessionStore,
  sessionId: string,
): Promise<LoadedSession | undefined> {
  assertSessionId("loadSession()", sessionId);
  const view = await readSession(store, sessionId, undefined);
  if (!view) return undefined;
  const loaded: LoadedSession = {
    sessionId,
    status: view.status,
    messages: view.messages,
    checkpoints: view.checkpoints.map(({ id, prompt }) => ({ id, prompt })),
    lastSeq: view.lastSeq,
  };
  const state = view.unfinished?.pausedState;
  if (view.status === "paused" && state?.batch) loaded.pending = pendingOf(state);
  return loaded;
}
