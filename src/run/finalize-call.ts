import { describeThrown, messageForModel } from "../core/errors.ts";
import type { ToolResultBlock } from "../core/messages.ts";
import { assertSerialisable, capResultContent, toolResultFromReturn } from "../tools/result.ts";
import {
  type CallEnvironment,
  type CallRecord,
  errorResult,
  hookContext,
  isAborted,
  isObject,
} from "./call.ts";
import { callHook, chainOf, contextFor, hookLabel } from "./hooks.ts";
import { placeOf } from "./model-call.ts";
import { unwrapHook } from "./prepare-call.ts";

/**
 * Runs `afterToolCall` (calls that reached their handler) and `onToolResult`, emits `tool_end`,
 * and returns the tool_result block, capped for the model.
 */
export async function finalizeCall(
  record: CallRecord,
  env: CallEnvironment,
): Promise<ToolResultBlock> {
  const place = placeOf(env);
  let result = record.result!;
  // After an abort, hooks are not asked to decide anything more: the run is ending.
  const aborted = isAborted(env);
  const parentCallId = env.link?.parentCallId;
  if (record.reachedHandler && !aborted) {
    for (const link of chainOf(place, "afterToolCall")) {
      try {
        const decision: unknown = await callHook(
          link,
          contextFor(
            link,
            { ...hookContext(record, env), result, isError: result.isError === true },
            parentCallId,
          ),
          { event: "afterToolCall" },
          env.signal,
        );
        if (isObject(decision) && decision.stop === true) record.stop = true;
        else if (isObject(decision) && "result" in decision) {
          try {
            result = toolResultFromReturn(decision.result);
            assertSerialisable(result);
          } catch (error) {
            result = errorResult(
              `The ${hookLabel(link)} hook returned an unusable result for tool "${record.name}": ${messageForModel(error)}`,
              "invalid_result",
            );
          }
        }
      } catch (error) {
        // An abort while the hook ran leaves the result as it was.
        if (!env.signal.aborted)
          result = errorResult(
            `The ${hookLabel(link)} hook failed for tool "${record.name}": ${messageForModel(unwrapHook(error))}`,
            "threw",
          );
        break;
      }
    }
    record.result = result;
  }
  const isError = result.isError === true;
  if (!aborted) {
    for (const link of chainOf(place, "onToolResult")) {
      try {
        await callHook(
          link,
          contextFor(link, { ...hookContext(record, env), result, isError }, parentCallId),
          { event: "onToolResult" },
          env.signal,
        );
      } catch (error) {
        if (!env.signal.aborted)
          env.emit({
            type: "hook_error",
            hook: "onToolResult",
            callId: record.id,
            name: record.name,
            error: describeThrown(unwrapHook(error)),
          });
      }
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
