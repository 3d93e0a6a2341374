// The Gemini API as the mock server speaks it: `POST /v1beta/models/{model}:streamGenerateContent
// ?alt=sse` (or `:generateContent`), each SSE event a whole `GenerateContentResponse`.

import type { ErrorContext, SseEvent, TurnPlan, Wire } from "./plan.ts";
import { wordsOf } from "./plan.ts";
import { callKey, geminiRequestProblem, type IssuedSignatures } from "./validate-gemini.ts";

/** The parts of a planned turn, in the order a Gemini model sends them, as chunks of a stream. */
function partChunks(plan: TurnPlan): Record<string, unknown>[][] {
  const chunks: Record<string, unknown>[][] = [];
  for (const piece of wordsOf(plan.thinking)) chunks.push([{ text: piece, thought: true }]);
  for (const piece of wordsOf(plan.text)) chunks.push([{ text: piece }]);
  let signed = false;
  for (const call of plan.calls) {
    // A call cut by max_tokens is never sent: Gemini sends calls whole.
    if (call.truncated) continue;
    const part: Record<string, unknown> = { functionCall: { name: call.name, args: call.input } };
    // As Gemini 3 does: the signature on the first call of the turn.
    if (plan.signature && !signed) {
      part.thoughtSignature = plan.signature;
      signed = true;
    }
    chunks.push([part]);
  }
  // With no call, the signature comes on an empty text part in the last chunk (as recorded).
  if (plan.signature && !signed) chunks.push([{ text: "", thoughtSignature: plan.signature }]);
  return chunks;
}

/** Records the signature each call part was given, so a later request must bring it back. */
function issue(plan: TurnPlan, index: number, issued: IssuedSignatures | undefined): void {
  if (!issued || !plan.signature) return;
  const first = plan.calls.find((call) => !call.truncated);
  if (first) issued.set(callKey(index, first.name, first.input), plan.signature);
}

/** Creates the wire of one server: the signatures it gave are its own. */
export function createGeminiWire(issued: IssuedSignatures): Wire {
  return {
    requestIdHeader: "x-request-id",

    message(plan) {
      const parts = partChunks(plan).flat();
      // One text part and one thought part, as a non-streamed answer has them.
      const merged: Record<string, unknown>[] = [];
      for (const part of parts) {
        const last = merged.at(-1);
        const joinable =
          last &&
          typeof part.text === "string" &&
          typeof last.text === "string" &&
          last.thought === part.thought &&
          last.thoughtSignature === undefined &&
          part.text !== "";
        if (joinable) last.text = `${last.text as string}${part.text as string}`;
        else merged.push({ ...part });
      }
      return {
        candidates: [
          {
            content: { role: "model", parts: merged },
            finishReason: finishReason(plan),
            index: 0,
          },
        ],
        usageMetadata: usageOf(plan),
        modelVersion: plan.model,
        responseId: `mock-${plan.seq}`,
      };
    },

    events(plan, context) {
      issue(plan, context.index, issued);
      const envelope = (parts: unknown[], last: boolean) =>
        data({
          candidates: [
            {
              content: { role: "model", parts },
              ...(last ? { finishReason: finishReason(plan) } : {}),
              index: 0,
            },
          ],
          usageMetadata: usageOf(plan),
          modelVersion: plan.model,
          responseId: `mock-${plan.seq}`,
        });
      const chunks = partChunks(plan);
      if (chunks.length === 0) chunks.push([{ text: "" }]);
      return chunks.map((parts, position) => envelope(parts, position === chunks.length - 1));
    },

    errorBody(status, spec, context) {
      return {
        error: {
          code: status,
          message: spec.message ?? defaultMessage(status, context),
          status: spec.type ?? STATUS_NAMES[status] ?? (status >= 500 ? "INTERNAL" : "UNKNOWN"),
        },
      };
    },

    errorEvent(spec) {
      return data({
        error: {
          code: typeof spec.code === "number" ? spec.code : 503,
          message: spec.message ?? "The model is overloaded. Please try again later.",
          status: spec.type ?? "UNAVAILABLE",
        },
      });
    },

    malformed(raw) {
      return { data: raw ?? '{"candidates":[{"content":{"parts":[{"text":"unterminated' };
    },

    ping() {
      return undefined;
    },

    trickle(plan, events) {
      // Before the last chunk (the one with the finishReason), more text or thinking, forever.
      const at = Math.max(0, events.length - 1);
      const part = plan.text || plan.calls.length ? { text: "." } : { text: ".", thought: true };
      return {
        at,
        event: data({
          candidates: [{ content: { role: "model", parts: [part] }, index: 0 }],
          modelVersion: plan.model,
        }),
      };
    },

    validate(body, model) {
      return geminiRequestProblem(body, issued, model);
    },

    models(ids) {
      return { models: ids.map(modelInfo) };
    },

    model: modelInfo,
  };
}

function data(value: unknown): SseEvent {
  return { data: JSON.stringify(value) };
}

/** skein's stop reasons as Gemini's; a reason in Gemini's own words (`SAFETY`) is sent as is. */
function finishReason(plan: TurnPlan): string {
  switch (plan.stopReason) {
    case "end_turn":
    case "stop_sequence":
    case "tool_use":
      return "STOP";
    case "max_tokens":
    case "length":
      return "MAX_TOKENS";
    default:
      return plan.stopReason;
  }
}

/** `promptTokenCount` counts the cached tokens too; the output is split into candidates and thoughts. */
function usageOf(plan: TurnPlan) {
  const prompt = plan.usage.inputTokens + plan.usage.cacheReadInputTokens;
  const thoughts = plan.thinking
    ? Math.min(plan.usage.outputTokens, Math.max(1, Math.ceil(plan.thinking.length / 4)))
    : 0;
  const candidates = plan.usage.outputTokens - thoughts;
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: candidates,
    totalTokenCount: prompt + plan.usage.outputTokens,
    ...(plan.usage.cacheReadInputTokens
      ? { cachedContentTokenCount: plan.usage.cacheReadInputTokens }
      : {}),
    ...(thoughts ? { thoughtsTokenCount: thoughts } : {}),
  };
}

function modelInfo(id: string) {
  return {
    name: `models/${id}`,
    displayName: id,
    supportedGenerationMethods: ["generateContent", "streamGenerateContent"],
  };
}

const STATUS_NAMES: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  409: "ABORTED",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

function defaultMessage(status: number, context: ErrorContext): string {
  switch (status) {
    case 400:
      return "Request contains an invalid argument.";
    case 401:
      return "Request had invalid authentication credentials.";
    case 403:
      return "The caller does not have permission.";
    case 404:
      return context.model === undefined
        ? `The requested URL ${context.path} was not found on this server.`
        : `models/${context.model} is not found for API version v1beta, or is not supported for generateContent.`;
    case 429:
      return "Resource has been exhausted (e.g. check quota).";
    case 503:
      return "The model is overloaded. Please try again later.";
    default:
      return status >= 500
        ? "An internal error has occurred. Please retry."
        : `The request failed with status ${status}.`;
  }
}
