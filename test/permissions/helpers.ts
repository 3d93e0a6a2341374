import type { Message, SDKResultMessage } from "skein";
import { expect } from "vitest";
import { resultFor, resultText } from "../support/results.ts";

export { drain } from "../run/helpers.ts";

/** Asserts the call `id` was answered with an error result whose text matches `text`. */
export function expectErrorResult(messages: Message[], id: string, text?: RegExp | string): void {
  const block = resultFor(messages, id);
  expect(block.is_error, `${id} is an error result`).toBe(true);
  if (text !== undefined) expect(resultText(block)).toMatch(text);
}

/** Asserts the call `id` was answered with a successful result. */
export function expectOkResult(messages: Message[], id: string, text?: RegExp | string): void {
  const block = resultFor(messages, id);
  expect(block.is_error ?? false, `${id} succeeded: ${resultText(block)}`).toBe(false);
  if (text !== undefined) expect(resultText(block)).toMatch(text);
}

/** `details.reason` of the step call with this id (why an error result was given). */
export function failureReason(result: SDKResultMessage, id: string): unknown {
  for (const step of result.steps) {
    for (const call of step.toolCalls) {
      if (call.callId === id)
        return (call.result.details as { reason?: unknown } | undefined)?.reason;
    }
  }
  return undefined;
}

/** Tool names the model was offered in its first request. */
export function offeredTools(model: { requests: { tools: { name: string }[] }[] }): string[] {
  return model.requests[0]!.tools.map((spec) => spec.name);
}
