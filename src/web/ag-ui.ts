// AG-UI: a run's events as the Agent-User Interaction protocol's events, and a handler that
// `@ag-ui/client`'s HttpAgent runs against unchanged.

import { randomUUID } from "node:crypto";
import { describeValue } from "../core/options.ts";
import type { AgentEvent, PendingToolCall, SDKResultMessage } from "../run/types.ts";
import { type ChatHandlerOptions, checkHandlerOptions, type WebHandler } from "./chat-handler.ts";
import {
  checkAuthorized,
  checkSessionId,
  HttpRefusal,
  jsonError,
  LiveRun,
  pump,
  readJsonBody,
} from "./http.ts";
import { errorInfo, toolOutput } from "./parts.ts";
import {
  type ApprovalAnswer,
  checkedApprovals,
  currentApprovalIds,
  pauseOf,
  readView,
} from "./sessions.ts";

/** One AG-UI event (`@ag-ui/core`'s `BaseEvent` subtypes), as plain JSON. */
export interface AgUiEvent {
  type: string;
  [key: string]: unknown;
}

export interface AgUiEventsOptions {
  /** The thread: the session id (default: the run's). */
  threadId?: string | undefined;
  /** This run's id (default: random). */
  runId?: string | undefined;
  /** The interrupt id of a paused run's approval (default: the call id). */
  approvalId?:
    | ((call: PendingToolCall, result: SDKResultMessage) => string | Promise<string>)
    | undefined;
}

/**
 * A run's events as AG-UI events: `RUN_STARTED`, `TEXT_MESSAGE_START/CONTENT/END` per reply,
 * `TOOL_CALL_START/ARGS/END` and `TOOL_CALL_RESULT` per call, `STATE_SNAPSHOT` (the session, its
 * status and its pending calls) before `RUN_FINISHED` (an `interrupt` outcome, one interrupt per
 * call waiting for approval, when the run paused) or `RUN_ERROR`. Progress, thinking, steering
 * and tools' custom events are `CUSTOM` events named `skein.<kind>`.
 */
export async function* toAgUiEvents(
  run: AsyncIterable<AgentEvent>,
  options: AgUiEventsOptions = {},
): AsyncGenerator<AgUiEvent> {
  const runId = options.runId ?? randomUUID();
  let threadId = options.threadId;
  let messageId: string | undefined;
  let started = false;
  const startRun = function* (sessionId: string): Generator<AgUiEvent> {
    if (started) return;
    started = true;
    threadId ??= sessionId;
    yield { type: "RUN_STARTED", threadId, runId };
  };
  const endText = function* (): Generator<AgUiEvent> {
    if (messageId === undefined) return;
    yield { type: "TEXT_MESSAGE_END", messageId };
    messageId = undefined;
  };
  try {
    for await (const event of run) {
      if (event.type === "run_start") {
        yield* startRun(event.sessionId);
        continue;
      }
      if (event.type === "result") {
        yield* startRun(event.sessionId);
        yield* endText();
        yield* finish(event, threadId!, runId, options);
        return;
      }
      if (!started) continue;
      if (event.parentCallId !== undefined) {
        if (event.type === "tool_end" || event.type === "turn_end")
          yield {
            type: "CUSTOM",
            name: "skein.child",
            value: {
              parentCallId: event.parentCallId,
              event: event.type,
              ...(event.type === "tool_end"
                ? { callId: event.callId, name: event.name, output: toolOutput(event.result) }
                : {}),
            },
          };
        continue;
      }
      switch (event.type) {
        case "text_delta":
          if (!event.text) break;
          if (messageId === undefined) {
            messageId = randomUUID();
            yield { type: "TEXT_MESSAGE_START", messageId, role: "assistant" };
          }
          yield { type: "TEXT_MESSAGE_CONTENT", messageId, delta: event.text };
          break;
        case "turn_end":
          yield* endText();
          break;
        case "tool_start":
          yield* endText();
          yield { type: "TOOL_CALL_START", toolCallId: event.callId, toolCallName: event.name };
          yield {
            type: "TOOL_CALL_ARGS",
            toolCallId: event.callId,
            delta: JSON.stringify(event.input ?? {}),
          };
          yield { type: "TOOL_CALL_END", toolCallId: event.callId };
          break;
        case "tool_end": {
          const output = toolOutput(event.result);
          yield {
            type: "TOOL_CALL_RESULT",
            messageId: randomUUID(),
            toolCallId: event.callId,
            content: typeof output === "string" ? output : JSON.stringify(output),
            role: "tool",
          };
          break;
        }
        case "thinking_delta":
          yield { type: "CUSTOM", name: "skein.thinking", value: event.thinking };
          break;
        case "tool_update":
          yield {
            type: "CUSTOM",
            name: "skein.progress",
            value: { callId: event.callId, name: event.name, update: event.update },
          };
          break;
        case "user_message":
          yield* endText();
          yield {
            type: "CUSTOM",
            name: "skein.user_message",
            value: { origin: event.origin, content: event.message.content },
          };
          break;
        case "turn_start":
        case "message":
        case "tool_input_delta":
          break;
        default: {
          const { type, ...value } = event as { type: string };
          yield { type: "CUSTOM", name: `skein.${type}`, value };
        }
      }
    }
    // The run ended without a result (it cannot, short of a bug): say so rather than hang.
    yield* startRun(threadId ?? "unknown");
    yield { type: "RUN_ERROR", message: "The run ended without a result." };
  } catch (error) {
    yield* startRun(threadId ?? "unknown");
    yield* endText();
    const info = errorInfo(error);
    yield { type: "RUN_ERROR", message: info.message, code: info.name };
  }
}

async function* finish(
  result: SDKResultMessage,
  threadId: string,
  runId: string,
  options: AgUiEventsOptions,
): AsyncGenerator<AgUiEvent> {
  const approvals = (result.pending ?? []).filter((call) => call.reason === "approval");
  yield {
    type: "STATE_SNAPSHOT",
    snapshot: {
      sessionId: result.sessionId,
      status: result.subtype,
      numTurns: result.numTurns,
      pending: (result.pending ?? []).map(({ id, name, input, reason }) => ({
        id,
        name,
        input,
        reason,
      })),
    },
  };
  if (result.subtype === "paused" && approvals.length > 0) {
    const interrupts = [];
    for (const call of approvals) {
      const id = options.approvalId ? await options.approvalId(call, result) : call.id;
      const interrupt: Record<string, unknown> = {
        id,
        reason: "tool_approval",
        message: call.approvalReason ?? `Allow ${call.name}?`,
        metadata: { name: call.name, input: call.input, callId: call.id },
      };
      if (call.parentCallId === undefined) interrupt.toolCallId = call.id;
      interrupts.push(interrupt);
    }
    yield { type: "RUN_FINISHED", threadId, runId, outcome: { type: "interrupt", interrupts } };
    return;
  }
  if (result.isError && result.subtype !== "paused") {
    yield {
      type: "RUN_ERROR",
      message: result.error?.message ?? (result.result || result.subtype),
      code: result.subtype,
    };
    return;
  }
  yield { type: "RUN_FINISHED", threadId, runId, result: result.result };
}

const AG_UI_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};

/** The events as SSE bytes, one encode per event. */
function sse(events: AsyncIterable<AgUiEvent>): ReadableStream<Uint8Array> {
  const iterator = events[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(`data: ${JSON.stringify(next.value)}\n\n`));
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}

/**
 * An AG-UI endpoint (`POST`, a `RunAgentInput` body) over a skein agent, with `chatHandler`'s
 * rules: `threadId` is the session id, history comes from the store (only the last user message
 * is read), a paused run ends with an `interrupt` outcome whose interrupt ids are bound to the
 * session and the pause, and the next run's `resume` entries answer them (`status: "resolved"`
 * with `payload: { approved: true }` approves; `"cancelled"` or `approved: false` denies).
 */
export function agUiHandler(options: ChatHandlerOptions): WebHandler {
  const shared = checkHandlerOptions("agUiHandler()", options);
  const live = new Map<string, LiveRun>();
  return async (request) => {
    try {
      if (request.method !== "POST")
        return jsonError(405, "method_not_allowed", "POST a RunAgentInput to run the agent.");
      const body = await readJsonBody(request, shared.limit);
      const sessionId = checkSessionId(body.threadId, "threadId");
      await checkAuthorized(shared.authorize, request, sessionId);
      if (!Array.isArray(body.messages))
        throw new HttpRefusal(
          400,
          "malformed_body",
          "messages must be an array of AG-UI messages.",
        );
      const runId = typeof body.runId === "string" && body.runId ? body.runId : randomUUID();
      if (live.has(sessionId))
        throw new HttpRefusal(409, "run_in_progress", "A run of this thread is in progress.");
      const running = new LiveRun();
      live.set(sessionId, running);
      let started = false;
      try {
        const { agent, store, key } = shared;
        let run: AsyncIterable<AgentEvent>;
        if (Array.isArray(body.resume) && body.resume.length > 0) {
          const answers: ApprovalAnswer[] = body.resume.map((entry: any) => {
            if (typeof entry !== "object" || entry === null)
              throw new HttpRefusal(400, "malformed_body", "resume must be an array of entries.");
            const payload = entry.payload;
            return {
              approvalId: entry.interruptId,
              approved:
                entry.status === "resolved" &&
                !(typeof payload === "object" && payload !== null && payload.approved === false),
              reason: typeof payload === "object" && payload !== null ? payload.reason : undefined,
            };
          });
          const approvals = await checkedApprovals(store, key, sessionId, answers);
          run = agent.resumeStream({ sessionId }, { approvals });
        } else {
          const last = body.messages.at(-1);
          if (typeof last !== "object" || last === null || last.role !== "user")
            throw new HttpRefusal(
              400,
              "malformed_body",
              `The last message must be the user's, received ${describeValue(last?.role)}.`,
            );
          const prompt = userText(last.content);
          if (pauseOf(await readView(store, sessionId)))
            throw new HttpRefusal(
              409,
              "awaiting_approval",
              "This thread's run waits for approval: resume it with answers to its interrupts.",
            );
          run = agent.stream(prompt, { sessionId });
        }
        started = true;
        let ids: Map<string, string> | undefined;
        const events = toAgUiEvents(run, {
          threadId: sessionId,
          runId,
          approvalId: async (call) => {
            ids ??= await currentApprovalIds(store, key, sessionId);
            const id = ids.get(call.id);
            if (id === undefined) throw new Error(`no approval id for call ${call.id}`);
            return id;
          },
        });
        void pump(running, sse(events)).finally(() => {
          if (live.get(sessionId) === running) live.delete(sessionId);
        });
        return new Response(running.follow(), { headers: AG_UI_HEADERS });
      } finally {
        if (!started) live.delete(sessionId);
      }
    } catch (error) {
      if (error instanceof HttpRefusal) return error.response();
      return jsonError(500, "internal", "The request failed.");
    }
  };
}

function userText(content: unknown): string {
  let text = "";
  if (typeof content === "string") text = content;
  else if (Array.isArray(content))
    text = content
      .map((part) =>
        typeof part === "object" && part !== null && part.type === "text" ? String(part.text) : "",
      )
      .join("\n");
  if (!text.trim()) throw new HttpRefusal(400, "empty_message", "The user message has no text.");
  return text;
}
