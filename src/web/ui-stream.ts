// A run's events as the AI SDK's UI message stream: the chunks `useChat` and `readUIMessageStream`
// read, and the same as server-sent events for a `Response`.

import { randomUUID } from "node:crypto";
import type { AgentEvent, PendingToolCall, SDKResultMessage } from "../run/types.ts";
import type { ToolResult } from "../tools/types.ts";

/**
 * One chunk of the UI message stream (ai 6's `UIMessageChunk`, without its generics): what
 * `toUIMessageStream` yields. skein's own events (progress, steering, retries, child runs) are
 * `data-skein-*` chunks; a tool's custom events are `data-<event type>` chunks.
 */
export type UIMessageChunk =
  | { type: "start"; messageId?: string }
  | { type: "start-step" }
  | { type: "finish-step" }
  | { type: "text-start"; id: string }
  | { type: "text-delta"; id: string; delta: string }
  | { type: "text-end"; id: string }
  | { type: "reasoning-start"; id: string }
  | { type: "reasoning-delta"; id: string; delta: string }
  | { type: "reasoning-end"; id: string }
  | { type: "tool-input-start"; toolCallId: string; toolName: string; dynamic: true }
  | { type: "tool-input-delta"; toolCallId: string; inputTextDelta: string }
  | {
      type: "tool-input-available";
      toolCallId: string;
      toolName: string;
      input: unknown;
      dynamic: true;
      title?: string;
    }
  | {
      type: "tool-output-available";
      toolCallId: string;
      output: unknown;
      dynamic: true;
      preliminary?: boolean;
    }
  | { type: "tool-output-error"; toolCallId: string; errorText: string; dynamic: true }
  | { type: "tool-approval-request"; approvalId: string; toolCallId: string }
  | { type: `data-${string}`; id?: string; data: unknown; transient?: boolean }
  | { type: "error"; errorText: string }
  | { type: "finish"; finishReason: "stop" | "length" | "error" | "tool-calls" | "other" };

export interface UIMessageStreamOptions {
  /**
   * The id of the streamed assistant message. Default: the run's `checkpointId` (so a paused run
   * resumed later continues the same message), else a random id.
   */
  messageId?: string;
  /**
   * The approval id a paused run's `tool-approval-request` carries for a call. Default: the call
   * id. `chatHandler` binds it to the session and the pause.
   */
  approvalId?: (call: PendingToolCall, result: SDKResultMessage) => string | Promise<string>;
  /** How an error reaches the page: default its message. */
  errorText?: (error: { name: string; message: string }) => string;
}

/** The text a tool result carries for the page: its text, or its content blocks when it has images. */
export function toolOutput(result: ToolResult): unknown {
  const { content } = result;
  if (typeof content === "string") return content;
  if (content.every((block) => block.type === "text"))
    return content.map((block) => (block.type === "text" ? block.text : "")).join("");
  return content;
}

function errorTextOf(result: ToolResult): string {
  const output = toolOutput(result);
  return typeof output === "string" ? output : JSON.stringify(output);
}

/**
 * Turns a run's events into UI message chunks, one event at a time (no buffering): a state
 * machine over which text or reasoning part is open and which step is open.
 */
export class UIChunker {
  private textId: string | undefined;
  private reasoningId: string | undefined;
  private stepOpen = false;
  private started = false;
  private parts = 0;
  private readonly inputStarted = new Set<string>();
  /** Per agent-tool call: its child run's replies so far (the call's preliminary output). */
  private readonly children = new Map<string, string[]>();
  private readonly prefix: string;

  constructor(private readonly options: UIMessageStreamOptions = {}) {
    this.prefix = randomUUID().slice(0, 8);
  }

  /** The chunks for one event, pushed onto `out`. Resolves only for a paused result (approval ids). */
  push(event: AgentEvent, out: UIMessageChunk[]): void | Promise<void> {
    if (event.type !== "result" && event.parentCallId !== undefined) {
      this.child(event.parentCallId, event, out);
      return;
    }
    switch (event.type) {
      case "run_start":
        this.start(event.checkpointId, out);
        return;
      case "turn_start":
        this.start(undefined, out);
        this.closeParts(out);
        if (this.stepOpen) out.push({ type: "finish-step" });
        out.push({ type: "start-step" });
        this.stepOpen = true;
        return;
      case "text_delta": {
        if (this.reasoningId !== undefined) this.closeReasoning(out);
        let id = this.textId;
        if (id === undefined) {
          id = this.textId = `${this.prefix}-${this.parts++}`;
          out.push({ type: "text-start", id });
        }
        out.push({ type: "text-delta", id, delta: event.text });
        return;
      }
      case "thinking_delta": {
        if (this.textId !== undefined) this.closeText(out);
        let id = this.reasoningId;
        if (id === undefined) {
          id = this.reasoningId = `${this.prefix}-${this.parts++}`;
          out.push({ type: "reasoning-start", id });
        }
        out.push({ type: "reasoning-delta", id, delta: event.thinking });
        return;
      }
      case "tool_input_delta":
        this.closeParts(out);
        if (!this.inputStarted.has(event.callId)) {
          this.inputStarted.add(event.callId);
          out.push({
            type: "tool-input-start",
            toolCallId: event.callId,
            toolName: event.name,
            dynamic: true,
          });
        }
        out.push({
          type: "tool-input-delta",
          toolCallId: event.callId,
          inputTextDelta: event.delta,
        });
        return;
      case "tool_start": {
        this.start(undefined, out);
        this.closeParts(out);
        const chunk: UIMessageChunk = {
          type: "tool-input-available",
          toolCallId: event.callId,
          toolName: event.name,
          input: event.input,
          dynamic: true,
        };
        if (event.label !== undefined) chunk.title = event.label;
        out.push(chunk);
        return;
      }
      case "tool_update":
        out.push({
          type: "tool-output-available",
          toolCallId: event.callId,
          output: event.update,
          dynamic: true,
          preliminary: true,
        });
        return;
      case "tool_end":
        this.children.delete(event.callId);
        out.push(
          event.isError
            ? {
                type: "tool-output-error",
                toolCallId: event.callId,
                errorText: errorTextOf(event.result),
                dynamic: true,
              }
            : {
                type: "tool-output-available",
                toolCallId: event.callId,
                output: toolOutput(event.result),
                dynamic: true,
              },
        );
        return;
      case "turn_end":
        this.closeParts(out);
        if (this.stepOpen) out.push({ type: "finish-step" });
        this.stepOpen = false;
        return;
      case "message":
        return;
      case "user_message":
        this.closeParts(out);
        out.push({
          type: "data-skein-user-message",
          data: { origin: event.origin, turn: event.turn, content: event.message.content },
        });
        return;
      case "retry":
        out.push({
          type: "data-skein-retry",
          data: { attempt: event.attempt, delayMs: event.delayMs, error: event.error },
          transient: true,
        });
        return;
      case "compaction": {
        const { type: _type, ...data } = event;
        out.push({ type: "data-skein-compaction", data });
        return;
      }
      case "hook_error":
        out.push({
          type: "data-skein-hook-error",
          data: { hook: event.hook, callId: event.callId, name: event.name, error: event.error },
        });
        return;
      case "mcp_server_error":
        out.push({
          type: "data-skein-mcp-server-error",
          data: { server: event.server, error: event.error },
        });
        return;
      case "result":
        return this.finish(event, out);
      default:
        // A tool's custom event (`ctx.emit`): its own data part.
        out.push({ type: `data-${event.type}`, data: event });
        return;
    }
  }

  private start(checkpointId: string | undefined, out: UIMessageChunk[]): void {
    if (this.started) return;
    this.started = true;
    out.push({ type: "start", messageId: this.options.messageId ?? checkpointId ?? randomUUID() });
  }

  private closeText(out: UIMessageChunk[]): void {
    out.push({ type: "text-end", id: this.textId! });
    this.textId = undefined;
  }

  private closeReasoning(out: UIMessageChunk[]): void {
    out.push({ type: "reasoning-end", id: this.reasoningId! });
    this.reasoningId = undefined;
  }

  private closeParts(out: UIMessageChunk[]): void {
    if (this.textId !== undefined) this.closeText(out);
    if (this.reasoningId !== undefined) this.closeReasoning(out);
  }

  /**
   * A child run's events (an agent tool's call): its replies become the call's preliminary
   * output (`{ replies: [...] }`, one entry per child turn), its tool calls `data-skein-child-tool`
   * parts (id `<parentCallId>/<callId>`, updated in place). Never loose top-level text.
   */
  private child(parentCallId: string, event: AgentEvent, out: UIMessageChunk[]): void {
    switch (event.type) {
      case "turn_end": {
        const text = textOf(event.message.content);
        if (!text) return;
        const replies = this.children.get(parentCallId) ?? [];
        replies.push(text);
        this.children.set(parentCallId, replies);
        out.push({
          type: "tool-output-available",
          toolCallId: parentCallId,
          output: { replies: [...replies] },
          dynamic: true,
          preliminary: true,
        });
        return;
      }
      case "tool_start":
        out.push({
          type: "data-skein-child-tool",
          id: `${parentCallId}/${event.callId}`,
          data: {
            parentCallId,
            callId: event.callId,
            name: event.name,
            input: event.input,
            status: "running",
          },
        });
        return;
      case "tool_end":
        out.push({
          type: "data-skein-child-tool",
          id: `${parentCallId}/${event.callId}`,
          data: {
            parentCallId,
            callId: event.callId,
            name: event.name,
            status: event.isError ? "error" : "done",
            output: toolOutput(event.result),
          },
        });
        return;
      default:
        return;
    }
  }

  private async finish(result: SDKResultMessage, out: UIMessageChunk[]): Promise<void> {
    this.start(result.checkpointId, out);
    this.closeParts(out);
    if (result.subtype === "paused") {
      for (const call of result.pending ?? []) {
        if (call.reason !== "approval") continue;
        if (call.parentCallId !== undefined) {
          // A call waiting inside a child run has no part of its own yet: give it one.
          out.push({
            type: "tool-input-available",
            toolCallId: call.id,
            toolName: call.name,
            input: call.input,
            dynamic: true,
          });
        }
        const approvalId = this.options.approvalId
          ? await this.options.approvalId(call, result)
          : call.id;
        out.push({ type: "tool-approval-request", approvalId, toolCallId: call.id });
      }
    }
    if (this.stepOpen) out.push({ type: "finish-step" });
    this.stepOpen = false;
    if (result.isError && result.subtype !== "paused") {
      const error = result.error ?? { name: "Error", message: result.result || result.subtype };
      out.push({ type: "error", errorText: this.errorText(error) });
    }
    out.push({ type: "finish", finishReason: finishReason(result) });
  }

  errorText(error: { name: string; message: string }): string {
    return this.options.errorText ? this.options.errorText(error) : error.message;
  }
}

function finishReason(result: SDKResultMessage): "stop" | "length" | "error" | "tool-calls" {
  switch (result.subtype) {
    case "success":
      return "stop";
    case "error_max_turns":
      return "length";
    case "paused":
      return "tool-calls";
    default:
      return "error";
  }
}

function textOf(content: string | readonly { type: string; text?: string }[]): string {
  if (typeof content === "string") return content;
  return content.map((block) => (block.type === "text" ? (block.text ?? "") : "")).join("");
}

/**
 * A run's events as a stream of UI message chunks, for `readUIMessageStream`,
 * `createUIMessageStream`'s `writer.merge`, or `toUIMessageStreamResponse`. Cancelling the
 * stream ends the run (as breaking out of `agent.stream()` does).
 */
export function toUIMessageStream(
  run: AsyncIterable<AgentEvent>,
  options: UIMessageStreamOptions = {},
): ReadableStream<UIMessageChunk> {
  const chunker = new UIChunker(options);
  const iterator = run[Symbol.asyncIterator]();
  const out: UIMessageChunk[] = [];
  return new ReadableStream<UIMessageChunk>({
    async pull(controller) {
      while (out.length === 0) {
        let next: IteratorResult<AgentEvent>;
        try {
          next = await iterator.next();
        } catch (error) {
          out.push({ type: "error", errorText: chunker.errorText(errorInfo(error)) });
          out.push({ type: "finish", finishReason: "error" });
          for (const chunk of out.splice(0)) controller.enqueue(chunk);
          controller.close();
          return;
        }
        if (next.done) {
          controller.close();
          return;
        }
        await chunker.push(next.value, out);
      }
      for (const chunk of out.splice(0)) controller.enqueue(chunk);
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}

export function errorInfo(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: "Error", message: String(error) };
}

// ---------------------------------------------------------------------------------------------
// Server-sent events

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

/**
 * A run's events as SSE text, batched: the chunks of every event that arrived while the last
 * batch was being read go out as one string (one encode, one enqueue).
 */
export async function* sseText(
  run: AsyncIterable<AgentEvent>,
  options: UIMessageStreamOptions = {},
): AsyncGenerator<string> {
  const chunker = new UIChunker(options);
  const out: UIMessageChunk[] = [];
  try {
    for await (const event of run) {
      const pending = chunker.push(event, out);
      if (pending) await pending;
      if (out.length === 0) continue;
      let text = "";
      for (const chunk of out) text += sseLine(chunk);
      out.length = 0;
      yield text;
    }
  } catch (error) {
    yield sseLine({ type: "error", errorText: chunker.errorText(errorInfo(error)) }) +
      sseLine({ type: "finish", finishReason: "error" });
  }
  yield SSE_DONE;
}

/** Bytes of an async iterable of strings, as a ReadableStream. Cancelling it ends the iterable. */
export function textStream(source: AsyncIterable<string>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const iterator = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
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
  const headers = new Headers(responseInit.headers);
  for (const [name, value] of Object.entries(UI_MESSAGE_STREAM_HEADERS))
    if (!headers.has(name)) headers.set(name, value);
  return new Response(textStream(sseText(run, options)), { ...responseInit, headers });
}
