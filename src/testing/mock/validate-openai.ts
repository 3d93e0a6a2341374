import type { MockErrorSpec } from "./types.ts";

/**
 * What Chat Completions answers 400 to, with its own message texts: a `tool` message that
 * answers no call of the assistant message before it, and an assistant message with
 * `tool_calls` not followed by a `tool` message for each call. Undefined when the request is fine.
 */
export function openaiRequestProblem(body: any): MockErrorSpec | undefined {
  const messages = body.messages as Record<string, any>[];
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index];
    if (message?.role === "tool") {
      const problem = toolMessageProblem(messages, index);
      if (problem) return problem;
    }
    const calls = Array.isArray(message?.tool_calls) ? message.tool_calls : [];
    if (message?.role === "assistant" && calls.length > 0) {
      const answered = new Set<unknown>();
      for (let next = index + 1; messages[next]?.role === "tool"; next++)
        answered.add(messages[next]!.tool_call_id);
      const missing = calls
        .map((call: { id?: unknown }) => call?.id)
        .filter((id: unknown) => !answered.has(id));
      if (missing.length > 0) {
        return invalid(
          `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(", ")}`,
          `messages.[${index}].role`,
        );
      }
    }
  }
  return undefined;
}

/** A tool message belongs to the run of tool messages right after an assistant message's calls. */
function toolMessageProblem(
  messages: Record<string, any>[],
  index: number,
): MockErrorSpec | undefined {
  let owner = index - 1;
  while (owner >= 0 && messages[owner]?.role === "tool") owner--;
  const calls = messages[owner]?.role === "assistant" ? messages[owner]?.tool_calls : undefined;
  if (!Array.isArray(calls) || calls.length === 0) {
    // "preceeding" is the API's own spelling: tests match its text.
    return invalid(
      "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
      `messages.[${index}].role`,
    );
  }
  const id = messages[index]!.tool_call_id;
  if (!calls.some((call: { id?: unknown }) => call?.id === id)) {
    return invalid(
      `Invalid parameter: 'tool_call_id' of '${String(id)}' not found in 'tool_calls' of previous message.`,
      `messages.[${index}].tool_call_id`,
    );
  }
  return undefined;
}

function invalid(message: string, param: string): MockErrorSpec {
  return { type: "invalid_request_error", message, param, code: null };
}
