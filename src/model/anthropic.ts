import { AnthropicDecoder } from "./anthropic-decoder.ts";
import type { ContentBlock, Message } from "./messages.ts";
import type { Model, ModelRequest, ModelStreamEvent } from "./model.ts";
import {
  lowerCaseKeys,
  PROVIDER_OPTION_KEYS,
  type ProviderOptions,
  resolveProvider,
} from "./provider-options.ts";
import { readErrorBody, streamWithRetries } from "./transport.ts";

export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";
export const ANTHROPIC_DEFAULT_MODEL = "claude-sonnet-4-6";
const ANTHROPIC_VERSION = "2023-06-01";

export interface AnthropicOptions extends ProviderOptions {
  /** Default 8192. */
  maxTokens?: number;
  /** Extended thinking, sent as is: `{ type: "enabled", budget_tokens }`. Thinking blocks are kept and sent back unchanged. */
  thinking?: Record<string, unknown>;
  /** Cache breakpoints on the system prompt, the tool list and the transcript; default on. */
  promptCaching?: boolean;
}

const ANTHROPIC_KEYS: ReadonlySet<string> = new Set([
  ...PROVIDER_OPTION_KEYS,
  "maxTokens",
  "thinking",
  "promptCaching",
]);

/**
 * The Anthropic Messages API (Anthropic itself and Anthropic-compatible endpoints), streamed.
 * `baseURL` excludes `/v1`; `ANTHROPIC_API_KEY` / `ANTHROPIC_BASE_URL` are read when not given.
 */
export function anthropic(options: AnthropicOptions = {}): Model {
  const { apiKey, endpoint, transport, modelId, assertKey, missingKeyHint } = resolveProvider({
    prefix: "anthropic()",
    options,
    keys: ANTHROPIC_KEYS,
    variable: "ANTHROPIC",
    defaultBaseURL: ANTHROPIC_DEFAULT_BASE_URL,
    path: "/v1/messages",
    defaultModel: ANTHROPIC_DEFAULT_MODEL,
  });
  const caching = options.promptCaching ?? true;

  return {
    provider: "anthropic",
    modelId,
    stream(
      request: ModelRequest,
      { signal }: { signal: AbortSignal },
    ): AsyncIterable<ModelStreamEvent> {
      assertKey();
      const body: Record<string, unknown> = {
        model: request.modelName ?? modelId,
        max_tokens: request.maxTokens ?? options.maxTokens ?? 8192,
        messages: wireMessages(request.messages, caching),
        stream: true,
      };
      if (request.system) {
        body.system = [
          { type: "text", text: request.system, ...(caching ? { cache_control: EPHEMERAL } : {}) },
        ];
      }
      if (request.tools.length) {
        body.tools = request.tools.map((tool, index) =>
          caching && index === request.tools.length - 1
            ? { ...tool, cache_control: EPHEMERAL }
            : tool,
        );
      }
      if (options.thinking) body.thinking = options.thinking;
      return streamWithRetries({
        url: endpoint,
        headers: {
          "content-type": "application/json",
          accept: "text/event-stream",
          "anthropic-version": ANTHROPIC_VERSION,
          ...(apiKey ? { "x-api-key": apiKey } : {}),
          ...lowerCaseKeys(options.headers),
        },
        body,
        signal,
        transport,
        readError: (status, headers, text) =>
          readErrorBody(status, headers, text, "request-id", missingKeyHint),
        createDecoder: () => new AnthropicDecoder(),
      });
    },
  };
}

const EPHEMERAL = { type: "ephemeral" } as const;

/**
 * The transcript as the API wants it: `incomplete` stripped, empty replies left out, turns that
 * alternate, and with caching a breakpoint on the last message, so each turn of a tool loop
 * reads everything before it from the cache.
 */
function wireMessages(messages: Message[], caching: boolean): unknown[] {
  const wire: { role: string; content: string | unknown[] }[] = [];
  for (const message of messages) {
    // A reply with nothing in it (the API refuses empty messages) says nothing worth replaying.
    if (message.role === "assistant" && message.content.length === 0) continue;
    const previous = wire.at(-1);
    // Turns alternate on the wire: consecutive messages of one role (a message added after a
    // batch's results) go as one turn, which is what the API makes of them.
    if (previous?.role === message.role) {
      previous.content = [...blocksOf(previous.content), ...blocksOf(message.content)];
    } else wire.push({ role: message.role, content: message.content });
  }
  if (caching) {
    // The last message, and the one two before it (the previous turn's end): the cache looks back
    // only about 20 blocks from a breakpoint, and one wide tool turn can add more than that.
    // With the system prompt and the tools, that is the API's limit of four breakpoints.
    for (const message of [wire.at(-1), wire.length >= 3 ? wire.at(-3) : undefined]) {
      if (message) markLastBlock(message);
    }
  }
  return wire;
}

function blocksOf(content: string | readonly unknown[]): unknown[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : [...content];
}

function markLastBlock(message: { content: string | unknown[] }): void {
  const blocks = (
    typeof message.content === "string"
      ? [{ type: "text", text: message.content }]
      : message.content
  ) as ContentBlock[];
  const index = blocks.findLastIndex(
    (block) =>
      block.type !== "thinking" &&
      block.type !== "redacted_thinking" &&
      !(block.type === "text" && block.text === ""),
  );
  if (index >= 0) {
    message.content = blocks.map((block, position) =>
      position === index ? { ...block, cache_control: EPHEMERAL } : block,
    );
  }
}
