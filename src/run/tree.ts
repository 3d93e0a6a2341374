// The calls a paused run waits for, across its tree of child runs (agent tools), and how the
// answers `resume` is given reach the level each call waits at.

import { ResumeError } from "../errors.ts";
import type { PausedCall, PendingToolCall, ResumeOptions, RunState } from "./types.ts";

/** One call waiting somewhere in the tree. */
interface Waiting {
  id: string;
  name: string;
  input: unknown;
  reason: "external" | "approval" | "held";
  approvalReason?: string;
  /** The agent tool call whose child run holds it; undefined at the top level. */
  parentCallId?: string;
  /** Agent tool call ids from the top level down to the run that holds it. */
  via: string[];
}

/** Every waiting call of a state, its children's included (depth first, in call order). */
function waitingIn(state: unknown, via: string[] = [], depth = 0): Waiting[] {
  const calls = (state as Partial<RunState> | null)?.batch?.calls;
  // A malformed nested state is refused when it is restored; here it simply holds nothing.
  if (!Array.isArray(calls) || depth > 64) return [];
  const found: Waiting[] = [];
  for (const call of calls as PausedCall[]) {
    if (typeof call !== "object" || call === null || call.status !== "pending") continue;
    if (call.reason === "child") {
      found.push(...waitingIn(call.state, [...via, call.id], depth + 1));
      continue;
    }
    const entry: Waiting = {
      id: call.id,
      name: call.name,
      input: call.input,
      reason: call.reason,
      via,
    };
    if (call.approvalReason !== undefined) entry.approvalReason = call.approvalReason;
    if (via.length > 0) entry.parentCallId = via.at(-1)!;
    found.push(entry);
  }
  return found;
}

/**
 * What a paused result lists: calls waiting for the app or for approval, at any depth, each with
 * the agent call it waits under (`parentCallId`). Ids are the calls' own; a nested call whose id
 * another waiting call of the tree shares is listed as `"<parentCallId>/<id>"`, so every listed
 * id names one call.
 */
export function pendingOf(state: RunState): PendingToolCall[] {
  const waiting = waitingIn(state);
  const count = new Map<string, number>();
  for (const entry of waiting) count.set(entry.id, (count.get(entry.id) ?? 0) + 1);
  return waiting.flatMap((entry) => {
    if (entry.reason === "held") return [];
    const shared = count.get(entry.id)! > 1 && entry.parentCallId !== undefined;
    const pending: PendingToolCall = {
      id: shared ? `${entry.parentCallId}/${entry.id}` : entry.id,
      name: entry.name,
      input: entry.input,
      reason: entry.reason,
    };
    if (entry.approvalReason !== undefined) pending.approvalReason = entry.approvalReason;
    if (entry.parentCallId !== undefined) pending.parentCallId = entry.parentCallId;
    return [pending];
  });
}

type Answers = Pick<ResumeOptions, "toolOutputs" | "approvals">;

/** The answers for this level's own calls, and those for each paused child, keyed as that child reads them. */
export interface RoutedAnswers {
  own: { toolOutputs: Record<string, unknown>; approvals: Record<string, unknown> };
  children: Map<string, Answers>;
}

/**
 * Sends each answer to the level its call waits at. A key is a call's own id (this level's calls
 * first, then a nested call no other nested call shares the id with) or `"<parentCallId>/<id>"`.
 */
export function routeAnswers(state: RunState, answers: Answers): RoutedAnswers {
  const waiting = waitingIn(state);
  const routed: RoutedAnswers = { own: { toolOutputs: {}, approvals: {} }, children: new Map() };
  const route = (kind: "toolOutputs" | "approvals", given: Record<string, unknown> | undefined) => {
    if (given === undefined) return;
    for (const [key, answer] of Object.entries(given)) {
      const entry = find(waiting, key);
      // Unknown keys stay at this level, where `restoreRun` reports them.
      if (!entry || entry.via.length === 0) {
        routed.own[kind][key] = answer;
        continue;
      }
      const [child, ...below] = entry.via;
      const forChild = routed.children.get(child!) ?? {};
      routed.children.set(child!, forChild);
      const childKey = below.length === 0 ? entry.id : `${entry.parentCallId}/${entry.id}`;
      forChild[kind] = { ...forChild[kind], [childKey]: answer } as never;
    }
  };
  route("toolOutputs", answers.toolOutputs);
  route("approvals", answers.approvals as Record<string, unknown> | undefined);
  return routed;
}

function find(waiting: Waiting[], key: string): Waiting | undefined {
  const own = waiting.find((entry) => entry.via.length === 0 && entry.id === key);
  if (own) return own;
  const nested = waiting.filter((entry) => entry.via.length > 0 && entry.id === key);
  if (nested.length === 1) return nested[0];
  if (nested.length > 1)
    throw new ResumeError(
      `resume: "${key}" names ${nested.length} calls waiting in different child runs; name it as "<parentCallId>/${key}" (${nested.map((entry) => `"${entry.parentCallId}/${key}"`).join(" or ")}), as the paused result's pending lists it.`,
    );
  const slash = key.lastIndexOf("/");
  if (slash <= 0) return undefined;
  const parent = key.slice(0, slash);
  const id = key.slice(slash + 1);
  const matches = waiting.filter((entry) => entry.parentCallId === parent && entry.id === id);
  return matches.length === 1 ? matches[0] : undefined;
}
