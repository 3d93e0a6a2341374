// Hooks across a tree of runs (design/policy.md, "Lifecycle hooks"): each agent's hook entries,
// resolved once per agent, and the chain a call of any run sees: its own agent's hooks first
// (depth 0), then each ancestor's tree-scoped hooks, outwards.

import { ConfigurationError, HookError } from "../core/errors.ts";
import { assertKnownOptions, describeValue, HOOK_KEYS } from "../core/options.ts";
import { untilAborted } from "./abortable.ts";

/** Every hook an agent may register. */
export type HookName =
  | "beforeModelCall"
  | "beforeToolCall"
  | "afterToolCall"
  | "onToolResult"
  | "userPromptSubmit"
  | "sessionStart"
  | "sessionEnd"
  | "stop"
  | "preCompact"
  | "subagentStart"
  | "subagentStop";

/** What a hook is told besides its context: which event it serves (a command hook needs it). */
export interface HookCall {
  event: HookName;
  /** Aborted when the run is (or, for `sessionEnd` and `subagentStop`, never). */
  signal?: AbortSignal;
  /** The hook's timeout, in ms. */
  timeoutMs?: number;
}

/** Hooks that run a command (`commandHook`): refused for `beforeModelCall` and under the hardened preset. */
const commandHooks = new WeakSet<object>();

export function markCommandHook(handler: object): void {
  commandHooks.add(handler);
}

export type AnyHandler = (context: any, call: HookCall) => unknown;

/** One hook as registered, checked. */
export interface HookEntry {
  handler: AnyHandler;
  scope: "self" | "tree";
  timeoutMs: number;
  /** The registering agent's option name, for errors: `hooks.stop`. */
  name: HookName;
}

export type HookEntries = Partial<Record<HookName, HookEntry>>;

/** Hooks of the agents above a run (tree-scoped only), innermost first, with the depth of each. */
export interface InheritedHooks {
  entries: HookEntries;
  /** The registering run's depth in the tree. */
  depth: number;
}

/** One hook to call for an event, with where it sits relative to the run. */
export interface ChainLink {
  entry: HookEntry;
  /** 0 for the agent's own hooks; how many levels below the registering agent the run is. */
  depth: number;
}

export const DEFAULT_HOOK_TIMEOUT_MS = 60_000;

/** Checks `hooks` and resolves each entry: a function, or `{ handler, scope?, timeoutMs? }`. */
export function resolveHooks(prefix: string, hooks: unknown, hardened = false): HookEntries {
  const entries = resolveEntries(prefix, hooks);
  for (const entry of Object.values(entries)) {
    if (!commandHooks.has(entry.handler)) continue;
    if (entry.name === "beforeModelCall")
      throw new ConfigurationError(
        `${prefix}: hooks.beforeModelCall cannot be a commandHook (Claude Code's hook format has no such event); write it as a function.`,
      );
    if (hardened)
      throw new ConfigurationError(
        `${prefix}: hooks.${entry.name} is a commandHook, which is refused under the hardened preset (its command would run outside the sandbox); write the hook as a function.`,
      );
  }
  return entries;
}

function resolveEntries(prefix: string, hooks: unknown): HookEntries {
  if (hooks === undefined) return {};
  assertKnownOptions(`${prefix}: hooks`, hooks, HOOK_KEYS);
  const entries: HookEntries = {};
  for (const [key, given] of Object.entries(hooks as object)) {
    if (given === undefined) continue;
    const name = key as HookName;
    const where = `${prefix}: hooks.${name}`;
    if (typeof given === "function") {
      entries[name] = {
        handler: given as AnyHandler,
        scope: "tree",
        timeoutMs: DEFAULT_HOOK_TIMEOUT_MS,
        name,
      };
      continue;
    }
    if (typeof given !== "object" || given === null || Array.isArray(given))
      throw new ConfigurationError(
        `${where} must be a function or { handler, scope: "self" | "tree" }, received ${describeValue(given)}.`,
      );
    const { handler, scope, timeoutMs, ...rest } = given as Record<string, unknown>;
    const extra = Object.keys(rest);
    if (extra.length > 0)
      throw new ConfigurationError(
        `${where} has unknown keys ${extra.join(", ")}; an entry is { handler, scope, timeoutMs }.`,
      );
    if (typeof handler !== "function")
      throw new ConfigurationError(
        `${where}.handler must be a function, received ${describeValue(handler)}.`,
      );
    if (scope !== undefined && scope !== "self" && scope !== "tree")
      throw new ConfigurationError(
        `${where}.scope must be "self" or "tree", received ${describeValue(scope)}.`,
      );
    if (
      timeoutMs !== undefined &&
      (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0)
    )
      throw new ConfigurationError(
        `${where}.timeoutMs must be a positive number of milliseconds, received ${describeValue(timeoutMs)}.`,
      );
    entries[name] = {
      handler: handler as AnyHandler,
      scope: (scope as "self" | "tree" | undefined) ?? "tree",
      timeoutMs: (timeoutMs as number | undefined) ?? DEFAULT_HOOK_TIMEOUT_MS,
      name,
    };
  }
  return entries;
}

/** The entries a child inherits from this agent: its tree-scoped ones. */
export function treeScoped(entries: HookEntries): HookEntries {
  const out: HookEntries = {};
  for (const [name, entry] of Object.entries(entries) as [HookName, HookEntry][])
    if (entry.scope === "tree") out[name] = entry;
  return out;
}

/** Where a run sits for its hooks: its own entries, the inherited ones, its depth. */
export interface HookPlace {
  own: HookEntries;
  inherited?: readonly InheritedHooks[];
  depth: number;
}

/** The hooks an event of this run calls, innermost first; empty (and cheap) when there are none. */
export function chainOf(place: HookPlace, name: HookName): ChainLink[] {
  const own = place.own[name];
  const inherited = place.inherited;
  if (!inherited || inherited.length === 0) return own ? [{ entry: own, depth: 0 }] : NONE;
  const chain: ChainLink[] = own ? [{ entry: own, depth: 0 }] : [];
  for (const level of inherited) {
    const entry = level.entries[name];
    if (entry) chain.push({ entry, depth: place.depth - level.depth });
  }
  return chain;
}

/** Whether any hook of this run serves `name`. */
export function hasHook(place: HookPlace, name: HookName): boolean {
  if (place.own[name]) return true;
  return place.inherited?.some((level) => level.entries[name] !== undefined) === true;
}

const NONE: ChainLink[] = [];

/**
 * Calls one hook with its timeout (and the run's signal): resolves with its answer, rejects with
 * a `HookError` naming the hook when it throws or runs out of time, or with the signal's reason.
 */
export function callHook(
  link: ChainLink,
  context: object,
  call: HookCall,
  signal: AbortSignal,
): Promise<unknown> {
  const { entry } = link;
  const label = hookLabel(link);
  let answer: unknown;
  try {
    answer = entry.handler(context, { ...call, signal, timeoutMs: entry.timeoutMs });
  } catch (error) {
    return Promise.reject(hookError(label, error));
  }
  if (typeof (answer as { then?: unknown } | null)?.then !== "function")
    return Promise.resolve(answer);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new HookError(
            `The ${label} hook did not answer within ${entry.timeoutMs} ms (its timeoutMs).`,
          ),
        ),
      entry.timeoutMs,
    );
    timer.unref?.();
  });
  return untilAborted(Promise.race([answer as Promise<unknown>, timeout]), signal).then(
    (value) => {
      clearTimeout(timer);
      return value;
    },
    (error: unknown) => {
      clearTimeout(timer);
      if (signal.aborted) throw error;
      throw error instanceof HookError ? error : hookError(label, error);
    },
  );
}

/** `stop`, or `stop (of an agent 1 level up)` for an ancestor's. */
export function hookLabel(link: ChainLink): string {
  return link.depth === 0
    ? link.entry.name
    : `${link.entry.name} (of the agent ${link.depth} level${link.depth === 1 ? "" : "s"} up)`;
}

function hookError(label: string, error: unknown): HookError {
  if (error instanceof HookError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new HookError(`The ${label} hook failed: ${message}`, { cause: error });
}

/** A hook's context: the event's fields, its depth, and the call that started the run below it. */
export function contextFor<T extends object>(
  link: ChainLink,
  base: T,
  parentCallId: string | undefined,
): T & { depth: number; parentCallId?: string } {
  const context: T & { depth: number; parentCallId?: string } = { ...base, depth: link.depth };
  if (link.depth > 0 && parentCallId !== undefined) context.parentCallId = parentCallId;
  return context;
}

/** `maxStopContinuations`: a whole number of 0 or more. */
export function checkStopContinuations(prefix: string, stops: unknown): void {
  if (stops !== undefined && (typeof stops !== "number" || !Number.isInteger(stops) || stops < 0))
    throw new ConfigurationError(
      `${prefix}: maxStopContinuations must be a whole number of 0 or more, received ${describeValue(stops)}.`,
    );
}
