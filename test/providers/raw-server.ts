/**
 * A tiny HTTP server on 127.0.0.1 for the bytes the mock server cannot produce: each test writes
 * its answer itself (exact SSE text, a redirect, a stream that never ends). Closed, with every
 * connection still open, by `closeRawServers` (call it in `afterEach`).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RawRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body. */
  body: any;
}

export interface RawServer {
  url: string;
  requests: RawRequest[];
}

const open: (() => Promise<void>)[] = [];

/** `answer` writes the response; it may leave it open (the connection is closed at cleanup). */
export async function rawServer(
  answer: (request: RawRequest, response: ServerResponse) => void,
): Promise<RawServer> {
  const requests: RawRequest[] = [];
  const server = createServer((incoming, response) => {
    let text = "";
    incoming.setEncoding("utf8");
    incoming.on("data", (chunk: string) => {
      text += chunk;
    });
    incoming.on("end", () => {
      const request: RawRequest = {
        method: incoming.method ?? "",
        url: incoming.url ?? "",
        headers: incoming.headers,
        body: text ? JSON.parse(text) : undefined,
      };
      requests.push(request);
      answer(request, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  open.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

export async function closeRawServers(): Promise<void> {
  await Promise.all(open.splice(0).map((close) => close()));
}

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
