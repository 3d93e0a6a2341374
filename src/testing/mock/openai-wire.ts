import type { ErrorContext, SseEvent, TurnPlan, Wire } from "./plan.ts";
import { fragmentsOf, wordsOf } from "./plan.ts";
import { openaiRequestProblem } from "./validate-openai.ts";

/** The OpenAI Chat Completions API: `POST /v1/chat/completions`, streamed as `data:` chunks. */
export const openaiWire: Wire = {
  requestIdHeader: "x-request-id",

  message(plan) {
    const message: Record<string, unknown> = {
      role: "assistant",
      content: plan.text || null,
      refusal: null,
    };
    if (plan.thinking) message.reasoning_content = plan.thinking;
    if (plan.calls.length) {
      message.tool_calls = plan.calls.map((call) => ({
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: call.json },
      }));
    }
    return {
      id: `chatcmpl-mock-${plan.seq}`,
      object: "chat.completion",
      created: CREATED,
      model: plan.model,
      system_fingerprint: "fp_mock",
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(plan) }],
      usage: usageOf(plan),
    };
  },

  events(plan, context) {
    // With include_usage, every chunk carries `usage: null` and one more chunk carries the totals.
    const chunk = (delta: unknown, finish: string | null = null) =>
      data({
        id: `chatcmpl-mock-${plan.seq}`,
        object: "chat.completion.chunk",
        created: CREATED,
        model: plan.model,
        system_fingerprint: "fp_mock",
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
        ...(context.includeUsage ? { usage: null } : {}),
      });
    const events: SseEvent[] = [chunk({ role: "assistant", content: "" })];
    for (const piece of wordsOf(plan.thinking)) events.push(chunk({ reasoning_content: piece }));
    for (const piece of wordsOf(plan.text)) events.push(chunk({ content: piece }));
    plan.calls.forEach((call, index) => {
      events.push(
        chunk({
          tool_calls: [
            { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } },
          ],
        }),
      );
      for (const fragment of fragmentsOf(call.json)) {
        events.push(chunk({ tool_calls: [{ index, function: { arguments: fragment } }] }));
      }
    });
    events.push(chunk({}, finishReason(plan)));
    if (context.includeUsage) {
      events.push(
        data({
          id: `chatcmpl-mock-${plan.seq}`,
          object: "chat.completion.chunk",
          created: CREATED,
          model: plan.model,
          system_fingerprint: "fp_mock",
          choices: [],
          usage: usageOf(plan),
        }),
      );
    }
    events.push({ data: "[DONE]" });
    return events;
  },

  errorBody(status, spec, context) {
    const fallback = defaultError(status, context);
    return {
      error: {
        message: spec.message ?? fallback.message,
        type: spec.type ?? fallback.type,
        param: spec.param ?? null,
        code: spec.code === undefined ? fallback.code : spec.code,
      },
    };
  },

  errorEvent(spec) {
    return data({
      error: {
        message: spec.message ?? "The server is overloaded. Please try again later.",
        type: spec.type ?? "server_error",
        param: null,
        code: spec.code ?? null,
      },
    });
  },

  malformed(raw) {
    return {
      data:
        raw ??
        '{"id":"chatcmpl-mock","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"unterminated',
    };
  },

  ping() {
    return undefined;
  },

  trickle(plan, events) {
    // Before the chunk with the finish_reason, more of the last call, the text or the reasoning.
    const at = events.findIndex((event) => event.data.includes('"finish_reason":"'));
    const chunk = JSON.parse(events[at]!.data) as { choices: Record<string, unknown>[] };
    const delta = plan.calls.length
      ? { tool_calls: [{ index: plan.calls.length - 1, function: { arguments: " " } }] }
      : plan.text
        ? { content: "." }
        : { reasoning_content: "." };
    chunk.choices = [{ ...chunk.choices[0], delta, finish_reason: null }];
    return { at, event: data(chunk) };
  },

  validate: openaiRequestProblem,

  models(ids) {
    return { object: "list", data: ids.map(modelInfo) };
  },

  model: modelInfo,
};

/** Fixed, so answers are deterministic. */
const CREATED = 1_735_689_600;

function data(value: unknown): SseEvent {
  return { data: JSON.stringify(value) };
}

function finishReason(plan: TurnPlan): string {
  switch (plan.stopReason) {
    case "end_turn":
    case "stop_sequence":
      return "stop";
    case "tool_use":
      return "tool_calls";
    case "max_tokens":
      return "length";
    default:
      return plan.stopReason;
  }
}

function usageOf(plan: TurnPlan) {
  const prompt = plan.usage.inputTokens + plan.usage.cacheReadInputTokens;
  return {
    prompt_tokens: prompt,
    completion_tokens: plan.usage.outputTokens,
    total_tokens: prompt + plan.usage.outputTokens,
    prompt_tokens_details: { cached_tokens: plan.usage.cacheReadInputTokens },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}

function modelInfo(id: string) {
  return { id, object: "model", created: CREATED, owned_by: "mock" };
}

/** The error shapes OpenAI answers with, by status. */
function defaultError(
  status: number,
  context: ErrorContext,
): { type: string; message: string; code: string | null } {
  switch (status) {
    case 401:
      return {
        type: "invalid_request_error",
        message: "Incorrect API key provided.",
        code: "invalid_api_key",
      };
    case 403:
      return { type: "permission_error", message: "You are not allowed to do this.", code: null };
    case 404:
      return context.model === undefined
        ? {
            type: "invalid_request_error",
            message: `Invalid URL (${context.method} ${context.path})`,
            code: null,
          }
        : {
            type: "invalid_request_error",
            message: `The model \`${context.model}\` does not exist or you do not have access to it.`,
            code: "model_not_found",
          };
    case 429:
      return {
        type: "requests",
        message: "Rate limit reached for requests. Please try again later.",
        code: "rate_limit_exceeded",
      };
    case 529:
      return { type: "overloaded_error", message: "The server is overloaded.", code: null };
    default:
      return status >= 500
        ? {
            type: "server_error",
            message: "The server had an error while processing your request.",
            code: null,
          }
        : {
            type: "invalid_request_error",
            message: `The request failed with status ${status}.`,
            code: null,
          };
  }
}
