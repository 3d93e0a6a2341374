import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Message, SDKResultMessage, ToolDefinition, ToolResultBlock } from "skein";
import { tool } from "skein";
import { afterEach, expect } from "vitest";
import { z } from "zod";
import { resultText, toolResultsOf } from "../run/helpers.ts";

export {
  deferred,
  drain,
  expectValidTranscript,
  lastResults,
  resultText,
  toolResultsOf,
} from "../run/helpers.ts";

/**
 * Temporary workspaces, removed after each test of the file that calls this at its top level.
 * Returns a function that makes one.
 */
export function useTempDirs(): () => Promise<string> {
  const made: string[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });
  return async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "skein-perm-"));
    made.push(dir);
    return dir;
  };
}

/** A custom tool `{ target: string }` that counts its runs and records the inputs it ran with. */
export interface CountingTool {
  tool: ToolDefinition;
  runs: string[];
}

export function countingTool(
  name: string,
  options: { ruleContent?: boolean; security?: ToolDefinition["security"] } = {},
): CountingTool {
  const runs: string[] = [];
  const definition = tool(
    name,
    `The ${name} tool`,
    z.object({ target: z.string() }),
    async ({ target }) => {
      runs.push(target);
      return `${name} ran on ${target}`;
    },
    {
      ...(options.ruleContent === false ? {} : { ruleContent: (input) => input.target }),
      ...(options.security ? { security: options.security } : {}),
    },
  );
  return { tool: definition, runs };
}

/** Every tool_result block of a transcript, by the id of the call it answers. */
export function resultsById(messages: Message[]): Map<string, ToolResultBlock[]> {
  const byId = new Map<string, ToolResultBlock[]>();
  for (const message of messages) {
    for (const block of toolResultsOf(message)) {
      const list = byId.get(block.tool_use_id) ?? [];
      list.push(block);
      byId.set(block.tool_use_id, list);
    }
  }
  return byId;
}

/** The one tool_result answering `id` in the transcript (fails the test if there is not exactly one). */
export function resultFor(messages: Message[], id: string): ToolResultBlock {
  const blocks = resultsById(messages).get(id) ?? [];
  expect(blocks, `tool_results answering ${id}`).toHaveLength(1);
  return blocks[0]!;
}

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

/** A promise's rejection (fails the test if it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  const outcome = await promise.then(
    (value) => ({ resolved: true as const, value }),
    (error: unknown) => ({ resolved: false as const, error }),
  );
  if (outcome.resolved) {
    throw new Error(
      `expected a rejection, but it resolved with ${JSON.stringify(outcome.value)?.slice(0, 300)}`,
    );
  }
  return outcome.error as Error;
}

/** Tool names the model was offered in its first request. */
export function offeredTools(model: { requests: { tools: { name: string }[] }[] }): string[] {
  return model.requests[0]!.tools.map((spec) => spec.name);
}
