import type { MockErrorSpec } from "./types.ts";

/**
 * What the Messages API answers 400 to, with its own message texts (as its error bodies quote
 * them), so a wire mistake fails a test as it would fail in production: more than four cache
 * breakpoints, a first message that is not the user's, roles that do not alternate, an empty
 * message or text block, a `tool_use` not answered in the next message, a `tool_result` for an
 * unknown id, a block of another protocol (a `reasoning` block, a `providerData` field), and thinking
 * replayed without its signature; a thinking budget under 1,024 or not under `max_tokens`; and
 * in the request's settings, a
 * `temperature` or `top_p` outside 0..1, `stop_sequences` that are not strings, a `tool_choice`
 * without tools, naming a tool the request does not carry, or forcing a tool call with thinking
 * on, and an `output_config.format` that is not a JSON schema with every object closed.
 * Undefined when the request is fine.
 */
export function anthropicRequestProblem(body: any): MockErrorSpec | undefined {
  const messages: unknown[] = body.messages;
  const problem =
    settingsProblem(body) ??
    roleProblem(messages) ??
    systemProblem(body.system) ??
    messagesProblem(messages) ??
    cacheProblem(body);
  return problem === undefined ? undefined : { type: "invalid_request_error", message: problem };
}

function settingsProblem(body: any): string | undefined {
  for (const field of ["temperature", "top_p"]) {
    const value = body[field];
    if (value !== undefined && !(typeof value === "number" && value >= 0 && value <= 1))
      return `${field}: range: 0..1`;
  }
  const stops = body.stop_sequences;
  if (stops !== undefined && !(Array.isArray(stops) && stops.every((s) => typeof s === "string")))
    return "stop_sequences: Input should be a valid list of strings";
  return thinkingProblem(body) ?? toolChoiceProblem(body) ?? outputProblem(body.output_config);
}

/** A thinking budget of at least 1,024 tokens, and below `max_tokens`. */
function thinkingProblem(body: any): string | undefined {
  if (body.thinking?.type !== "enabled") return undefined;
  const budget = body.thinking.budget_tokens;
  if (typeof budget !== "number" || budget < 1024)
    return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024";
  if (typeof body.max_tokens === "number" && budget >= body.max_tokens)
    return "`max_tokens` must be greater than `thinking.budget_tokens`";
  return undefined;
}

function toolChoiceProblem(body: any): string | undefined {
  const choice = body.tool_choice;
  if (choice === undefined) return undefined;
  const types = ["auto", "any", "tool", "none"];
  if (typeof choice !== "object" || choice === null || !types.includes(choice.type))
    return `tool_choice: Input tag '${String(choice?.type)}' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'`;
  const tools: Block[] = Array.isArray(body.tools) ? body.tools : [];
  if (tools.length === 0)
    return "tool_choice: tool_choice may only be specified while providing tools.";
  if (choice.type === "tool" && !tools.some((tool) => tool?.name === choice.name))
    return `tool_choice.name: Tool '${String(choice.name)}' not found in the provided tools`;
  const thinking = body.thinking?.type === "enabled" || body.thinking?.type === "adaptive";
  if (thinking && (choice.type === "any" || choice.type === "tool"))
    return "Thinking may not be enabled when tool_choice forces tool use.";
  return undefined;
}

/** Structured outputs: a JSON schema whose every object says `additionalProperties: false`. */
function outputProblem(config: any): string | undefined {
  const format = config?.format;
  if (format === undefined) return undefined;
  if (format?.type !== "json_schema")
    return `output_config.format.type: Input should be 'json_schema'`;
  const schema = format.schema;
  if (typeof schema !== "object" || schema === null || Array.isArray(schema))
    return "output_config.format.schema: Input should be a valid dictionary";
  return openObject(schema)
    ? "output_config.format.schema: For 'object' type, 'additionalProperties' must be explicitly set to false"
    : undefined;
}

function openObject(node: unknown): boolean {
  if (typeof node !== "object" || node === null) return false;
  if (Array.isArray(node)) return node.some(openObject);
  const schema = node as Block;
  if (schema.type === "object" && schema.additionalProperties !== false) return true;
  return Object.entries(schema).some(
    ([key, value]) => key !== "enum" && key !== "const" && key !== "default" && openObject(value),
  );
}

type Block = Record<string, any>;

function roleProblem(messages: unknown[]): string | undefined {
  if (messages.length === 0) return "messages: at least one message is required";
  const roles = messages.map((message) => (message as { role?: unknown })?.role);
  const bad = roles.findIndex((role) => role !== "user" && role !== "assistant");
  if (bad >= 0)
    return `messages.${bad}.role: Input should be 'user' or 'assistant' (received ${JSON.stringify(roles[bad])})`;
  if (roles[0] !== "user") return 'messages: first message must use the "user" role';
  for (let index = 1; index < roles.length; index++) {
    if (roles[index] === roles[index - 1]) {
      return `messages: roles must alternate between "user" and "assistant", but found multiple "${roles[index]}" roles in a row`;
    }
  }
  return undefined;
}

function systemProblem(system: unknown): string | undefined {
  if (!Array.isArray(system)) return undefined;
  return system.some((block: Block) => block?.type === "text" && block.text === "")
    ? "system: text content blocks must be non-empty"
    : undefined;
}

function messagesProblem(messages: unknown[]): string | undefined {
  for (let index = 0; index < messages.length; index++) {
    const { role, content } = messages[index] as { role: string; content: unknown };
    const last = index === messages.length - 1;
    const empty = content === "" || (Array.isArray(content) && content.length === 0);
    if (empty && !(last && role === "assistant")) {
      return `messages.${index}: all messages must have non-empty content except for the optional final assistant message`;
    }
    if (!Array.isArray(content)) continue;
    const problem =
      blocksProblem(index, content as Block[]) ??
      (role === "assistant"
        ? unansweredProblem(index, content as Block[], messages[index + 1])
        : unexpectedResultProblem(index, content as Block[], messages[index - 1]));
    if (problem) return problem;
  }
  return undefined;
}

function blocksProblem(index: number, blocks: Block[]): string | undefined {
  for (let position = 0; position < blocks.length; position++) {
    const block = blocks[position];
    if (block?.type === "text" && block.text === "") {
      return block.cache_control
        ? `messages.${index}.content.${position}.text: cache_control cannot be set for empty text blocks`
        : "messages: text content blocks must be non-empty";
    }
    // skein's own block for another protocol's reasoning: no Anthropic block has this tag.
    if (block?.type === "reasoning")
      return `messages.${index}.content.${position}: Input tag '${String(block?.type)}' found using 'type' does not match any of the expected tags`;
    if (block && "providerData" in block)
      return `messages.${index}.content.${position}.${String(block.type)}.providerData: Extra inputs are not permitted`;
    if (block?.type === "thinking") {
      if (typeof block.signature !== "string")
        return `messages.${index}.content.${position}.thinking.signature: Field required`;
      if (block.signature === "")
        return `messages.${index}.content.${position}: Invalid \`signature\` in \`thinking\` block`;
    }
  }
  return undefined;
}

/** Each `tool_use` of an assistant message needs its `tool_result` in the very next message. */
function unansweredProblem(index: number, blocks: Block[], next: unknown): string | undefined {
  const ids = blocks.filter((block) => block?.type === "tool_use").map((block) => block.id);
  if (ids.length === 0) return undefined;
  const answered = new Set(resultIds(next));
  const missing = ids.filter((id) => !answered.has(id));
  if (missing.length === 0) return undefined;
  return `messages.${index}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
}

/** Each `tool_result` answers a `tool_use` of the message just before it. */
function unexpectedResultProblem(
  index: number,
  blocks: Block[],
  previous: unknown,
): string | undefined {
  const content = (previous as { content?: unknown } | undefined)?.content;
  const known = new Set(
    Array.isArray(content)
      ? (content as Block[]).filter((block) => block?.type === "tool_use").map((block) => block.id)
      : [],
  );
  for (let position = 0; position < blocks.length; position++) {
    const block = blocks[position];
    if (block?.type === "tool_result" && !known.has(block.tool_use_id)) {
      return `messages.${index}.content.${position}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${block.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
    }
  }
  return undefined;
}

function resultIds(message: unknown): unknown[] {
  const { role, content } = (message ?? {}) as { role?: unknown; content?: unknown };
  if (role !== "user" || !Array.isArray(content)) return [];
  return (content as Block[])
    .filter((block) => block?.type === "tool_result")
    .map((block) => block.tool_use_id);
}

/** Breakpoints count on the system prompt, the tools and every block of every message. */
function cacheProblem(body: any): string | undefined {
  let found = 0;
  const count = (blocks: unknown) => {
    if (!Array.isArray(blocks)) return;
    for (const block of blocks as Block[]) {
      if (block?.cache_control) found++;
      if (block?.type === "tool_result") count(block.content);
    }
  };
  count(body.system);
  count(body.tools);
  for (const message of body.messages as { content?: unknown }[]) count(message?.content);
  return found > 4
    ? `A maximum of 4 blocks with cache_control may be provided. Found ${found}.`
    : undefined;
}
