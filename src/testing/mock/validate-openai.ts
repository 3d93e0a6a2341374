import type { MockErrorSpec } from "./types.ts";

/**
 * What Chat Completions answers 400 to, with its own message texts: a `tool` message that
 * answers no call of the assistant message before it, and an assistant message with
 * `tool_calls` not followed by a `tool` message for each call; and in the request's settings,
 * `temperature` outside 0..2, `top_p` outside 0..1, more than four `stop` sequences, a
 * `tool_choice` without tools or naming a function the request does not carry, and a
 * `response_format` of type `json_schema` without a usable name or schema. Undefined when the
 * request is fine.
 */
export function openaiRequestProblem(body: any): MockErrorSpec | undefined {
  const settings = settingsProblem(body);
  if (settings) return settings;
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

function invalid(message: string, param: string, code: string | null = null): MockErrorSpec {
  return { type: "invalid_request_error", message, param, code };
}

function settingsProblem(body: any): MockErrorSpec | undefined {
  for (const [field, max] of [
    ["temperature", 2],
    ["top_p", 1],
  ] as const) {
    const value = body[field];
    if (value === undefined) continue;
    if (typeof value !== "number")
      return invalid(
        `Invalid type for '${field}': expected a decimal, but got ${typeof value} instead.`,
        field,
        "invalid_type",
      );
    if (value < 0)
      return invalid(
        `Invalid '${field}': decimal below minimum value. Expected a value >= 0, but got ${value} instead.`,
        field,
        "decimal_below_min_value",
      );
    if (value > max)
      return invalid(
        `Invalid '${field}': decimal above maximum value. Expected a value <= ${max}, but got ${value} instead.`,
        field,
        "decimal_above_max_value",
      );
  }
  const stop = body.stop;
  if (Array.isArray(stop) && stop.length > 4)
    return invalid(
      `Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length ${stop.length} instead.`,
      "stop",
      "array_above_max_length",
    );
  return toolChoiceProblem(body) ?? responseFormatProblem(body.response_format);
}

function toolChoiceProblem(body: any): MockErrorSpec | undefined {
  const choice = body.tool_choice;
  if (choice === undefined) return undefined;
  const tools: any[] = Array.isArray(body.tools) ? body.tools : [];
  if (tools.length === 0)
    return invalid(
      "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
      "tool_choice",
    );
  if (typeof choice === "string") {
    return ["none", "auto", "required"].includes(choice)
      ? undefined
      : invalid(
          `Invalid value: '${choice}'. Supported values are: 'none', 'auto', and 'required'.`,
          "tool_choice",
          "invalid_value",
        );
  }
  const name = choice?.function?.name;
  if (choice?.type !== "function" || typeof name !== "string")
    return invalid(
      "Missing required parameter: 'tool_choice.function.name'.",
      "tool_choice.function.name",
      "missing_required_parameter",
    );
  if (!tools.some((tool) => tool?.function?.name === name))
    return invalid(
      `Invalid value for 'tool_choice': function '${name}' was not found in 'tools'.`,
      "tool_choice",
    );
  return undefined;
}

function responseFormatProblem(format: any): MockErrorSpec | undefined {
  if (format?.type !== "json_schema") return undefined;
  const name = format.json_schema?.name;
  if (typeof name !== "string")
    return invalid(
      "Missing required parameter: 'response_format.json_schema.name'.",
      "response_format.json_schema.name",
      "missing_required_parameter",
    );
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name))
    return invalid(
      `Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
      "response_format.json_schema.name",
      "invalid_value",
    );
  const schema = format.json_schema.schema;
  if (
    schema !== undefined &&
    (typeof schema !== "object" || schema === null || Array.isArray(schema))
  )
    return invalid(
      `Invalid type for 'response_format.json_schema.schema': expected an object, but got ${Array.isArray(schema) ? "an array" : typeof schema} instead.`,
      "response_format.json_schema.schema",
      "invalid_type",
    );
  return undefined;
}
