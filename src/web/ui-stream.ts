// A run's events as the AI SDK's UI message stream: the chunks `useChat` and `readUIMessageStream`
// read, and the same as server-sent events for a `Response`.

import { randomUUID } from "node:crypto";
import type { AgentEvent, PendingToolCall, SDKResultMessage } from "../run/types.ts";
import { errorInfo, errorTextOf, finishReason, textOf, toolOutput } from "./parts.ts";

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
  messageId?: string | undefined;
  /**
   * The approval id a paused run's `tool-approval-request` carries for a call. Default: the call
   * id. `chatHandler` binds it to the session and the pause.
   */
  approvalId?:
    | ((call: PendingToolCall, result: SDKResultMessage) => string | Promise<string>)
    | undefined;
  /** How an error reaches the page: default its message. */
  errorText?: ((error: { name: string; message: string }) => string) | undefined;
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
  /**
   * While a text (reasoning) part is open: the start of its deltas' SSE line, up to the delta's
   * JSON, so the SSE writer turns a delta event into bytes without a chunk object (sse.ts).
   */
  textHead: string | undefined;
  reasoningHead: string | undefined;

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
          this.textHead = `data: {"type":"text-delta","id":"${id}","delta":`;
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
          this.reasoningHead = `data: {"type":"reasoning-delta","id":"${id}","delta":`;
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
    this.textId = this.textHead = undefined;
  }

  private closeReasoning(out: UIMessageChunk[]): void {
    out.push({ type: "reasoning-end", id: this.reasoningId! });
    this.reasoningId = this.reasoningHead = undefined;
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
        const waiting = chunker.push(next.value, out);
        if (waiting) await waiting;
      }
      for (const chunk of out) controller.enqueue(chunk);
      out.length = 0;
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}
