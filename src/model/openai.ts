import type { EventSourceMessage } from "eventsource-parser";
import { APIConnectionError, apiErrorFor, InternalServerError, ProtocolError } from "../errors.ts";
import type { ContentBlock, Message, ToolResultBlock, Usage } from "./messages.ts";
import type {
  IncompleteToolCall,
  Model,
  ModelRequest,
  ModelStreamEvent,
  ModelToolSpec,
} from "./model.ts";
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

export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";
export const OPENAI_DEFAULT_MODEL = "gpt-5-mini";

export interface OpenAIOptions extends ProviderOptions {
  /** The reply's token limit, when given (otherwise the server's default applies): sent as
   * `max_completion_tokens` to OpenAI's own host, which refuses `max_tokens` for newer models,
   * and as `max_tokens` elsewhere. */
  maxTokens?: number;
  /** Send thinking back as `reasoning_content` on assistant messages, as DeepSeek's thinking mode
   * requires in tool loops. Default: on for DeepSeek's host, off elsewhere. */
  replayReasoning?: boolean;
  /** OpenAI strict mode for tool schemas, where the endpoint supports it; default off. */
  strictTools?: boolean;
}

const OPENAI_KEYS: ReadonlySet<string> = new Set([
  ...PROVIDER_OPTION_KEYS,
  "maxTokens",
  "strictTools",
  "replayReasoning",
]);

/**
 * The OpenAI Chat Completions API and the servers that speak it (DeepSeek, vLLM, Ollama,
 * llama.cpp, OpenRouter), streamed. `baseURL` includes `/v1`; `OPENAI_API_KEY` /
 * `OPENAI_BASE_URL` are read when not given.
 */
export function openai(options: OpenAIOptions = {}): Model {
  const { apiKey, endpoint, transport, modelId, assertKey } = resolveProvider({
    prefix: "openai()",
    options,
    keys: OPENAI_KEYS,
    variable: "OPENAI",
    defaultBaseURL: OPENAI_DEFAULT_BASE_URL,
    path: "/chat/completions",
    defaultModel: OPENAI_DEFAULT_MODEL,
  });
  // Capability flags, resolved once.
  const host = new URL(endpoint).hostname;
  const maxTokensField = host === "api.openai.com" ? "max_completion_tokens" : "max_tokens";
  const replayReasoning =
    options.replayReasoning ?? (host === "deepseek.com" || host.endsWith(".deepseek.com"));

  return {
    provider: "openai",
    modelId,
    stream(
      request: ModelRequest,
      { signal }: { signal: AbortSignal },
    ): AsyncIterable<ModelStreamEvent> {
      assertKey();
      const body: Record<string, unknown> = {
        model: request.modelName ?? modelId,
        messages: wireMessages(request.system, request.messages, replayReasoning),
        stream: true,
        stream_options: { include_usage: true },
      };
      const maxTokens = request.maxTokens ?? options.maxTokens;
      if (maxTokens !== undefined) body[maxTokensField] = maxTokens;
      if (request.tools.length)
        body.tools = request.tools.map((tool) => wireTool(tool, options.strictTools === true));
      return streamWithRetries({
        url: endpoint,
        headers: {
          "content-type": "application/json",
          accept: "text/event-stream",
          ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
          ...lowerCaseKeys(options.headers),
        },
        body,
        signal,
        transport,
        readError: (status, headers, text) => readErrorBody(status, headers, text, "x-request-id"),
        createDecoder: () =>
          new OpenAIDecoder(
            options.strictTools === true
              ? (name, input) =>
                  restoreOptionals(
                    input,
                    request.tools.find((tool) => tool.name === name)?.input_schema,
                  )
              : undefined,
          ),
      });
    },
  };
}

function wireTool(tool: ModelToolSpec, strict: boolean): unknown {
  return {
    type: "function",
    function: {
      name: tool.name,
      description: tool.description,
      parameters: strict ? strictSchema(tool.input_schema) : tool.input_schema,
      ...(strict ? { strict: true } : {}),
    },
  };
}

/**
 * Strict mode wants every object closed (`additionalProperties: false`) with every property
 * required; optional ones become nullable, and `restoreOptionals` removes those nulls again
 * before validation, so the tool sees the input its own schema describes.
 */
function strictSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strictSchema);
  if (typeof schema !== "object" || schema === null) return schema;
  const source = schema as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(source)) {
    if (key === "properties" || key === "$defs" || key === "definitions") {
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([name, inner]) => [
          name,
          strictSchema(inner),
        ]),
      );
    } else if (
      key === "items" ||
      key === "anyOf" ||
      key === "oneOf" ||
      key === "allOf" ||
      key === "prefixItems"
    ) {
      out[key] = strictSchema(value);
    } else out[key] = value;
  }
  if (
    source.type === "object" &&
    typeof source.properties === "object" &&
    source.properties !== null
  ) {
    const required = new Set(Array.isArray(source.required) ? (source.required as string[]) : []);
    const properties = out.properties as Record<string, unknown>;
    for (const name of Object.keys(properties)) {
      if (!required.has(name)) properties[name] = { anyOf: [properties[name], { type: "null" }] };
    }
    out.required = Object.keys(properties);
    out.additionalProperties = false;
  }
  return out;
}

/** Drops the nulls strict mode made the model send for optional properties (the original schema's view). */
function restoreOptionals(input: unknown, schema: unknown): unknown {
  if (typeof input !== "object" || input === null || typeof schema !== "object" || schema === null)
    return input;
  const source = schema as Record<string, unknown>;
  if (Array.isArray(input)) {
    return source.items ? input.map((item) => restoreOptionals(item, source.items)) : input;
  }
  const properties = (source.properties ?? {}) as Record<string, unknown>;
  const required = new Set(Array.isArray(source.required) ? (source.required as string[]) : []);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input as Record<string, unknown>)) {
    if (value === null && Object.hasOwn(properties, key) && !required.has(key)) continue;
    out[key] = Object.hasOwn(properties, key) ? restoreOptionals(value, properties[key]) : value;
  }
  return out;
}

/** The Anthropic-shaped transcript in chat-completions form: tool results become `tool` messages. */
function wireMessages(system: string, messages: Message[], replayReasoning: boolean): unknown[] {
  const wire: unknown[] = system ? [{ role: "system", content: system }] : [];
  const cache = replayReasoning ? wireWithReasoning : wireWithoutReasoning;
  for (const message of messages) {
    // Transcript messages never change once appended: each is converted once, not on every turn.
    let converted = cache.get(message);
    if (!converted) {
      converted = wireMessage(message, replayReasoning);
      cache.set(message, converted);
    }
    for (const entry of converted) wire.push(entry);
  }
  return wire;
}

const wireWithReasoning = new WeakMap<Message, unknown[]>();
const wireWithoutReasoning = new WeakMap<Message, unknown[]>();

/** One transcript message in chat-completions form: one message, or a user message's tool results as `tool` messages. */
function wireMessage(message: Message, replayReasoning: boolean): unknown[] {
  if (typeof message.content === "string")
    return [{ role: message.role, content: message.content }];
  if (message.role === "assistant") return [assistantMessage(message.content, replayReasoning)];
  const wire: unknown[] = [];
  const parts: unknown[] = [];
  for (const block of message.content) {
    if (block.type === "tool_result") wire.push(toolMessage(block));
    else if (block.type === "text") parts.push({ type: "text", text: block.text });
    else if (block.type === "image")
      parts.push({ type: "image_url", image_url: { url: imageUrl(block) } });
  }
  // Text alone goes as a string: some servers (DeepSeek) refuse an array of text parts.
  if (parts.length) {
    const allText = parts.every((part) => (part as { type: string }).type === "text");
    wire.push({
      role: "user",
      content: allText ? parts.map((part) => (part as { text: string }).text).join("\n") : parts,
    });
  }
  return wire;
}

function assistantMessage(blocks: ContentBlock[], replayReasoning: boolean): unknown {
  const text = blocks.map((block) => (block.type === "text" ? block.text : "")).join("");
  const reasoning = blocks
    .map((block) => (block.type === "thinking" ? block.thinking : ""))
    .join("");
  const toolCalls = blocks.flatMap((block) =>
    block.type === "tool_use"
      ? [
          {
            id: block.id,
            type: "function",
            function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
          },
        ]
      : [],
  );
  return {
    role: "assistant",
    content: text || null,
    ...(replayReasoning && reasoning ? { reasoning_content: reasoning } : {}),
    ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
  };
}

/** Tool messages carry text only; an image in a tool result is described, not dropped silently. */
function toolMessage(block: ToolResultBlock): unknown {
  const content =
    typeof block.content === "string"
      ? block.content
      : block.content
          .map((part) =>
            part.type === "text"
              ? part.text
              : "[image omitted: this API takes no images in tool results]",
          )
          .join("\n");
  return {
    role: "tool",
    tool_call_id: block.tool_use_id,
    content: block.is_error ? `Error: ${content}` : content,
  };
}

function imageUrl(block: Extract<ContentBlock, { type: "image" }>): string {
  return block.source.type === "url"
    ? block.source.url
    : `data:${block.source.media_type};base64,${block.source.data}`;
}

interface PartialToolCall {
  id: string;
  name: string;
  arguments: string;
  input?: unknown;
  /** Why the call cannot run, once read. */
  incomplete?: string;
}

/** Reads `chat.completion.chunk` events up to `[DONE]` into model stream events. */
class OpenAIDecoder implements StreamDecoder {
  readonly #restore: ((name: string, input: unknown) => unknown) | undefined;

  constructor(restore?: (name: string, input: unknown) => unknown) {
    this.#restore = restore;
  }

  #text = "";
  #reasoning = "";
  #calls: PartialToolCall[] = [];
  #finishReason = "";
  #usage: Partial<Usage> | undefined;
  #done = false;
  /** Calls read so far (complete ones announced, in order). */
  #announced = 0;
  /** False after a call that was cut short: no later call may overtake it. */
  #announcing = true;

  isComplete(): boolean {
    return this.#done;
  }

  push(event: EventSourceMessage): ModelStreamEvent[] {
    if (event.data.trim() === "[DONE]") {
      this.#done = true;
      return [];
    }
    const chunk = parseEventData(event.data);
    if (chunk.error) {
      // OpenRouter and others report failures inside the stream, with the HTTP status as `code`.
      const error = chunk.error as { message?: string; type?: string; code?: unknown };
      const message = `The model's stream reported an error: ${error.message ?? JSON.stringify(error)}`;
      const type = typeof error.type === "string" ? error.type : undefined;
      if (typeof error.code === "number") throw apiErrorFor(error.code, message, { type });
      // With no status to go by, an error event is a server-side failure: retried while nothing was passed on.
      throw new InternalServerError(message, { type });
    }
    if (chunk.usage) this.#usage = readUsage(chunk.usage as Record<string, unknown>);
    const out: ModelStreamEvent[] = [];
    for (const choice of (chunk.choices as Record<string, unknown>[] | undefined) ?? []) {
      const delta = (choice.delta ?? {}) as Record<string, unknown>;
      if (typeof delta.content === "string" && delta.content) {
        this.#text += delta.content;
        out.push({ type: "text_delta", text: delta.content });
      }
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (typeof reasoning === "string" && reasoning) {
        this.#reasoning += reasoning;
        out.push({ type: "thinking_delta", thinking: reasoning });
      }
      for (const call of (delta.tool_calls as Record<string, unknown>[] | undefined) ?? [])
        out.push(...this.#toolCallDelta(call));
      if (typeof choice.finish_reason === "string") this.#finishReason = choice.finish_reason;
    }
    return out;
  }

  /** Assembles fragments; a call is complete once a later call begins, and is announced then (eager execution). */
  #toolCallDelta(call: Record<string, unknown>): ModelStreamEvent[] {
    const index = typeof call.index === "number" ? call.index : this.#calls.length;
    // A hostile index must not make us walk or allocate a huge array.
    if (!Number.isInteger(index) || index < 0 || index > this.#calls.length + 16) {
      throw new ProtocolError(`A tool call delta has an unusable index (${String(call.index)}).`);
    }
    const fn = (call.function ?? {}) as { name?: string; arguments?: string };
    const current = this.#calls[index] ?? { id: "", name: "", arguments: "" };
    this.#calls[index] = current;
    if (typeof call.id === "string" && call.id) current.id = call.id;
    // Some servers repeat the name in every chunk: the name is set, not appended (as openai-node does).
    if (typeof fn.name === "string" && fn.name) current.name = fn.name;
    if (typeof fn.arguments === "string") current.arguments += fn.arguments;
    const out: ModelStreamEvent[] = [];
    while (this.#announced < index) out.push(...this.#announce(this.#announced++, false));
    return out;
  }

  /** Reads call `index`; returns its tool_call event when it is complete and nothing before it was cut. */
  #announce(index: number, last: boolean): ModelStreamEvent[] {
    const call = this.#calls[index];
    if (!call) return [];
    const id = call.id || `call_${index}`;
    let reason: string | undefined;
    try {
      call.input = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
      if (typeof call.input !== "object" || call.input === null || Array.isArray(call.input)) {
        reason = "its input was not a JSON object";
        call.input = {};
      }
      if (this.#restore) call.input = this.#restore(call.name, call.input);
      if (last && this.#finishReason === "length")
        reason = "the reply hit the length limit while writing it";
    } catch {
      reason =
        this.#finishReason === "length" && last
          ? "the reply hit the length limit while writing it"
          : "its input was not valid JSON";
    }
    if (reason) {
      call.incomplete = reason;
      this.#announcing = false;
      return [];
    }
    return this.#announcing ? [{ type: "tool_call", id, name: call.name, input: call.input }] : [];
  }

  /** Finished only with `[DONE]`: a stream that ends without it is cut, never a finished turn. */
  end(): ModelStreamEvent[] {
    if (!this.#done) {
      throw new APIConnectionError(
        "The model's stream ended without [DONE]: the turn is incomplete.",
      );
    }
    const content: ContentBlock[] = [];
    if (this.#reasoning) content.push({ type: "thinking", thinking: this.#reasoning });
    if (this.#text) content.push({ type: "text", text: this.#text });
    const incomplete: IncompleteToolCall[] = [];
    const out: ModelStreamEvent[] = [];
    while (this.#announced < this.#calls.length) {
      out.push(...this.#announce(this.#announced, this.#announced === this.#calls.length - 1));
      this.#announced++;
    }
    this.#calls.forEach((call, index) => {
      const id = call.id || `call_${index}`;
      if (call.incomplete) incomplete.push({ id, name: call.name, reason: call.incomplete });
      content.push({
        type: "tool_use",
        id,
        name: call.name,
        input: call.incomplete ? {} : call.input,
      });
    });
    const message: ModelStreamEvent = {
      type: "message",
      message: { role: "assistant", content },
      stopReason: Object.hasOwn(STOP_REASONS, this.#finishReason)
        ? STOP_REASONS[this.#finishReason]!
        : this.#finishReason || "end_turn",
    };
    if (this.#usage) message.usage = this.#usage;
    if (incomplete.length) message.incompleteToolCalls = incomplete;
    return [...out, message];
  }
}

const STOP_REASONS: Record<string, string> = {
  stop: "end_turn",
  tool_calls: "tool_use",
  length: "max_tokens",
  function_call: "tool_use",
};

/** `prompt_tokens` include cached tokens: those go to cacheReadInputTokens (DeepSeek names them `prompt_cache_hit_tokens`). */
function readUsage(usage: Record<string, unknown>): Partial<Usage> {
  const prompt = Number(usage.prompt_tokens ?? 0);
  const details = usage.prompt_tokens_details as { cached_tokens?: number } | undefined;
  const cached = Number(details?.cached_tokens ?? usage.prompt_cache_hit_tokens ?? 0);
  return {
    inputTokens: Math.max(0, prompt - cached),
    outputTokens: Number(usage.completion_tokens ?? 0),
    cacheReadInputTokens: cached,
    cacheCreationInputTokens: 0,
  };
}
