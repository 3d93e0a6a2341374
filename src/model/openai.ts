import type { Model, ModelRequest, ModelStreamEvent } from "./model.ts";
import { OpenAIDecoder } from "./openai-decoder.ts";
import { wireMessages, wireTool } from "./openai-request.ts";
import { restoreOptionals } from "./openai-strict.ts";
import {
  lowerCaseKeys,
  PROVIDER_OPTION_KEYS,
  type ProviderOptions,
  resolveProvider,
} from "./provider-options.ts";
import { readErrorBody, streamWithRetries } from "./transport.ts";

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
  const { apiKey, endpoint, transport, modelId, assertKey, missingKeyHint } = resolveProvider({
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
        readError: (status, headers, text) =>
          readErrorBody(status, headers, text, "x-request-id", missingKeyHint),
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
