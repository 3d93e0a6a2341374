import { describeThrown } from "../errors.ts";
import type { ToolResultBlock } from "../model/messages.ts";
import { assertSerialisable, capResultContent, toolResultFromReturn } from "../tools/result.ts";
import {
  type CallEnvironment,
  type CallRecord,
  errorResult,
  hookContext,
  isObject,
} from "./call.ts";

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
