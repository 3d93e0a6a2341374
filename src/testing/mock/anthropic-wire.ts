import type { ErrorContext, SseEvent, TurnPlan, Wire } from "./plan.ts";
import { fragmentsOf, wordsOf } from "./plan.ts";
import type { MockErrorSpec } from "./types.ts";
import { anthropicRequestProblem } from "./validate-anthropic.ts";

/** The Anthropic Messages API: `POST /v1/messages`, streamed as named SSE events. */
export const anthropicWire: Wire = {
  requestIdHeader: "request-id",

  message(plan) {
    const content: unknown[] = [];
    if (plan.thinking)
      content.push({ type: "thinking", thinking: plan.thinking, signature: plan.signature });
    if (plan.text) content.push({ type: "text", text: plan.text });
    for (const call of plan.calls) {
      // A call cut by max_tokens cannot be parsed, so a non-streamed answer leaves it out.
      if (!call.truncated) content.push(toolUse(call.id, call.name, call.input));
    }
    return {
      ...envelope(plan),
      content,
      stop_reason: plan.stopReason,
      usage: { ...startUsage(plan), output_tokens: plan.usage.outputTokens },
    };
  },

  events(plan) {
    const events: SseEvent[] = [
      sse("message_start", {
        type: "message_start",
        message: {
          ...envelope(plan),
          content: [],
          stop_reason: null,
          usage: { ...startUsage(plan), output_tokens: 1 },
        },
      }),
      sse("ping", { type: "ping" }),
    ];
    let index = 0;
    const block = (start: unknown, deltas: unknown[]) => {
      events.push(
        sse("content_block_start", { type: "content_block_start", index, content_block: start }),
      );
      for (const delta of deltas) {
        events.push(sse("content_block_delta", { type: "content_block_delta", index, delta }));
      }
      events.push(sse("content_block_stop", { type: "content_block_stop", index }));
      index += 1;
    };
    if (plan.thinking) {
      block({ type: "thinking", thinking: "", signature: "" }, [
        ...wordsOf(plan.thinking).map((thinking) => ({ type: "thinking_delta", thinking })),
        { type: "signature_delta", signature: plan.signature },
      ]);
    }
    if (plan.text) {
      block(
        { type: "text", text: "" },
        wordsOf(plan.text).map((text) => ({ type: "text_delta", text })),
      );
    }
    for (const call of plan.calls) {
      // The API opens each tool_use block with an empty fragment, then sends the JSON in pieces.
      block(toolUse(call.id, call.name, {}), [
        { type: "input_json_delta", partial_json: "" },
        ...fragmentsOf(call.json).map((partial_json) => ({
          type: "input_json_delta",
          partial_json,
        })),
      ]);
    }
    events.push(
      sse("message_delta", {
        type: "message_delta",
        delta: { stop_reason: plan.stopReason, stop_sequence: null },
        usage: { output_tokens: plan.usage.outputTokens },
      }),
      sse("message_stop", { type: "message_stop" }),
    );
    return events;
  },

  errorBody(status, spec, context) {
    const fallback = defaultError(status, context);
    return {
      type: "error",
      error: { type: spec.type ?? fallback.type, message: spec.message ?? fallback.message },
      request_id: context.requestId,
    };
  },

  errorEvent(spec) {
    return sse("error", {
      type: "error",
      error: { type: spec.type ?? "overloaded_error", message: spec.message ?? "Overloaded" },
    });
  },

  malformed(data) {
    return {
      event: "content_block_delta",
      data:
        data ??
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"unterminated',
    };
  },

  ping() {
    return sse("ping", { type: "ping" });
  },

  trickle(plan, events) {
    // Before the last block's content_block_stop, more of that block: it never ends.
    const at = events.findLastIndex((event) => event.event === "content_block_stop");
    const index = (JSON.parse(events[at]!.data) as { index: number }).index;
    const delta = plan.calls.length
      ? { type: "input_json_delta", partial_json: " " }
      : plan.text
        ? { type: "text_delta", text: "." }
        : { type: "thinking_delta", thinking: "." };
    return { at, event: sse("content_block_delta", { type: "content_block_delta", index, delta }) };
  },

  validate: anthropicRequestProblem,

  models(ids) {
    const data = ids.map(modelInfo);
    return { data, has_more: false, first_id: ids[0] ?? null, last_id: ids.at(-1) ?? null };
  },

  model: modelInfo,
};

function sse(event: string, data: unknown): SseEvent {
  return { event, data: JSON.stringify(data) };
}

function envelope(plan: TurnPlan) {
  return {
    id: `msg_mock_${plan.seq}`,
    type: "message",
    role: "assistant",
    model: plan.model,
    stop_sequence: null,
  };
}

function startUsage(plan: TurnPlan) {
  return {
    input_tokens: plan.usage.inputTokens,
    cache_creation_input_tokens: plan.usage.cacheCreationInputTokens,
    cache_read_input_tokens: plan.usage.cacheReadInputTokens,
  };
}

function toolUse(id: string, name: string, input: unknown) {
  return { type: "tool_use", id, name, input };
}

function modelInfo(id: string) {
  return { type: "model", id, display_name: id, created_at: "2025-01-01T00:00:00Z" };
}

/** The error types and messages of https://docs.anthropic.com/en/api/errors, by status. */
function defaultError(
  status: number,
  context: ErrorContext,
): Required<Omit<MockErrorSpec, "code" | "param">> {
  switch (status) {
    case 400:
      return { type: "invalid_request_error", message: "Invalid request." };
    case 401:
      return { type: "authentication_error", message: "invalid x-api-key" };
    case 403:
      return {
        type: "permission_error",
        message: "Your API key does not have permission to use the specified resource.",
      };
    case 404:
      return {
        type: "not_found_error",
        message: context.model === undefined ? "Not found" : `model: ${context.model}`,
      };
    case 413:
      return {
        type: "request_too_large",
        message: "Request exceeds the maximum allowed number of bytes.",
      };
    case 429:
      return { type: "rate_limit_error", message: "Rate limit exceeded. Please retry later." };
    case 529:
      return { type: "overloaded_error", message: "Overloaded" };
    default:
      return status >= 500
        ? { type: "api_error", message: "Internal server error" }
        : { type: "invalid_request_error", message: `The request failed with status ${status}.` };
  }
}
