import { describeThrown } from "../errors.ts";
import type { ToolResultBlock } from "../model/messages.ts";
import {
  type CallEnvironment,
  type CallRecord,
  cancelledResult,
  errorResult,
  toolCallOf,
} from "./call.ts";
import { executeCall } from "./execute-call.ts";
import { finalizeCall } from "./finalize-call.ts";
import { prepareCall } from "./prepare-call.ts";
import { schedule } from "./schedule.ts";

export interface BatchOutcome {
  /** One block per call in call order; undefined where the call is still pending (paused). */
  blocks: (ToolResultBlock | undefined)[];
  paused: boolean;
  aborted: boolean;
}

/**
 * Runs one model response's tool calls (DESIGN decisions 4-6):
 * 1. the batch policy sees every call before any handler runs;
 * 2. `tool_start` and `beforeToolCall` run in call order;
 * 3. handlers run under the concurrency rules and may finish in any order;
 * 4. `afterToolCall`, `onToolResult`, `tool_end` and the result blocks follow in call order.
 * Every call ends with exactly one result, whatever happens.
 */
export async function runBatch(records: CallRecord[], env: CallEnvironment): Promise<BatchOutcome> {
  await checkBatchPolicy(records, env);

  for (const record of records) {
    if (env.signal.aborted && !record.result)
      record.result = cancelledResult(record, "before it started");
    await prepareCall(record, env);
    if (record.result) record.finishedAt = performance.now();
  }

  const runnable = records.filter((record) => !record.result);
  const sequential =
    env.config.mode === "sequential" ||
    runnable.some((record) => record.tool?.executionMode === "sequential");
  if (sequential) for (const record of runnable) record.exclusive = true;

  const neverStarted = await schedule({
    items: runnable,
    maxConcurrency: env.config.maxConcurrency,
    signal: env.signal,
    run: (record) => executeCall(record, env),
  });
  for (const record of neverStarted) {
    record.result = cancelledResult(record, "before it started");
    record.finishedAt = performance.now();
  }

  const aborted = env.signal.aborted;
  if (aborted) {
    for (const record of records) {
      if (record.pending) {
        record.pending = undefined;
        record.result = cancelledResult(record, "before it started");
      }
    }
  }

  const blocks: (ToolResultBlock | undefined)[] = [];
  for (const record of records)
    blocks.push(record.pending ? undefined : await finalizeCall(record, env));
  return { blocks, paused: records.some((record) => record.pending), aborted };
}

/** A rejection answers every call with the policy's message and runs none; so does a throwing policy. */
async function checkBatchPolicy(records: CallRecord[], env: CallEnvironment): Promise<void> {
  const policy = env.config.batchPolicy;
  if (!policy || records.length === 0) return;
  let decision: unknown;
  try {
    decision = await policy.validate({ toolCalls: records.map(toolCallOf) });
  } catch (error) {
    rejectAll(
      records,
      `The tool batch policy failed (${describeThrown(error).message}), so no tool in this reply ran. Try the calls again, or fewer at once.`,
      "tool_batch_policy_error",
    );
    return;
  }
  if (
    typeof decision === "object" &&
    decision !== null &&
    (decision as { allowed?: unknown }).allowed === true
  )
    return;
  if (
    typeof decision !== "object" ||
    decision === null ||
    (decision as { allowed?: unknown }).allowed !== false
  ) {
    rejectAll(
      records,
      "The tool batch policy returned no decision, so no tool in this reply ran.",
      "tool_batch_policy_error",
    );
    return;
  }
  const rejection = decision as {
    code?: unknown;
    message?: unknown;
    suggestedNextStep?: unknown;
    conflictingToolCallIds?: unknown;
  };
  const code = typeof rejection.code === "string" ? rejection.code : "invalid_tool_batch";
  let text = `This batch of tool calls was rejected (${code}): ${typeof rejection.message === "string" ? rejection.message : "no reason given"}`;
  if (Array.isArray(rejection.conflictingToolCallIds) && rejection.conflictingToolCallIds.length) {
    text += `\nConflicting calls: ${rejection.conflictingToolCallIds.join(", ")}.`;
  }
  if (typeof rejection.suggestedNextStep === "string")
    text += `\nSuggested next step: ${rejection.suggestedNextStep}`;
  text += "\nNo tool in this reply ran.";
  rejectAll(records, text, code, {
    ...(Array.isArray(rejection.conflictingToolCallIds)
      ? { conflictingToolCallIds: rejection.conflictingToolCallIds }
      : {}),
    ...(typeof rejection.suggestedNextStep === "string"
      ? { suggestedNextStep: rejection.suggestedNextStep }
      : {}),
  });
}

function rejectAll(
  records: CallRecord[],
  message: string,
  code: string,
  extra: Record<string, unknown> = {},
): void {
  for (const record of records)
    record.result ??= errorResult(message, "rejected", { code, ...extra });
}
