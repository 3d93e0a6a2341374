// Reading other SDKs' objects by shape: neither SDK is imported, not even for its types.

import { ConfigurationError } from "../core/errors.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";
import type { TimeoutBehavior, ToolOptions, ToolRuntime, ToolSecurity } from "../tools/types.ts";

/** A plain object (not null, not an array): what a tool of either SDK is. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A function tool made by `@openai/agents`' `tool()`: `type: "function"` and its own `invoke`. */
export function looksLikeOpenAIAgentsTool(value: unknown): boolean {
  return isObject(value) && value.type === "function" && typeof value.invoke === "function";
}

/** What a value is, for a message: "an array", "a function", "\"x\"", or "a Map" where it has a class. */
export function describeArgument(value: unknown): string {
  if (value instanceof Map) return "a Map";
  if (value instanceof Set) return "a Set";
  if (typeof value === "function") return "a function";
  return describeValue(value);
}

/**
 * ai's preliminary results (an `execute` that returns an async iterable): each yield is progress
 * and the last one is the result. Each yield goes out as progress at once (as ai streams it);
 * the engine turns this generator's yields into `tool_update` events and its return into the
 * result. A value that arrives after the call's signal was aborted is dropped, and the tool's
 * iterable is closed (as it is when the engine closes this generator).
 */
export async function* lastYieldIsResult(
  iterable: AsyncIterable<unknown>,
  signal: AbortSignal,
): AsyncGenerator<unknown, unknown, undefined> {
  let last: unknown;
  for await (const value of iterable) {
    signal.throwIfAborted();
    last = value;
    yield value;
  }
  return last;
}

export function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return (
    value !== null &&
    (typeof value === "object" || typeof value === "function") &&
    typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === "function"
  );
}

/**
 * What skein's own tool options add to tools written for another SDK, for every tool adapted in
 * one call: `security` (the hardened preset requires it), a timeout, and scheduling hints.
 */
export interface AdaptedToolOptions {
  security?: ToolSecurity | undefined;
  timeoutMs?: number | undefined;
  timeoutBehavior?: TimeoutBehavior | undefined;
  /** True when the tools' calls may overlap others in mode "safe". */
  concurrencySafe?: boolean | undefined;
  idempotent?: boolean | undefined;
}

const ADAPTED_KEYS: ReadonlySet<string> = new Set([
  "security",
  "timeoutMs",
  "timeoutBehavior",
  "concurrencySafe",
  "idempotent",
]);

/** Checks the options strictly (prefix `owner`) and returns them as skein tool options. */
export function adaptedToolOptions(
  owner: string,
  options: AdaptedToolOptions | undefined,
): ToolOptions<unknown> {
  assertKnownOptions(owner, options, ADAPTED_KEYS);
  if (options === undefined) return {};
  const { concurrencySafe, ...rest } = options;
  if (concurrencySafe !== undefined && typeof concurrencySafe !== "boolean")
    throw new ConfigurationError(
      `${owner}: concurrencySafe must be true or false, received ${describeValue(concurrencySafe)}.`,
    );
  return concurrencySafe ? { ...rest, isConcurrencySafe: () => true } : rest;
}

/**
 * A tool's `needsApproval` as skein's runtime check: `true` always asks, `false` or none never
 * adds one, a function is called through `call` (each SDK passes its own arguments). Anything else
 * is refused now: a tool that meant to ask must not run without asking.
 */
export function readNeedsApproval(
  owner: string,
  tool: Record<string, unknown>,
  call: (
    check: (...args: unknown[]) => unknown,
    input: unknown,
    context: { callId: string },
  ) => unknown,
): ToolRuntime["needsApproval"] {
  const given = tool.needsApproval;
  if (given === undefined || given === false) return undefined;
  if (given === true) return () => true;
  if (typeof given === "function")
    return (input, context) => call(given as (...args: unknown[]) => unknown, input, context);
  throw new ConfigurationError(
    `${owner}: needsApproval must be true, false or a function, received ${describeArgument(given)}.`,
  );
}
