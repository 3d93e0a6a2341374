// The calls a paused run waits for, across its tree of child runs (agent tools), and how the
// answers `resume` is given reach the level each call waits at.

import { ResumeError } from "../core/errors.ts";
import type { ResumeOptions } from "./agent-options.ts";
import type { PausedCall, PendingToolCall, RunState } from "./types.ts";

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
 * another waiting call of the tree shares is listed as `"<parentCallId>/<id>"`, or with more of
 * its path of agent calls (`"<call>/<call>/<id>"`) until the name is the tree's only one.
 */
export function pendingOf(state: RunState): PendingToolCall[] {
  const waiting = waitingIn(state);
  return waiting.flatMap((entry) => {
    if (entry.reason === "held") return [];
    const pending: PendingToolCall = {
      id: nameOf(entry, waiting),
      name: entry.name,
      input: entry.input,
      reason: entry.reason,
    };
    if (entry.approvalReason !== undefined) pending.approvalReason = entry.approvalReason;
    if (entry.parentCallId !== undefined) pending.parentCallId = entry.parentCallId;
    return [pending];
  });
}

/** The shortest name `find` resolves to this entry alone: its id, then with more of its path. */
function nameOf(entry: Waiting, waiting: Waiting[]): string {
  if (entry.via.length === 0) return entry.id;
  for (let length = 0; length <= entry.via.length; length++) {
    const name = [...entry.via.slice(entry.via.length - length), entry.id].join("/");
    const found = candidates(waiting, name);
    if (found.length === 1 && found[0] === entry) return name;
  }
  return [...entry.via, entry.id].join("/");
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
      // The child reads its own calls by id, deeper ones by their whole path from it.
      const childKey = [...below, entry.id].join("/");
      forChild[kind] = { ...forChild[kind], [childKey]: answer } as never;
    }
  };
  route("toolOutputs", answers.toolOutputs);
  route("approvals", answers.approvals as Record<string, unknown> | undefined);
  return routed;
}

/**
 * The waiting calls a key could name: this level's call of that id first; else the nested calls
 * of that id; else, for `"<call>/.../<id>"`, those whose path of agent calls ends with those calls.
 */
function candidates(waiting: Waiting[], key: string): Waiting[] {
  const own = waiting.find((entry) => entry.via.length === 0 && entry.id === key);
  if (own) return [own];
  const nested = waiting.filter((entry) => entry.via.length > 0 && entry.id === key);
  if (nested.length > 0) return nested;
  const parts = key.split("/");
  if (parts.length < 2) return [];
  const id = parts.at(-1)!;
  const path = parts.slice(0, -1);
  return waiting.filter(
    (entry) =>
      entry.id === id &&
      entry.via.length >= path.length &&
      path.every((call, index) => entry.via[entry.via.length - path.length + index] === call),
  );
}

/** The one waiting call a key names; a key that names several is refused, with their names. */
function find(waiting: Waiting[], key: string): Waiting | undefined {
  const found = candidates(waiting, key);
  if (found.length <= 1) return found[0];
  throw new ResumeError(
    `resume: "${key}" names ${found.length} calls waiting in different child runs; name each as the paused result's pending lists it (${found
      .map((entry) => JSON.stringify(nameOf(entry, waiting)))
      .join(" or ")}).`,
  );
}
