/**
 * The exact SSE text of replies, for tests that write their answer on a raw server (the bytes the
 * mock server cannot produce). The server itself is `rawServer` of test/support/servers.ts.
 */
import type { ServerResponse } from "node:http";
import type { RawRequest } from "../support/servers.ts";

// Re-exported for the tests that take the server from here too.
export {
  closeRawServers,
  type RawRequest,
  type RawServer,
  rawServer,
} from "../support/servers.ts";

/** True on the request for the first turn: no assistant message in it yet. */
export function firstTurn(request: RawRequest): boolean {
  return !request.body.messages.some((message: { role: string }) => message.role === "assistant");
}

/** Writes SSE headers and `text`, leaving the response open unless `end`. */
export function writeSse(response: ServerResponse, text: string, end = true): void {
  response.writeHead(200, { "content-type": "text/event-stream" });
  if (end) response.end(text);
  else response.write(text);
}

/** One Anthropic event. */
export const event = (name: string, data: Record<string, unknown>) =>
  `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;

/** One OpenAI chunk. */
export const chunk = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;

export const DONE = "data: [DONE]\n\n";

/** An Anthropic reply: message_start, the given block events, then the stop with `stopReason`. */
export function anthropicReply(blocks: string[], stopReason = "end_turn"): string {
  return [
    event("message_start", { message: { usage: { input_tokens: 1, output_tokens: 0 } } }),
    ...blocks,
    event("message_delta", { delta: { stop_reason: stopReason }, usage: { output_tokens: 1 } }),
    event("message_stop", {}),
  ].join("");
}

/** Anthropic events of one text block. */
export function anthropicText(index: number, text: string): string[] {
  return [
    event("content_block_start", { index, content_block: { type: "text", text: "" } }),
    ...(text ? [event("content_block_delta", { index, delta: { type: "text_delta", text } })] : []),
    event("content_block_stop", { index }),
  ];
}

/** Anthropic events of one tool_use block whose input arrives as one `input_json_delta`. */
export function anthropicTool(index: number, id: string, name: string, json: string): string[] {
  return [
    event("content_block_start", {
      index,
      content_block: { type: "tool_use", id, name, input: {} },
    }),
    event("content_block_delta", {
      index,
      delta: { type: "input_json_delta", partial_json: json },
    }),
    event("content_block_stop", { index }),
  ];
}

/** An OpenAI reply of text only, with [DONE]. */
export function openaiText(text: string): string {
  return (
    chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "" } }] }) +
    chunk({ choices: [{ index: 0, delta: { content: text } }] }) +
    chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }) +
    DONE
  );
}

/** An OpenAI chunk with tool call deltas. */
export function openaiCalls(calls: Record<string, unknown>[], finish?: string): string {
  return chunk({
    choices: [{ index: 0, delta: { tool_calls: calls }, finish_reason: finish ?? null }],
  });
}
