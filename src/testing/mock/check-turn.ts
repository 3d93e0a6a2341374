import { ConfigurationError } from "../../core/errors.ts";
import { assertKnownOptions, describeValue } from "../../core/options.ts";
import type { MockTurn } from "./types.ts";

/** What the model answers; everything else on a turn is a fault, which `times` limits. */
const CONTENT_KEYS = ["text", "thinking", "toolCalls", "usage", "stopReason", "model"] as const;

const FAULT_KEYS = [
  "times",
  "status",
  "error",
  "rawBody",
  "html",
  "contentType",
  "headers",
  "delayMs",
  "hang",
  "dropConnection",
  "gapMs",
  "cutAfter",
  "endAfter",
  "stallAfter",
  "keepAlive",
  "errorEvent",
  "malformed",
  "chunkBytes",
  "crlf",
  "trickleMs",
] as const;

const TURN_KEYS: ReadonlySet<string> = new Set([...CONTENT_KEYS, ...FAULT_KEYS]);

/**
 * Checks a turn strictly, so a misspelt fault fails the test that wrote it instead of silently
 * playing a healthy turn. Throws a `ConfigurationError` naming the turn and the option.
 */
export function checkTurn(turn: unknown, prefix: string): asserts turn is MockTurn {
  if (typeof turn !== "object" || turn === null || Array.isArray(turn)) {
    throw new ConfigurationError(
      `${prefix}: a turn must be an object, received ${describeValue(turn)}.`,
    );
  }
  assertKnownOptions(prefix, turn, TURN_KEYS);
  const fields = turn as Record<string, unknown>;
  for (const name of ["times", "chunkBytes"]) {
    const value = fields[name];
    if (value !== undefined && !(Number.isInteger(value) && (value as number) >= 1)) {
      throw new ConfigurationError(
        `${prefix}: ${name} must be a positive integer, received ${describeValue(value)}.`,
      );
    }
  }
  for (const name of ["delayMs", "gapMs"]) {
    const value = fields[name];
    if (value !== undefined && !(typeof value === "number" && value >= 0)) {
      throw new ConfigurationError(
        `${prefix}: ${name} must be a number of milliseconds, received ${describeValue(value)}.`,
      );
    }
  }
  const trickleMs = fields.trickleMs;
  if (trickleMs !== undefined) {
    if (!(typeof trickleMs === "number" && trickleMs > 0 && Number.isFinite(trickleMs))) {
      throw new ConfigurationError(
        `${prefix}: trickleMs must be a positive number of milliseconds, received ${describeValue(trickleMs)}.`,
      );
    }
    if (!fields.text && !fields.thinking && !(fields.toolCalls as unknown[] | undefined)?.length) {
      throw new ConfigurationError(
        `${prefix}: trickleMs keeps adding to the turn's last block: give the turn text, thinking or toolCalls.`,
      );
    }
  }
  const status = fields.status;
  if (status === undefined) return;
  if (!(Number.isInteger(status) && (status as number) >= 100 && (status as number) <= 599)) {
    throw new ConfigurationError(
      `${prefix}: status must be an HTTP status, received ${describeValue(status)}.`,
    );
  }
  if ((status as number) < 400 && fields.rawBody === undefined) {
    throw new ConfigurationError(
      `${prefix}: status ${status} is not an error status. Give rawBody to answer it with a body of your own, or leave status out for a normal answer.`,
    );
  }
}

/** The turn without its faults: what is played once `times` attempts have failed. */
export function withoutFaults(turn: MockTurn): MockTurn {
  const plain: Record<string, unknown> = {};
  for (const key of CONTENT_KEYS) if (turn[key] !== undefined) plain[key] = turn[key];
  return plain as MockTurn;
}
