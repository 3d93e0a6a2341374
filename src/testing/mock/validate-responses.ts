import type { MockErrorSpec } from "./types.ts";

/**
 * What the Responses API answers 400 to, with its own message texts: a parameter it does not
 * have (a Chat Completions body sent here: `messages`, `stop`, `max_tokens`), an input item of
 * no known type, a `function_call_output` whose `call_id` has no `function_call` before it, a
 * `function_call` with no output after it, a call of a reasoning turn sent back without its
 * reasoning item (in place: after the previous user input or tool output, before the call) or
 * with that item's encrypted content changed; and in the settings, `temperature` outside 0..2,
 * `top_p` outside 0..1, a `tool_choice` without tools or naming a function the request does not
 * carry. `memory` holds, per call id this server gave, the reasoning item that preceded it.
 * Undefined when the request is fine.
 */
export function responsesRequestProblem(
  body: any,
  memory?: ReadonlyMap<string, unknown>,
): MockErrorSpec | undefined {
  for (const key of Object.keys(body)) {
    if (!PARAMETERS.has(key))
      return invalid(`Unknown parameter: '${key}'.`, key, "unknown_parameter");
  }
  const settings = settingsProblem(body);
  if (settings) return settings;
  const input = body.input as any[];
  const calls = new Map<unknown, number>();
  const outputs = new Set<unknown>();
  // Where the current assistant turn began: after the last user input or tool output.
  let turnStart = 0;
  for (let index = 0; index < input.length; index++) {
    const item = input[index];
    const type = item?.type ?? (typeof item?.role === "string" ? "message" : undefined);
    if (!ITEM_TYPES.has(type))
      return invalid(
        `Invalid value: '${String(type)}'. Supported values are: 'message', 'reasoning', 'function_call' and 'function_call_output'.`,
        `input[${index}].type`,
        "invalid_value",
      );
    if (type === "function_call_output") {
      if (!calls.has(item.call_id))
        return invalid(
          `No tool call found for function call output with call_id ${String(item.call_id)}.`,
          "input",
        );
      outputs.add(item.call_id);
      turnStart = index + 1;
    } else if (type === "message" && item.role !== "assistant") turnStart = index + 1;
    else if (type === "function_call") {
      calls.set(item.call_id, index);
      const problem = reasoningProblem(input, turnStart, index, memory?.get(item.call_id));
      if (problem) return problem;
    }
  }
  for (const [id] of calls) {
    if (!outputs.has(id))
      return invalid(`No tool output found for function call ${String(id)}.`, "input");
  }
  return undefined;
}

/** The reasoning item a call's turn had must be in that turn, before the call, unchanged. */
function reasoningProblem(
  input: any[],
  turnStart: number,
  callIndex: number,
  reasoning: unknown,
): MockErrorSpec | undefined {
  if (!reasoning || typeof reasoning !== "object") return undefined;
  const wanted = reasoning as { id: string; encrypted_content: string };
  const call = input[callIndex];
  for (let index = turnStart; index < callIndex; index++) {
    const item = input[index];
    if (item?.type !== "reasoning" || item.id !== wanted.id) continue;
    if (item.encrypted_content !== wanted.encrypted_content)
      return invalid(
        `The encrypted content for item ${wanted.id} could not be verified.`,
        "input",
        "invalid_encrypted_content",
      );
    return undefined;
  }
  return invalid(
    `Item '${String(call.id ?? call.call_id)}' of type 'function_call' was provided without its required 'reasoning' item: '${wanted.id}'.`,
    "input",
  );
}

const ITEM_TYPES: ReadonlySet<unknown> = new Set([
  "message",
  "reasoning",
  "function_call",
  "function_call_output",
]);

const PARAMETERS: ReadonlySet<string> = new Set([
  "model",
  "input",
  "instructions",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "max_output_tokens",
  "max_tool_calls",
  "reasoning",
  "text",
  "prompt_cache_key",
  "prompt_cache_retention",
  "stream",
  "stream_options",
  "store",
  "include",
  "temperature",
  "top_p",
  "top_logprobs",
  "metadata",
  "previous_response_id",
  "conversation",
  "truncation",
  "user",
  "safety_identifier",
  "service_tier",
  "background",
  "prompt",
]);

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
    if (typeof value !== "number" || value < 0 || value > max)
      return invalid(
        `Invalid '${field}': decimal above maximum value. Expected a value <= ${max}, but got ${String(value)} instead.`,
        field,
        "decimal_above_max_value",
      );
  }
  const choice = body.tool_choice;
  if (choice === undefined) return undefined;
  const tools: any[] = Array.isArray(body.tools) ? body.tools : [];
  if (tools.length === 0 && choice !== "none" && choice !== "auto")
    return invalid(
      "Tool choice 'required' must be specified with 'tools' parameter.",
      "tool_choice",
    );
  if (typeof choice === "object" && choice !== null) {
    if (choice.type !== "function" || typeof choice.name !== "string")
      return invalid("Invalid value for 'tool_choice'.", "tool_choice", "invalid_value");
    if (!tools.some((tool) => tool?.name === choice.name))
      return invalid(`Tool choice '${choice.name}' not found in 'tools' parameter.`, "tool_choice");
  }
  return undefined;
}
