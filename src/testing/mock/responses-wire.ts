import { createHash } from "node:crypto";
import { openaiWire } from "./openai-wire.ts";
import type { SseEvent, TurnPlan, Wire } from "./plan.ts";
import { fragmentsOf, wordsOf } from "./plan.ts";
import { responsesRequestProblem } from "./validate-responses.ts";

/**
 * The OpenAI Responses API: `POST /v1/responses`, streamed as typed events. A scripted turn's
 * `thinking` becomes a reasoning item with encrypted content and a summary; the server remembers
 * which reasoning item preceded which calls (`memory`), to refuse a later request that
 * sends a call back without it.
 */
export function createResponsesWire(memory: Map<string, unknown>): Wire {
  return {
    requestIdHeader: "x-request-id",

    message(plan) {
      return responseObject(plan, "completed", outputOf(plan, memory, true));
    },

    events(plan) {
      const events: SseEvent[] = [];
      let sequence = 0;
      const event = (type: string, fields: Record<string, unknown>) =>
        events.push({
          event: type,
          data: JSON.stringify({ type, sequence_number: sequence++, ...fields }),
        });
      event("response.created", { response: responseObject(plan, "in_progress", []) });
      event("response.in_progress", { response: responseObject(plan, "in_progress", []) });
      const output = outputOf(plan, memory, false);
      output.forEach((item, index) => {
        const { done, streamed } = item;
        const id = done.id as string;
        if (done.type === "reasoning") {
          event("response.output_item.added", {
            output_index: index,
            item: { id, type: "reasoning", summary: [] },
          });
          const part = { type: "summary_text", text: "" };
          event("response.reasoning_summary_part.added", {
            item_id: id,
            output_index: index,
            summary_index: 0,
            part,
          });
          for (const delta of wordsOf(plan.thinking))
            event("response.reasoning_summary_text.delta", {
              item_id: id,
              output_index: index,
              summary_index: 0,
              delta,
            });
          event("response.reasoning_summary_text.done", {
            item_id: id,
            output_index: index,
            summary_index: 0,
            text: plan.thinking,
          });
          event("response.reasoning_summary_part.done", {
            item_id: id,
            output_index: index,
            summary_index: 0,
            part: { type: "summary_text", text: plan.thinking },
          });
          event("response.output_item.done", { output_index: index, item: done });
        } else if (done.type === "message") {
          event("response.output_item.added", {
            output_index: index,
            item: { id, type: "message", status: "in_progress", content: [], role: "assistant" },
          });
          const part = { type: "output_text", annotations: [], logprobs: [], text: "" };
          event("response.content_part.added", {
            item_id: id,
            output_index: index,
            content_index: 0,
            part,
          });
          for (const delta of wordsOf(plan.text))
            event("response.output_text.delta", {
              item_id: id,
              output_index: index,
              content_index: 0,
              delta,
              logprobs: [],
            });
          event("response.output_text.done", {
            item_id: id,
            output_index: index,
            content_index: 0,
            text: plan.text,
            logprobs: [],
          });
          event("response.content_part.done", {
            item_id: id,
            output_index: index,
            content_index: 0,
            part: { ...part, text: plan.text },
          });
          event("response.output_item.done", { output_index: index, item: done });
        } else {
          event("response.output_item.added", {
            output_index: index,
            item: { ...done, status: "in_progress", arguments: "" },
          });
          for (const delta of fragmentsOf(streamed ?? ""))
            event("response.function_call_arguments.delta", {
              item_id: id,
              output_index: index,
              delta,
            });
          // A call cut by the output limit never finishes.
          if (done.status === "completed") {
            event("response.function_call_arguments.done", {
              item_id: id,
              output_index: index,
              arguments: done.arguments,
            });
            event("response.output_item.done", { output_index: index, item: done });
          }
        }
      });
      const finished = output.map((item) => item.done);
      if (plan.stopReason === "max_tokens")
        event("response.incomplete", { response: responseObject(plan, "incomplete", finished) });
      else event("response.completed", { response: responseObject(plan, "completed", finished) });
      return events;
    },

    errorBody: openaiWire.errorBody,

    errorEvent(spec) {
      const code = spec.code ?? spec.type ?? "server_error";
      return {
        event: "error",
        data: JSON.stringify({
          type: "error",
          sequence_number: 0,
          code,
          message: spec.message ?? "The server had an error while processing your request.",
          param: spec.param ?? null,
        }),
      };
    },

    malformed(raw) {
      return { data: raw ?? '{"type":"response.output_text.delta","delta":"unterminated' };
    },

    ping() {
      return undefined;
    },

    trickle(plan, events) {
      // Before the stream's last item is done: more of it, forever.
      let at = events.length - 1;
      while (at > 0 && !events[at]!.data.includes('"type":"response.output_item.done"')) at--;
      const done = JSON.parse(events[at]!.data) as { output_index: number; item: { id: string } };
      const where = { item_id: done.item.id, output_index: done.output_index };
      const fields = plan.calls.length
        ? { type: "response.function_call_arguments.delta", ...where, delta: " " }
        : plan.text
          ? { type: "response.output_text.delta", ...where, content_index: 0, delta: "." }
          : {
              type: "response.reasoning_summary_text.delta",
              ...where,
              summary_index: 0,
              delta: ".",
            };
      return { at, event: { event: fields.type, data: JSON.stringify(fields) } };
    },

    validate: (body) => responsesRequestProblem(body, memory),

    models: openaiWire.models,
    model: openaiWire.model,
  };
}

/** The turn a request asks for: each run of the model's items (reasoning, its messages, its calls) is one earlier reply. */
export function responsesTurnIndex(input: any[]): number {
  let replies = 0;
  let inReply = false;
  for (const item of input) {
    const own =
      item?.type === "reasoning" ||
      item?.type === "function_call" ||
      (item?.role === "assistant" && (item.type === undefined || item.type === "message"));
    if (own && !inReply) replies++;
    inReply = own;
  }
  return replies;
}

/** An output item: as finished, and for a call the arguments text as streamed (cut when truncated). */
interface OutputItem {
  done: Record<string, unknown>;
  streamed?: string;
}

function outputOf(plan: TurnPlan, memory: Map<string, unknown>, whole: boolean): OutputItem[] {
  const output: OutputItem[] = [];
  let reasoning: Record<string, unknown> | undefined;
  if (plan.thinking) {
    reasoning = {
      id: `rs_mock_${plan.seq}`,
      type: "reasoning",
      encrypted_content: encryptedContentOf(plan.thinking, plan.seq),
      summary: [{ type: "summary_text", text: plan.thinking }],
    };
    output.push({ done: reasoning });
  }
  if (plan.text) {
    output.push({
      done: {
        id: `msg_mock_${plan.seq}`,
        type: "message",
        status: "completed",
        content: [{ type: "output_text", annotations: [], logprobs: [], text: plan.text }],
        role: "assistant",
      },
    });
  }
  plan.calls.forEach((call, position) => {
    const item = {
      id: `fc_mock_${plan.seq}_${position + 1}`,
      type: "function_call",
      status: call.truncated && !whole ? "in_progress" : "completed",
      arguments: call.json,
      call_id: call.id,
      name: call.name,
    };
    // What a later request must send with this call: the reasoning item that preceded it.
    memory.set(call.id, reasoning ?? null);
    output.push({ done: item, streamed: call.json });
  });
  return output;
}

/** Deterministic and keyed to the turn, so a test can check it comes back unchanged. */
export function encryptedContentOf(thinking: string, seq: number): string {
  return `gAAAAmock${createHash("sha256").update(`${seq}:${thinking}`).digest("base64url")}`;
}

function responseObject(plan: TurnPlan, status: string, output: unknown[]): unknown {
  const prompt = plan.usage.inputTokens + plan.usage.cacheReadInputTokens;
  return {
    id: `resp_mock_${plan.seq}`,
    object: "response",
    created_at: 1_735_689_600,
    status,
    error: null,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
    model: plan.model,
    output,
    store: false,
    usage:
      status === "in_progress"
        ? null
        : {
            input_tokens: prompt,
            input_tokens_details: { cached_tokens: plan.usage.cacheReadInputTokens },
            output_tokens: plan.usage.outputTokens,
            output_tokens_details: {
              reasoning_tokens: plan.thinking ? plan.usage.outputTokens : 0,
            },
            total_tokens: prompt + plan.usage.outputTokens,
          },
  };
}
