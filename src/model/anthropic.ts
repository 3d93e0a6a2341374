import type { EventSourceMessage } from "eventsource-parser";
import {
  APIConnectionError,
  APIError,
  InternalServerError,
  OverloadedError,
  ProtocolError,
  RateLimitError,
} from "../errors.ts";
import type { ContentBlock, Message, Usage } from "./messages.ts";
import type { IncompleteToolCall, Model, ModelRequest, ModelStreamEvent } from "./model.ts";
import {
  lowerCaseKeys,
  PROVIDER_OPTION_KEYS,
  type ProviderOptions,
  resolveProvider,
} from "./provider-options.ts";
import {
  parseEventData,
  readErrorBody,
  type StreamDecoder,
  streamWithRetries,
} from "./transport.ts";

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
  const { apiKey, endpoint, transport, modelId, assertKey } = resolveProvider({
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
        readError: (status, headers, text) => readErrorBody(status, headers, text, "request-id"),
        createDecoder: () => new AnthropicDecoder(),
      });
    },
  };
}

const EPHEMERAL = { type: "ephemeral" } as const;

/**
 * The transcript as the API wants it: `incomplete` stripped, and with caching a breakpoint on the
 * last message, so each turn of a tool loop reads everything before it from the cache.
 */
function wireMessages(messages: Message[], caching: boolean): unknown[] {
  const wire: { role: string; content: string | unknown[] }[] = messages.map((message) => ({
    role: message.role,
    content: message.content,
  }));
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

/** Reads Anthropic's SSE events (message_start ... message_stop) into model stream events. */
class AnthropicDecoder implements StreamDecoder {
  #content: ContentBlock[] = [];
  #json = new Map<number, string>();
  #usage: Partial<Usage> = {};
  #stopReason = "";
  #incomplete: IncompleteToolCall[] = [];
  #started = false;
  #finished = false;
  /** Blocks that got their content_block_stop; a tool_use block without one was cut short. */
  #stopped = new Set<number>();
  /** Announce complete tool calls as they finish (eager execution), until one is cut short. */
  #announce = true;

  isComplete(): boolean {
    return this.#finished;
  }

  isKeepAlive(event: EventSourceMessage): boolean {
    return event.event === "ping";
  }

  push(event: EventSourceMessage): ModelStreamEvent[] {
    if (event.event === "ping") return [];
    const data = parseEventData(event.data);
    const type = event.event ?? (data.type as string | undefined);
    switch (type) {
      case "message_start": {
        this.#started = true;
        const usage = (data.message as { usage?: Record<string, number> } | undefined)?.usage ?? {};
        this.#usage = {
          inputTokens: usage.input_tokens ?? 0,
          outputTokens: usage.output_tokens ?? 0,
          cacheReadInputTokens: usage.cache_read_input_tokens ?? 0,
          cacheCreationInputTokens: usage.cache_creation_input_tokens ?? 0,
        };
        return [];
      }
      case "content_block_start":
        return this.#startBlock(data.index as number, data.content_block as ContentBlock);
      case "content_block_delta":
        return this.#delta(data.index as number, data.delta as Record<string, unknown>);
      case "content_block_stop":
        return this.#stopBlock(data.index as number);
      case "message_delta": {
        const delta = data.delta as { stop_reason?: string } | undefined;
        if (delta?.stop_reason) this.#stopReason = delta.stop_reason;
        const usage = data.usage as Record<string, number> | undefined;
        if (usage?.output_tokens !== undefined) this.#usage.outputTokens = usage.output_tokens;
        if (usage?.input_tokens !== undefined) this.#usage.inputTokens = usage.input_tokens;
        return [];
      }
      case "message_stop":
        this.#finished = true;
        return [this.#finalMessage()];
      case "error": {
        const error = (data.error ?? {}) as { type?: string; message?: string };
        throw streamError(
          error.type ?? "api_error",
          error.message ?? "the stream reported an error",
        );
      }
      default:
        return []; // Unknown event types are for newer API versions; skipping them is what the official clients do.
    }
  }

  end(): ModelStreamEvent[] {
    if (!this.#finished) {
      throw new APIConnectionError(
        this.#started
          ? "The model's stream ended before message_stop: the turn is incomplete."
          : "The model's stream ended before it began.",
      );
    }
    return [];
  }

  #startBlock(index: number, block: ContentBlock | undefined): ModelStreamEvent[] {
    // A hostile index must not make us allocate or walk a huge array.
    if (!block || !Number.isInteger(index) || index < 0 || index > this.#content.length + 16) {
      throw new ProtocolError(
        `content_block_start with an unusable index (${String(index)}) or no block.`,
      );
    }
    if (block.type === "tool_use") {
      // Some compatible servers send the whole input here, with no deltas.
      this.#content[index] = {
        type: "tool_use",
        id: block.id,
        name: block.name,
        input: block.input ?? {},
      };
      this.#json.set(index, "");
    } else if (block.type === "text")
      this.#content[index] = { type: "text", text: block.text ?? "" };
    else if (block.type === "thinking")
      this.#content[index] = { type: "thinking", thinking: block.thinking ?? "", signature: "" };
    else this.#content[index] = block;
    return [];
  }

  #delta(index: number, delta: Record<string, unknown>): ModelStreamEvent[] {
    const block = this.#content[index];
    if (!block)
      throw new ProtocolError(`content_block_delta for block ${index}, which was never started.`);
    switch (delta.type) {
      case "text_delta":
        if (block.type === "text") block.text += String(delta.text);
        return [{ type: "text_delta", text: String(delta.text) }];
      case "thinking_delta":
        if (block.type === "thinking") block.thinking += String(delta.thinking);
        return [{ type: "thinking_delta", thinking: String(delta.thinking) }];
      case "signature_delta":
        if (block.type === "thinking")
          block.signature = (block.signature ?? "") + String(delta.signature);
        return [];
      case "input_json_delta":
        this.#json.set(index, (this.#json.get(index) ?? "") + String(delta.partial_json));
        return [];
      default:
        return [];
    }
  }

  #stopBlock(index: number): ModelStreamEvent[] {
    this.#stopped.add(index);
    const block = this.#content[index];
    if (block?.type !== "tool_use") return [];
    const raw = this.#json.get(index) ?? "";
    let reason: string | undefined;
    try {
      if (raw.trim() !== "") block.input = JSON.parse(raw);
      if (typeof block.input !== "object" || block.input === null || Array.isArray(block.input)) {
        reason = "its input was not a JSON object";
        block.input = {};
      }
    } catch {
      reason = "its input was not valid JSON";
      block.input = {};
    }
    if (reason) {
      this.#incomplete.push({ id: block.id, name: block.name, reason });
      // Later calls must not be announced early: they would overtake this one.
      this.#announce = false;
      return [];
    }
    // Input that parses is complete (a cut would leave it unparseable): announce it now, so
    // eager execution can start it while the reply goes on.
    return this.#announce
      ? [{ type: "tool_call", id: block.id, name: block.name, input: block.input }]
      : [];
  }

  #finalMessage(): ModelStreamEvent {
    // A max_tokens stop is why the last tool call's input did not parse: say so.
    const last = this.#content.findLast((block) => block?.type === "tool_use");
    if (this.#stopReason === "max_tokens" && last?.type === "tool_use") {
      const cut = this.#incomplete.find((call) => call.id === last.id);
      if (cut) cut.reason = "the reply hit max_tokens while writing it";
    }
    this.#content.forEach((block, index) => {
      if (block?.type === "tool_use" && !this.#stopped.has(index)) {
        this.#incomplete.push({
          id: block.id,
          name: block.name,
          reason: `the reply stopped (${this.#stopReason || "early"}) while writing it`,
        });
      }
    });
    const event: ModelStreamEvent = {
      type: "message",
      // Empty text blocks are dropped (the API refuses them when sent back); so is an empty signature.
      message: { role: "assistant", content: this.#content.filter(Boolean).flatMap(cleanBlock) },
      stopReason: this.#stopReason || "end_turn",
      usage: this.#usage,
    };
    if (this.#incomplete.length) event.incompleteToolCalls = this.#incomplete;
    return event;
  }
}

/** An error event inside the stream: typed by its `type`, with no HTTP status (RELIABILITY P7). */
function streamError(type: string, message: string): APIError {
  const text = `${type}: ${message}`;
  if (type === "overloaded_error") return new OverloadedError(text, { type });
  if (type === "rate_limit_error") return new RateLimitError(text, { type });
  if (type === "api_error") return new InternalServerError(text, { type });
  return new APIError(text, { type });
}

function cleanBlock(block: ContentBlock): ContentBlock[] {
  if (block.type === "text" && block.text === "") return [];
  if (block.type === "thinking" && !block.signature)
    return [{ type: "thinking", thinking: block.thinking }];
  return [block];
}
