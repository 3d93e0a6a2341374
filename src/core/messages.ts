/**
 * The transcript uses the Anthropic Messages shape. Providers translate
 * to and from their wire format at the edge; the engine only ever sees these types.
 */

export interface TextBlock {
  type: "text";
  text: string;
  providerData?: ProviderData;
}

export interface ImageBlock {
  type: "image";
  source: { type: "base64"; media_type: string; data: string } | { type: "url"; url: string };
}

export interface ToolUseBlock {
  type: "tool_use";
  id: string;
  name: string;
  input: unknown;
  providerData?: ProviderData;
}

/** What a tool result may hold: text and images. */
export type ToolResultContentBlock = TextBlock | ImageBlock;

export interface ToolResultBlock {
  type: "tool_result";
  tool_use_id: string;
  content: string | ToolResultContentBlock[];
  is_error?: boolean;
}

export interface ThinkingBlock {
  type: "thinking";
  thinking: string;
  signature?: string;
  providerData?: ProviderData;
}

/**
 * What a provider needs back with a block, unchanged, on its own later requests: Gemini's
 * `thoughtSignature` on a part, the `extra_content` of a Chat Completions tool call. `wire` and
 * `origin` name who gave it: only the same protocol at the same origin gets it back; every other
 * provider leaves it out. Plain JSON, so it survives a paused state, the session log and a
 * continued session as it is.
 */
export interface ProviderData {
  /** The protocol that gave it: `"gemini"` (the native API), `"openai-chat"` (Chat Completions). */
  wire: string;
  /** The origin of the base URL the reply came from, such as `https://generativelanguage.googleapis.com`. */
  origin: string;
  /** Gemini: the part's `thoughtSignature`, byte for byte. */
  thoughtSignature?: string;
  /** Gemini: the call came without an id (skein made this block's id): it goes back without one. */
  madeId?: boolean;
  /** Chat Completions: the tool call's `extra_content`, as received. */
  extraContent?: unknown;
  /** OpenAI Responses: the reasoning item as received (`id`, `encrypted_content`, `summary`). */
  item?: Record<string, unknown>;
  /** OpenAI Responses: the id of the function call's item (`fc_...`), sent back with the call. */
  itemId?: string;
}

/**
 * Reasoning a provider returns as an opaque item (OpenAI Responses' `reasoning` items with their
 * `encrypted_content`): kept in the assistant message in its place, before the calls it
 * preceded, and sent back whole (`providerData.item`) to the same protocol and origin on every
 * later request. `text` is its readable summary ("" when the model gave none). Every other
 * provider leaves the block out.
 */
export interface ReasoningBlock {
  type: "reasoning";
  text: string;
  providerData: ProviderData;
}

export interface RedactedThinkingBlock {
  type: "redacted_thinking";
  data: string;
}

export type ContentBlock =
  | TextBlock
  | ImageBlock
  | ToolUseBlock
  | ToolResultBlock
  | ThinkingBlock
  | RedactedThinkingBlock
  | ReasoningBlock;

export interface Message {
  role: "user" | "assistant";
  content: string | ContentBlock[];
  /** Set on an assistant message whose stream failed part way; providers strip it at the edge. */
  incomplete?: boolean;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens: number;
  cacheCreationInputTokens: number;
  /** Of `outputTokens`, those spent reasoning, when the provider says. */
  reasoningTokens?: number;
  /**
   * What these tokens cost in US dollars, from the price table (`MODEL_PRICES` and the agent's
   * `pricing`). Undefined when a model call it covers had no price (never a guessed 0).
   */
  costUsd?: number;
}

export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
}

/**
 * Adds `turn` to `total`. The cost stays known only while everything added was priced: usage with
 * tokens but no `costUsd` (an unpriced model) makes the total's cost undefined from then on;
 * usage of nothing (no tokens, no cost) changes nothing.
 */
export function addUsage(total: Usage, turn: Partial<Usage> | undefined): void {
  if (!turn) return;
  const empty = isEmptyUsage(total);
  if (isEmptyUsage(turn)) return;
  total.inputTokens += turn.inputTokens ?? 0;
  total.outputTokens += turn.outputTokens ?? 0;
  total.cacheReadInputTokens += turn.cacheReadInputTokens ?? 0;
  total.cacheCreationInputTokens += turn.cacheCreationInputTokens ?? 0;
  if (turn.reasoningTokens !== undefined)
    total.reasoningTokens = (total.reasoningTokens ?? 0) + turn.reasoningTokens;
  const cost = empty
    ? turn.costUsd
    : total.costUsd === undefined || turn.costUsd === undefined
      ? undefined
      : total.costUsd + turn.costUsd;
  if (cost === undefined) delete total.costUsd;
  else total.costUsd = cost;
}

/** No tokens and no cost: what a run with no model call spent. */
function isEmptyUsage(usage: Partial<Usage>): boolean {
  return (
    !usage.inputTokens &&
    !usage.outputTokens &&
    !usage.cacheReadInputTokens &&
    !usage.cacheCreationInputTokens &&
    usage.costUsd === undefined
  );
}

/** The concatenated text of a message's or a result's text blocks. */
export function textOf(content: string | readonly ContentBlock[]): string {
  if (typeof content === "string") return content;
  let text = "";
  for (const block of content) if (block.type === "text") text += block.text;
  return text;
}
