/**
 * Reading tool results back out of a run: the tool_result blocks of a message or transcript, the
 * one answering a call id, their text, and the step record of a call.
 */
import type { ContentBlock, Message, SDKResultMessage, StepToolCall, ToolResultBlock } from "skein";
import { expect } from "vitest";

/** The tool_result blocks of a message (a transcript's, or one sent on the wire). */
export function toolResultsOf(message: { content: unknown } | undefined): ToolResultBlock[] {
  if (!message || !Array.isArray(message.content)) return [];
  return message.content.filter(
    (block: { type: string }): block is ToolResultBlock => block.type === "tool_result",
  );
}

/** The tool_result blocks of the last message of a transcript. */
export function lastResults(messages: Message[]): ToolResultBlock[] {
  return toolResultsOf(messages.at(-1));
}

/** The text of tool result content: a string as it is, else its text blocks joined. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return JSON.stringify(content);
  return content
    .map((part: { type: string; text?: string }) => (part.type === "text" ? part.text : ""))
    .join("");
}

/** The text of a tool_result block's content ("" when there is no block). */
export function resultText(block: ToolResultBlock | undefined): string {
  return block ? contentText(block.content) : "";
}

/** The text of a step call's result. */
export function callText(call: StepToolCall): string {
  return contentText(call.result.content);
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

/** The step record of the call `id` in a run's result (throws when the run has none). */
export function stepCall(result: SDKResultMessage, id: string): StepToolCall {
  const call = result.steps.flatMap((step) => step.toolCalls).find((c) => c.callId === id);
  if (!call) throw new Error(`no result for ${id}`);
  return call;
}

/** The ids of the tool_use blocks of a message. */
export function toolUseIds(message: Message | undefined): string[] {
  if (!message || typeof message.content === "string") return [];
  return message.content
    .filter((block: ContentBlock) => block.type === "tool_use")
    .map((block) => (block as { id: string }).id);
}

/**
 * Every tool_use of an assistant message is answered exactly once, in order, by the user message
 * that follows it; no tool_result answers anything else.
 */
export function expectValidTranscript(messages: Message[]): void {
  messages.forEach((message, index) => {
    if (message.role !== "assistant") return;
    const ids = toolUseIds(message);
    if (ids.length === 0) return;
    const answers = toolResultsOf(messages[index + 1]).map((block) => block.tool_use_id);
    expect(answers, `answers to message ${index}`).toEqual(ids);
  });
  const allIds = messages.flatMap((message) => toolUseIds(message));
  expect(new Set(allIds).size, "tool_use ids are unique").toBe(allIds.length);
  const answered = messages.flatMap((message) =>
    toolResultsOf(message).map((block) => block.tool_use_id),
  );
  expect(answered.sort()).toEqual([...allIds].sort());
}
