// What both handlers do with a session: approval ids bound to one session and one pause, the
// answers checked against them, and regenerate's fork.

import { randomBytes } from "node:crypto";
import type { Message } from "../core/messages.ts";
import type { SessionStore } from "../core/session-store.ts";
import { sealValue } from "../run/seal.ts";
import { pendingOf } from "../run/tree.ts";
import type { PendingToolCall, RunState } from "../run/types.ts";
import { forkSession } from "../sessions/fork.ts";
import { readSession, type SessionView } from "../sessions/session-view.ts";
import type { PermissionResult } from "../tools/types.ts";
import { HttpRefusal } from "./http.ts";

/** The key approval ids are made with: the option, else `$SKEIN_APPROVAL_SECRET`, else this process's own. */
export function approvalKey(secret: string | undefined): string {
  return secret ?? process.env.SKEIN_APPROVAL_SECRET ?? randomBytes(32).toString("base64url");
}

/** The paused run of a session: the seq of its `paused` entry and its state. */
export interface Pause {
  seq: number;
  state: RunState;
}

export async function readView(store: SessionStore, sessionId: string) {
  try {
    return await readSession(store, sessionId, undefined);
  } catch (error) {
    throw new HttpRefusal(
      409,
      "session_unreadable",
      `The chat's session log cannot be read: ${(error as Error).message}`,
    );
  }
}

export function pauseOf(view: SessionView | undefined): Pause | undefined {
  if (view?.status !== "paused") return undefined;
  const entry = view.entries.findLast(({ entry }) => entry.type === "paused");
  if (entry?.entry.type !== "paused") return undefined;
  return { seq: entry.seq, state: entry.entry.state };
}

/**
 * An approval id: an HMAC of the session, the pause (the seq of its `paused` entry) and the call.
 * Another session's id, an earlier pause's, or a made-up one matches no call of this pause.
 */
export function approvalIdOf(
  key: string,
  sessionId: string,
  pauseSeq: number,
  call: PendingToolCall,
): string {
  return sealValue(key, [
    "skein/web approval",
    sessionId,
    pauseSeq,
    call.id,
    call.name,
    call.input,
  ]);
}

/** The approval ids of a session's current pause, read from the store after the run paused. */
export async function currentApprovalIds(
  store: SessionStore,
  key: string,
  sessionId: string,
): Promise<Map<string, string>> {
  const pause = pauseOf(await readView(store, sessionId));
  const ids = new Map<string, string>();
  if (!pause) return ids;
  for (const call of pendingOf(pause.state))
    if (call.reason === "approval") ids.set(call.id, approvalIdOf(key, sessionId, pause.seq, call));
  return ids;
}

export interface ApprovalAnswer {
  approvalId: unknown;
  approved: unknown;
  reason?: unknown;
}

/**
 * The answers as `resume`'s approvals, each checked against the session's current pause: an id
 * that matches none of its pending calls is a 403 and nothing runs; a session with no pause a 409.
 */
export async function checkedApprovals(
  store: SessionStore,
  key: string,
  sessionId: string,
  answers: ApprovalAnswer[],
): Promise<Record<string, PermissionResult>> {
  const pause = pauseOf(await readView(store, sessionId));
  if (!pause)
    throw new HttpRefusal(
      409,
      "not_paused",
      "This chat has no run waiting for approval: the answers are stale (already answered) or for another chat.",
    );
  const byId = new Map<string, PendingToolCall>();
  for (const call of pendingOf(pause.state))
    if (call.reason === "approval") byId.set(approvalIdOf(key, sessionId, pause.seq, call), call);
  const approvals: Record<string, PermissionResult> = {};
  for (const answer of answers) {
    if (typeof answer.approvalId !== "string" || typeof answer.approved !== "boolean")
      throw new HttpRefusal(
        400,
        "malformed_approval",
        "An approval answer needs an approval id (a string) and approved (a boolean).",
      );
    const call = byId.get(answer.approvalId);
    if (!call)
      throw new HttpRefusal(
        403,
        "unknown_approval",
        "An approval id does not belong to a call this chat's run waits on: it is made up, from another chat, or from an earlier pause. Nothing ran.",
      );
    approvals[call.id] = answer.approved
      ? true
      : {
          behavior: "deny",
          message:
            typeof answer.reason === "string" && answer.reason
              ? answer.reason.slice(0, 2000)
              : "The user denied this call.",
        };
  }
  return approvals;
}

/**
 * Regenerate: the session goes on from before the run that made `messageId` (a checkpoint id;
 * default the last run). The replaced branch is kept first as a fork of its own, whose id the
 * session's new first entry (`origin`) names; then the session is rewritten to the entries
 * before that run. Resolves the prompt to run again.
 */
export async function rewindForRegenerate(
  store: SessionStore,
  sessionId: string,
  messageId: unknown,
): Promise<{ prompt: Message["content"]; keptAs: string }> {
  const view = await readView(store, sessionId);
  if (!view || view.checkpoints.length === 0)
    throw new HttpRefusal(400, "nothing_to_regenerate", "This chat has no reply to regenerate.");
  if (view.status !== "idle")
    throw new HttpRefusal(
      409,
      "run_unfinished",
      "This chat's last run has not finished (it waits for approval, or was interrupted): answer it before regenerating.",
    );
  const checkpoint =
    (typeof messageId === "string" && view.checkpoints.find((each) => each.id === messageId)) ||
    view.checkpoints.at(-1)!;
  const input = view.entries.find(({ seq }) => seq === checkpoint.seq);
  if (input?.entry.type !== "input")
    throw new HttpRefusal(409, "session_unreadable", "The chat's log has no prompt to regenerate.");
  const keptAs = await forkSession(store, sessionId);
  await store.delete(sessionId);
  await forkSession(store, keptAs, { checkpointId: checkpoint.id, sessionId });
  return { prompt: input.entry.message.content, keptAs };
}
