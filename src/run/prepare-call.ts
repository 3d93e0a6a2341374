import { messageForModel } from "../errors.ts";
import { runtimeOf } from "../tools/definition.ts";
import { formatValidationIssues } from "../tools/schema.ts";
import type { ToolRuntime } from "../tools/types.ts";
import { untilAborted } from "./abortable.ts";
import {
  type CallEnvironment,
  type CallRecord,
  cancelledResult,
  describeKind,
  errorResult,
  hookContext,
  isObject,
  isPlainObject,
} from "./call.ts";
import type { EngineConfig } from "./config.ts";
import type { AgentEvent } from "./types.ts";

/**
 * Emits `tool_start`, then finds the tool, rewrites and validates the input, runs
 * `beforeToolCall`, and reads the concurrency rules. Calls that fail here get their result now
 * and never reach a handler.
 */
export async function prepareCall(record: CallRecord, env: CallEnvironment): Promise<void> {
  const { config } = env;
  const tool = config.visible.has(record.name) ? config.tools.get(record.name) : undefined;
  const startEvent: AgentEvent = {
    type: "tool_start",
    callId: record.id,
    name: record.name,
    input: record.rawInput,
  };
  if (tool?.label !== undefined) startEvent.label = tool.label;
  env.emit(startEvent);
  record.startedAt = performance.now();
  if (record.result) return;

  if (!tool) {
    const available = [...config.visible].join(", ") || "none";
    record.result = errorResult(
      `Tool "${record.name}" does not exist. Available tools: ${available}.`,
      "not_found",
    );
    return;
  }
  record.tool = tool;
  const runtime = runtimeOf(tool);
  record.runtime = runtime;

  if (!isPlainObject(record.rawInput)) {
    record.result = errorResult(
      `Invalid input for tool "${record.name}": the input must be a JSON object, received ${describeKind(record.rawInput)}. Call the tool again with an object of its parameters.`,
      "invalid_input",
    );
    return;
  }
  let input: unknown = record.rawInput;
  if (runtime.prepareArguments) {
    try {
      input = runtime.prepareArguments({ ...record.rawInput });
      if (!isPlainObject(input)) {
        record.result = errorResult(
          `Tool "${record.name}" could not prepare its arguments: its prepareArguments returned ${describeKind(input)}; it must return an object.`,
          "invalid_input",
        );
        return;
      }
    } catch (error) {
      record.result = errorResult(
        `Tool "${record.name}" could not prepare its arguments: ${messageForModel(error)}`,
        "invalid_input",
      );
      return;
    }
  }
  if (!(await validateInto(record, runtime, input))) return;

  if (config.hooks.beforeToolCall) {
    let decision: unknown;
    try {
      decision = await untilAborted(
        config.hooks.beforeToolCall(hookContext(record, env)),
        env.signal,
      );
    } catch (error) {
      if (env.signal.aborted) {
        record.result = cancelledResult(record, "before it started");
        return;
      }
      record.result = errorResult(
        `The beforeToolCall hook failed for tool "${record.name}": ${messageForModel(error)}`,
        "blocked",
      );
      return;
    }
    if (isObject(decision) && decision.block === true) {
      const reason =
        typeof decision.reason === "string" && decision.reason
          ? decision.reason
          : "no reason given";
      record.result = errorResult(`Tool call blocked: ${reason}`, "blocked");
      return;
    }
    if (
      isObject(decision) &&
      "input" in decision &&
      !(await validateInto(record, runtime, decision.input))
    )
      return;
  }
  classify(record, runtime, env.config);
}

async function validateInto(
  record: CallRecord,
  runtime: ToolRuntime,
  input: unknown,
): Promise<boolean> {
  let outcome: Awaited<ReturnType<ToolRuntime["validate"]>>;
  try {
    outcome = await runtime.validate(input);
  } catch (error) {
    record.result = errorResult(
      `Invalid input for tool "${record.name}": ${messageForModel(error)}`,
      "invalid_input",
    );
    return false;
  }
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
function classify(record: CallRecord, runtime: ToolRuntime, config: EngineConfig): void {
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
