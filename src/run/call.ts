import { homedir } from "node:os";
import { describeThrown, ToolTimeoutError } from "../errors.ts";
import type { ToolResultBlock } from "../model/messages.ts";
import { runtimeOf } from "../tools/definition.ts";
import {
  assertSerialisable,
  capResultContent,
  InvalidToolResultError,
  toolResultFromReturn,
} from "../tools/result.ts";
import { formatValidationIssues } from "../tools/schema.ts";
import type {
  CustomEvent,
  ToolCall,
  ToolContext,
  ToolDefinition,
  ToolResult,
  ToolRuntime,
} from "../tools/types.ts";
import type { EngineConfig } from "./config.ts";
import type { Schedulable } from "./schedule.ts";
import type { AgentEvent } from "./types.ts";

/** Why a call ended in an error result, for apps (`details.reason`); the model reads the text. */
export type FailureReason =
  | "not_found"
  | "invalid_input"
  | "blocked"
  | "rejected"
  | "threw"
  | "timeout"
  | "aborted"
  | "invalid_result"
  | "duplicate_id"
  | "incomplete"
  | "no_output";

/** One tool call as it moves through the batch. Mutated in place by the three phases. */
export interface CallRecord extends Schedulable {
  id: string;
  name: string;
  /** The input as the model sent it. */
  rawInput: unknown;
  /** The validated input the handler gets (after prepareArguments, coercion and hooks). */
  input: unknown;
  tool?: ToolDefinition;
  runtime?: ToolRuntime;
  /** Set once the call has its final result (before finalize). */
  result?: ToolResult;
  /** The handler (or onToolCalled) was invoked. */
  reachedHandler: boolean;
  /** Waiting for the app: the run pauses. */
  pending?: "external";
  preliminaryResults: unknown[];
  startedAt: number;
  /** When the call got its result (its handler settled, or it was answered without one). */
  finishedAt?: number;
  /** A `fail_run` timeout: the run ends as failed after the batch. */
  failRun?: ToolTimeoutError;
  /** An `afterToolCall` hook asked to stop the run after this batch. */
  stop?: boolean;
}

/** What the call phases need from the run. */
export interface CallEnvironment {
  config: EngineConfig;
  sessionId: string;
  signal: AbortSignal;
  emit: (event: AgentEvent) => void;
}

const RESERVED_EVENT_TYPES = new Set([
  "run_start",
  "turn_start",
  "text_delta",
  "thinking_delta",
  "retry",
  "message",
  "tool_start",
  "tool_update",
  "tool_end",
  "turn_end",
  "hook_error",
  "result",
]);

export function newCallRecord(id: string, name: string, rawInput: unknown): CallRecord {
  return {
    id,
    name,
    rawInput,
    input: rawInput,
    exclusive: true,
    keys: [],
    reachedHandler: false,
    preliminaryResults: [],
    startedAt: 0,
  };
}

export function errorResult(
  message: string,
  reason: FailureReason,
  extra?: Record<string, unknown>,
): ToolResult {
  return { content: message, isError: true, details: { reason, ...extra } };
}

export function toolCallOf(record: CallRecord): ToolCall {
  return { id: record.id, name: record.name, input: record.rawInput, kind: "tool" };
}

// ---------------------------------------------------------------- phase 1: prepare (in call order)

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
        `Tool "${record.name}" could not prepare its arguments: ${describeThrown(error).message}`,
        "invalid_input",
      );
      return;
    }
  }
  if (!(await validateInto(record, runtime, input))) return;

  if (config.hooks.beforeToolCall) {
    let decision: unknown;
    try {
      decision = await config.hooks.beforeToolCall(hookContext(record, env));
    } catch (error) {
      record.result = errorResult(
        `The beforeToolCall hook failed for tool "${record.name}": ${describeThrown(error).message}`,
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
      `Invalid input for tool "${record.name}": ${describeThrown(error).message}`,
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
      const keys = runtime.resourceKeys(record.input);
      record.keys = Array.isArray(keys) ? keys.map(String) : [];
    } catch {
      record.exclusive = true;
    }
  }
}

// ---------------------------------------------------------------- phase 2: execute (concurrently)

type Settled =
  | { kind: "value"; value: unknown }
  | { kind: "threw"; error: unknown }
  | { kind: "timeout" }
  | { kind: "pause" };

/** Runs one call's handler with its signal, timeout and progress. Never rejects. */
export async function executeCall(record: CallRecord, env: CallEnvironment): Promise<void> {
  const runtime = record.runtime!;
  const tool = record.tool!;
  record.reachedHandler = true;

  // Only a call with a timeout needs a signal of its own; otherwise the run's signal is enough.
  const controller = tool.timeoutMs !== undefined ? new AbortController() : undefined;
  const forwardAbort = () => controller?.abort(env.signal.reason);
  if (controller) {
    if (env.signal.aborted) forwardAbort();
    else env.signal.addEventListener("abort", forwardAbort, { once: true });
  }
  let ended = false;
  const context: ToolContext = {
    callId: record.id,
    call: toolCallOf(record),
    sessionId: env.sessionId,
    signal: controller?.signal ?? env.signal,
    emit: (event: CustomEvent) => {
      if (!isObject(event) || typeof event.type !== "string") {
        throw new TypeError(
          `ctx.emit needs an event object with a string "type", received ${describeKind(event)}.`,
        );
      }
      if (RESERVED_EVENT_TYPES.has(event.type)) {
        throw new TypeError(
          `ctx.emit: "${event.type}" is one of skein's own event types; use a namespaced type such as "app.${event.type}".`,
        );
      }
      if (!ended) env.emit(event as AgentEvent);
    },
    update: (partial: unknown) => {
      // After the call ended, progress would arrive after its tool_end: dropped by contract.
      if (ended) return;
      record.preliminaryResults.push(partial);
      env.emit({ type: "tool_update", callId: record.id, name: record.name, update: partial });
    },
  };

  let timer: NodeJS.Timeout | undefined;
  let settled: Settled;
  try {
    const work = invoke(record, runtime, context);
    if (controller) {
      const timeoutMs = tool.timeoutMs!;
      const timeout = new Promise<Settled>((resolve) => {
        timer = setTimeout(() => {
          controller.abort(new ToolTimeoutError(record.name, timeoutMs));
          resolve({ kind: "timeout" });
        }, timeoutMs);
      });
      settled = await Promise.race([work, timeout]);
    } else {
      settled = await work;
    }
  } finally {
    ended = true;
    if (timer) clearTimeout(timer);
    record.finishedAt = performance.now();
    if (controller) env.signal.removeEventListener("abort", forwardAbort);
  }
  await settle(record, runtime, settled, env);
}

/** Calls onToolCalled and the handler; drains an async generator into progress updates. */
async function invoke(
  record: CallRecord,
  runtime: ToolRuntime,
  context: ToolContext,
): Promise<Settled> {
  try {
    if (runtime.onCalled) {
      const answer = await runtime.onCalled(record.input, context);
      if (answer === null) return { kind: "pause" };
      if (answer !== undefined) return { kind: "value", value: answer };
    }
    if (!runtime.execute) return { kind: "pause" };
    const returned = runtime.execute(record.input, context);
    if (isAsyncIterator(returned)) {
      while (true) {
        if (context.signal.aborted) {
          // Stop the generator at its next yield; its late value would be dropped anyway.
          returned.return(undefined).catch(() => {});
          throw context.signal.reason;
        }
        const step = await returned.next();
        if (step.done) return { kind: "value", value: step.value };
        context.update(step.value);
      }
    }
    return { kind: "value", value: await returned };
  } catch (error) {
    return { kind: "threw", error };
  }
}

async function settle(
  record: CallRecord,
  runtime: ToolRuntime,
  settled: Settled,
  env: CallEnvironment,
): Promise<void> {
  switch (settled.kind) {
    case "pause":
      record.pending = "external";
      return;
    case "timeout": {
      const timeoutMs = record.tool!.timeoutMs!;
      if (runtime.timeoutBehavior === "fail_run")
        record.failRun = new ToolTimeoutError(record.name, timeoutMs);
      record.result = errorResult(
        `Tool "${record.name}" timed out after ${timeoutMs} ms and was stopped. Try a smaller request, or another approach.`,
        "timeout",
        { timeoutMs },
      );
      return;
    }
    case "threw":
      record.result = env.signal.aborted
        ? cancelledResult(record, "while it was running")
        : errorResult(
            `Tool "${record.name}" failed: ${redactHome(describeThrown(settled.error).message)}`,
            "threw",
            { error: describeThrown(settled.error) },
          );
      return;
    case "value":
      record.result = await resultFromValue(record, runtime, settled.value);
  }
}

/** Normalises a returned (or app-provided) value; a value skein cannot send becomes an error result. */
export async function resultFromValue(
  record: CallRecord,
  runtime: ToolRuntime,
  value: unknown,
): Promise<ToolResult> {
  try {
    const result = await runtime.toResult(value);
    assertSerialisable(result);
    return result;
  } catch (error) {
    const reason =
      error instanceof InvalidToolResultError ? error.message : describeThrown(error).message;
    return errorResult(
      `Tool "${record.name}" returned a result skein cannot use: ${reason}`,
      "invalid_result",
    );
  }
}

export function cancelledResult(
  record: CallRecord,
  when: "before it started" | "while it was running",
): ToolResult {
  return errorResult(
    `Tool "${record.name}" was cancelled ${when}: the run was aborted.`,
    "aborted",
  );
}

// ---------------------------------------------------------------- phase 3: finalize (in call order)

/**
 * Runs `afterToolCall` (calls that reached their handler) and `onToolResult`, emits `tool_end`,
 * and returns the tool_result block, capped for the model.
 */
export async function finalizeCall(
  record: CallRecord,
  env: CallEnvironment,
): Promise<ToolResultBlock> {
  const { hooks } = env.config;
  let result = record.result!;
  if (hooks.afterToolCall && record.reachedHandler) {
    try {
      const decision: unknown = await hooks.afterToolCall({
        ...hookContext(record, env),
        result,
        isError: result.isError === true,
      });
      if (isObject(decision) && decision.stop === true) record.stop = true;
      else if (isObject(decision) && "result" in decision) {
        try {
          result = toolResultFromReturn(decision.result);
          assertSerialisable(result);
        } catch (error) {
          result = errorResult(
            `The afterToolCall hook returned an unusable result for tool "${record.name}": ${describeThrown(error).message}`,
            "invalid_result",
          );
        }
      }
    } catch (error) {
      result = errorResult(
        `The afterToolCall hook failed for tool "${record.name}": ${describeThrown(error).message}`,
        "threw",
      );
    }
    record.result = result;
  }
  const isError = result.isError === true;
  if (hooks.onToolResult) {
    try {
      await hooks.onToolResult({ ...hookContext(record, env), result, isError });
    } catch (error) {
      env.emit({
        type: "hook_error",
        hook: "onToolResult",
        callId: record.id,
        name: record.name,
        error: describeThrown(error),
      });
    }
  }
  env.emit({
    type: "tool_end",
    callId: record.id,
    name: record.name,
    result,
    isError,
    details: result.details,
    durationMs: (record.finishedAt ?? performance.now()) - record.startedAt,
  });
  const maxChars = record.tool?.maxResultChars ?? env.config.maxResultChars;
  return {
    type: "tool_result",
    tool_use_id: record.id,
    content: capResultContent(result.content, maxChars),
    is_error: isError,
  };
}

function hookContext(record: CallRecord, env: CallEnvironment) {
  return {
    callId: record.id,
    name: record.name,
    input: record.input,
    sessionId: env.sessionId,
    signal: env.signal,
  };
}

function isAsyncIterator(value: unknown): value is AsyncGenerator<unknown, unknown, undefined> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { next?: unknown }).next === "function" &&
    typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === "function"
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return isObject(value) && !Array.isArray(value);
}

function describeKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string")
    return `the string ${JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value)}`;
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** The user's home directory is nobody else's business, and the model does not need it. */
const home = homedir();
function redactHome(text: string): string {
  return home.length > 1 ? text.split(home).join("~") : text;
}
