// The UI message stream as server-sent events: the bytes of a `Response` that `useChat` reads.

import type { AgentEvent } from "../run/types.ts";
import { errorInfo } from "./parts.ts";
import { UIChunker, type UIMessageChunk, type UIMessageStreamOptions } from "./ui-stream.ts";

/** The headers of the UI message stream protocol (what `useChat`'s default transport expects). */
export const UI_MESSAGE_STREAM_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-vercel-ai-ui-message-stream": "v1",
  "x-accel-buffering": "no",
};

/**
 * One chunk as an SSE event. The deltas (most of a stream) are written from prebuilt prefixes:
 * only the delta string is escaped, never the whole object walked.
 */
export function sseLine(chunk: UIMessageChunk): string {
  switch (chunk.type) {
    case "text-delta":
      return `data: {"type":"text-delta","id":${JSON.stringify(chunk.id)},"delta":${JSON.stringify(chunk.delta)}}\n\n`;
    case "reasoning-delta":
      return `data: {"type":"reasoning-delta","id":${JSON.stringify(chunk.id)},"delta":${JSON.stringify(chunk.delta)}}\n\n`;
    case "start-step":
      return 'data: {"type":"start-step"}\n\n';
    case "finish-step":
      return 'data: {"type":"finish-step"}\n\n';
    default:
      return `data: ${JSON.stringify(chunk)}\n\n`;
  }
}

export const SSE_DONE = "data: [DONE]\n\n";

const encoder = new TextEncoder();

/**
 * A run's events as SSE bytes, batched: the chunks of every event that arrives before the event
 * loop's next turn go out as one string, encoded once and enqueued once (per event, a web stream's
 * enqueue and read cost more than the event itself). A batch is never held past the current turn
 * of the event loop, so text never waits for a later event. The run is read as fast as it goes
 * (a slow reader does not slow it down: what it has not read yet waits in the stream's queue).
 * Cancelling the stream ends the run.
 */
export function sseBytes(
  run: AsyncIterable<AgentEvent>,
  options: UIMessageStreamOptions = {},
): ReadableStream<Uint8Array> {
  const chunker = new UIChunker(options);
  const iterator = run[Symbol.asyncIterator]();
  const out: UIMessageChunk[] = [];
  let text = "";
  let scheduled = false;
  let closed = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const flush = () => {
    if (closed || text === "") return;
    controller.enqueue(encoder.encode(text));
    text = "";
  };
  const drive = async () => {
    try {
      for (;;) {
        const next = await iterator.next();
        if (closed) return;
        if (next.done) break;
        const event = next.value;
        // Most of a stream: a delta of the open text (reasoning) part, written with no chunk object.
        let line: string | undefined;
        if (event.type === "text_delta") {
          if (chunker.textHead !== undefined && event.parentCallId === undefined)
            line = `${chunker.textHead}${JSON.stringify(event.text)}}\n\n`;
        } else if (event.type === "thinking_delta") {
          if (chunker.reasoningHead !== undefined && event.parentCallId === undefined)
            line = `${chunker.reasoningHead}${JSON.stringify(event.thinking)}}\n\n`;
        }
        if (line !== undefined) text += line;
        else {
          const waiting = chunker.push(event, out);
          if (waiting) await waiting;
          for (const chunk of out) text += sseLine(chunk);
          out.length = 0;
        }
        // A long batch goes now: kept to the end of the turn, its strings would outlive young GCs.
        if (text.length >= 8192) flush();
        else if (!scheduled) {
          scheduled = true;
          setImmediate(() => {
            scheduled = false;
            flush();
          });
        }
      }
    } catch (error) {
      if (closed) return;
      text +=
        sseLine({ type: "error", errorText: chunker.errorText(errorInfo(error)) }) +
        sseLine({ type: "finish", finishReason: "error" });
    }
    text += SSE_DONE;
    flush();
    closed = true;
    controller.close();
  };
  return new ReadableStream<Uint8Array>({
    start(given) {
      controller = given;
      void drive();
    },
    async cancel() {
      closed = true;
      await iterator.return?.();
    },
  });
}

/**
 * `toUIMessageStream` as an SSE `Response` with the protocol's headers (`init` adds status and
 * headers). Cancelling the body (the client went away) ends the run.
 */
export function toUIMessageStreamResponse(
  run: AsyncIterable<AgentEvent>,
  init: ResponseInit & UIMessageStreamOptions = {},
): Response {
  const { messageId, approvalId, errorText, ...responseInit } = init;
  const options: UIMessageStreamOptions = {};
  if (messageId !== undefined) options.messageId = messageId;
  if (approvalId !== undefined) options.approvalId = approvalId;
  if (errorText !== undefined) options.errorText = errorText;
  let headers: ResponseInit["headers"] = UI_MESSAGE_STREAM_HEADERS;
  if (responseInit.headers !== undefined) {
    const given = new Headers(responseInit.headers);
    for (const [name, value] of Object.entries(UI_MESSAGE_STREAM_HEADERS))
      if (!given.has(name)) given.set(name, value);
    headers = given;
  }
  return new Response(sseBytes(run, options), { ...responseInit, headers });
}
