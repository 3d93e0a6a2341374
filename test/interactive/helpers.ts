/**
 * Shared pieces of the interactive-agent tests (design/interactive.md): collecting a stream, the
 * events of one type, a tool that records what ran, user messages as the transcript holds them,
 * and a session store that can be made to fail (a crash, as the log sees it).
 */
import {
  type AgentEvent,
  type ContentBlock,
  type Message,
  memoryStore,
  type SDKResultMessage,
  type SessionStore,
  type ToolContext,
  type ToolDefinition,
  tool,
} from "skein";
import { expect } from "vitest";
import { z } from "zod";

export type EventOf<T extends AgentEvent["type"]> = Extract<AgentEvent, { type: T }>;

/** Drains a stream; the result event is also returned on its own. */
export async function collect<T = unknown>(
  stream: AsyncIterable<AgentEvent<T>>,
): Promise<{ events: AgentEvent<T>[]; result: SDKResultMessage<T> }> {
  const events: AgentEvent<T>[] = [];
  for await (const event of stream) events.push(event);
  const last = events.at(-1);
  if (last?.type !== "result") throw new Error("the stream did not end with a result event");
  return { events, result: last as SDKResultMessage<T> };
}

export function ofType<T extends AgentEvent["type"]>(
  events: readonly AgentEvent[],
  type: T,
): EventOf<T>[] {
  return events.filter((event): event is EventOf<T> => event.type === type);
}

/**
 * A compact trace of a stream: `turn_start:1`, `turn_end:1`, `tool_start:c1`, `tool_end:c1`,
 * `user_message:steer:1`, `message`, `compaction:2`, `result`; deltas left out unless asked.
 */
export function trace(events: readonly AgentEvent[], options: { deltas?: boolean } = {}): string[] {
  const out: string[] = [];
  for (const event of events) {
    switch (event.type) {
      case "turn_start":
      case "turn_end":
        out.push(`${event.type}:${event.turn}`);
        break;
      case "tool_start":
      case "tool_end":
        out.push(`${event.type}:${event.callId}`);
        break;
      case "tool_input_delta":
        if (options.deltas) out.push(`${event.type}:${event.callId}`);
        break;
      case "user_message":
        out.push(`user_message:${event.origin}:${event.turn}`);
        break;
      case "compaction":
        out.push(`compaction:${event.turn}`);
        break;
      case "text_delta":
      case "thinking_delta":
        if (options.deltas) out.push(event.type);
        break;
      default:
        out.push(event.type);
    }
  }
  return out;
}

/** A delivered message as the transcript holds it: a string prompt becomes one text block. */
export function userText(text: string): Message {
  return { role: "user", content: [{ type: "text", text }] };
}

/** The text blocks of a message, joined. */
export function textOf(message: Message | undefined): string {
  if (!message) return "";
  if (typeof message.content === "string") return message.content;
  return message.content
    .map((block: ContentBlock) => (block.type === "text" ? block.text : ""))
    .join("");
}

/**
 * A tool `work` ({ n: number }) that records each handler start and end, and calls `during(n,
 * context)` while it runs (where a test steers). Not concurrency-safe unless `safe` is true, so
 * by default its calls run one at a time: while one runs, the next is queued.
 */
export function workTool(
  options: {
    during?: (n: number, context: ToolContext) => void | Promise<void>;
    safe?: boolean;
    name?: string;
  } = {},
): { tool: ToolDefinition; log: string[] } {
  const log: string[] = [];
  const definition = tool(
    options.name ?? "work",
    "Does a piece of work",
    z.object({ n: z.number() }),
    async ({ n }, context) => {
      log.push(`start:${n}`);
      await options.during?.(n, context);
      // The running call is still running after the message was queued: it finishes normally.
      await new Promise((resolve) => setImmediate(resolve));
      log.push(`end:${n}`);
      return `work ${n} done`;
    },
    options.safe ? { isConcurrencySafe: () => true } : {},
  );
  return { tool: definition, log };
}

/** The `details` of a step call's result (where `code: "interrupted"` is). */
export function detailsOf(result: SDKResultMessage, callId: string): Record<string, unknown> {
  const call = result.steps.flatMap((step) => step.toolCalls).find((c) => c.callId === callId);
  if (!call) throw new Error(`no step call ${callId}`);
  return (call.result.details ?? {}) as Record<string, unknown>;
}

/** Every event of `type` comes after the `after` event and before the `before` one (indices). */
export function expectBetween(
  events: readonly AgentEvent[],
  index: number,
  after: (event: AgentEvent) => boolean,
  before: (event: AgentEvent) => boolean,
): void {
  const start = events.findIndex(after);
  const end = events.findIndex((event, at) => at > index && before(event));
  expect(start, "the event it follows").toBeGreaterThanOrEqual(0);
  expect(index).toBeGreaterThan(start);
  if (end >= 0) expect(index).toBeLessThan(end);
}

/** The `type` of each stored entry of a session. */
export async function entryTypes(store: SessionStore, sessionId: string): Promise<string[]> {
  return (await store.read(sessionId)).map((row) => String(JSON.parse(row.data).type));
}

/**
 * A memoryStore whose appends fail (before writing anything) while `failing.on` is true: after
 * that point the log holds exactly what a process killed then would have left.
 */
export function crashableStore(): SessionStore & { failing: { on: boolean }; inner: SessionStore } {
  const inner = memoryStore();
  const failing = { on: false };
  return {
    failing,
    inner,
    async append(sessionId, seq, entries) {
      if (failing.on) throw new Error("the process died (a simulated crash)");
      return inner.append(sessionId, seq, entries);
    },
    read: (sessionId, options) => inner.read(sessionId, options),
    list: () => inner.list(),
    delete: (sessionId) => inner.delete(sessionId),
    close: () => inner.close(),
  };
}
