// A call's input once the model sent it: validated against the tool's schema (the validated
// value is what runs), and read by the tool's concurrency rules.

import { messageForModel } from "../core/errors.ts";
import { formatValidationIssues } from "../tools/schema.ts";
import type { ToolRuntime } from "../tools/types.ts";
import { type CallRecord, errorResult, isThenable } from "./call.ts";
import type { EngineConfig } from "./config.ts";

/** Validates `input` into `record.input`; false (with an error result set) when it fails. */
export async function validateInto(
  record: CallRecord,
  runtime: ToolRuntime,
  input: unknown,
): Promise<boolean> {
  return validateNow(record, runtime, input);
}

/** `validateInto`, answered at once when the schema answers at once (most do). */
function validateNow(
  record: CallRecord,
  runtime: ToolRuntime,
  input: unknown,
): boolean | PromiseLike<boolean> {
  let validated: ReturnType<ToolRuntime["validate"]>;
  try {
    validated = runtime.validate(input);
  } catch (error) {
    return invalid(record, error);
  }
  if (isThenable(validated))
    return validated.then(
      (outcome) => applyValidation(record, input, outcome),
      (error: unknown) => invalid(record, error),
    );
  return applyValidation(record, input, validated);
}

function invalid(record: CallRecord, error: unknown): false {
  record.result = errorResult(
    `Invalid input for tool "${record.name}": ${messageForModel(error)}`,
    "invalid_input",
  );
  return false;
}

function applyValidation(
  record: CallRecord,
  input: unknown,
  outcome: Awaited<ReturnType<ToolRuntime["validate"]>>,
): boolean {
  if (!outcome.ok) {
    record.result = errorResult(
      formatValidationIssues(record.name, input, outcome.issues),
      "invalid_input",
      { issues: outcome.issues },
    );
    return false;
  }
  record.input = outcome.value;
  return true;
}

/** Reads the concurrency rules against the validated input; a throwing rule means "run alone". */
export function classify(record: CallRecord, runtime: ToolRuntime, config: EngineConfig): void {
  if (config.mode === "all") record.exclusive = false;
  else if (config.mode === "safe" && runtime.isConcurrencySafe) {
    try {
      record.exclusive = runtime.isConcurrencySafe(record.input) !== true;
    } catch {
      record.exclusive = true;
    }
  }
  if (runtime.resourceKeys) {
    try {
      const keys: unknown = runtime.resourceKeys(record.input);
      const list = resourceKeyList(keys);
      // A rule that answers something unreadable fails closed: the call runs alone.
      if (list) record.keys = list;
      else record.exclusive = true;
    } catch {
      record.exclusive = true;
    }
  }
}

/** Keys as a list: an array or any iterable of them, or one string; nothing means no keys. */
function resourceKeyList(keys: unknown): string[] | undefined {
  if (keys === undefined || keys === null) return [];
  if (typeof keys === "string") return [keys];
  if (typeof keys === "object" && Symbol.iterator in keys)
    return Array.from(keys as Iterable<unknown>, String);
  return undefined;
}
