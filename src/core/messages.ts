/**
 * The transcript uses the Anthropic Messages shape. Providers translate
 * to and from their wire format at the edge; the engine only ever sees these types.
 */

export interface TextBlock {
  type: "text";
  text: string;
  /** Provider data sent back with this block to the provider that gave it (a Gemini thought signature). */
  replay?: ProviderReplay;
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
  /** Provider data sent back with this call to the provider that gave it (a Gemini thought signature, `extra_content`). */
  replay?: ProviderReplay;
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
  /** Provider data sent back with this block to the provider that gave it (a Gemini thought signature). */
  replay?: ProviderReplay;
}

/**
 * What a provider gave to be sent back unchanged, byte for byte, on later requests: only to the
 * same protocol at the same host. Any other provider drops it, so a transcript moved to another
 * provider still works.
 */
export interface ProviderReplay {
  /** The protocol that gave it: `"openai-responses"`, `"openai-chat"`, `"gemini"`. */
  protocol: string;
  /** The host it came from (`api.openai.com`, `127.0.0.1:4000`). */
  host: string;
  /** The data as received (a Responses reasoning item; `{ thoughtSignature }`; `{ extra_content }`). */
  data: Record<string, unknown>;
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
  | RedactedThinkingBlock;

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
}

export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
}

export function addUsage(total: Usage, turn: Partial<Usage> | undefined): void {
  if (!turn) return;
  total.inputTokens += turn.inputTokens ?? 0;
  total.outputTokens += turn.outputTokens ?? 0;
  total.cacheReadInputTokens += turn.cacheReadInputTokens ?? 0;
  total.cacheCreationInputTokens += turn.cacheCreationInputTokens ?? 0;
}

/** The concatenated text of a message's or a result's text blocks. */
export function textOf(content: string | readonly ContentBlock[]): string {
  if (typeof content === "string") return content;
  let text = "";
  for (const block of content) if (block.type === "text") text += block.text;
  return text;
}
