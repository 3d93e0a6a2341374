import type { Model, ModelRequest, ModelStreamEvent } from "./model.ts";
import { OpenAIDecoder } from "./openai-decoder.ts";
import { wireMessages, wireTools } from "./openai-request.ts";
import { restoreOptionals } from "./openai-strict.ts";
import {
  lowerCaseKeys,
  PROVIDER_OPTION_KEYS,
  type ProviderOptions,
  resolveProvider,
} from "./provider-options.ts";
import { refuseReasoning } from "./reasoning.ts";
import { type Refuser, refuse, toolChoiceOf } from "./settings.ts";
import { readErrorBody, streamWithRetries } from "./transport.ts";

export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";
export const OPENAI_DEFAULT_MODEL = "gpt-5-mini";

export interface OpenAIOptions extends ProviderOptions {
  /** The reply's token limit, when given (otherwise the server's default applies): sent as
   * `max_completion_tokens` to OpenAI's own host, which refuses `max_tokens` for newer models,
   * and as `max_tokens` elsewhere. */
  maxTokens?: number | undefined;
  /** Send thinking back as `reasoning_content` on assistant messages, as DeepSeek's thinking mode
   * requires in tool loops. Default: on for DeepSeek's host, off elsewhere. */
  replayReasoning?: boolean | undefined;
  /** OpenAI strict mode for tool schemas, where the endpoint supports it; default off. */
  strictTools?: boolean | undefined;
  /**
   * Typed output (the agent's `output`) as `response_format: { type: "json_schema" }`; default
   * on. Turn it off for a server without JSON-schema response formats: the engine then offers a
   * `final_output` tool instead.
   */
  structuredOutputs?: boolean | undefined;
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
  const { apiKey, endpoint, transport, modelId, missingKeyHint } = resolveProvider({
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
  const structuredOutputs = options.structuredOutputs ?? true;
  const strictTools = options.strictTools === true;
  // What every call sends alike, made once: the headers, and how errors and streams are read.
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "text/event-stream",
    ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
    ...lowerCaseKeys(options.headers),
  };
  const readError = (status: number, responseHeaders: Record<string, string>, text: string) =>
    readErrorBody(status, responseHeaders, text, "x-request-id", missingKeyHint);
  const origin = new URL(endpoint).origin;
  const plainDecoder = () => new OpenAIDecoder(undefined, origin);

  return {
    provider: "openai",
    modelId,
    structuredOutputs,
    stream(
      request: ModelRequest,
      { signal }: { signal: AbortSignal },
    ): AsyncIterable<ModelStreamEvent> {
      const body: Record<string, unknown> = {
        model: request.modelName ?? modelId,
        messages: wireMessages(request.system, request.messages, { replayReasoning, origin }),
        stream: true,
        stream_options: { include_usage: true },
      };
      const maxTokens = request.settings?.maxOutputTokens ?? request.maxTokens ?? options.maxTokens;
      if (maxTokens !== undefined) body[maxTokensField] = maxTokens;
      if (request.tools.length) body.tools = wireTools(request.tools, strictTools);
      applySettings(body, request);
      if (structuredOutputs && request.output) {
        // Not strict: OpenAI's strict mode needs every property required and every object closed,
        // which an arbitrary schema is not; the engine validates the answer itself.
        body.response_format = {
          type: "json_schema",
          json_schema: { name: request.output.name, schema: request.output.schema, strict: false },
        };
      }
      return streamWithRetries({
        url: endpoint,
        // A copy per call: a user's fetch may change what it is given.
        headers: { ...headers },
        body,
        signal,
        transport,
        readError,
        createDecoder: strictTools
          ? () =>
              new OpenAIDecoder(
                (name, input) =>
                  restoreOptionals(
                    input,
                    request.tools.find((tool) => tool.name === name)?.input_schema,
                  ),
                origin,
              )
          : plainDecoder,
      });
    },
  };
}

const OPENAI: Refuser = { prefix: "openai()", api: "the OpenAI Chat Completions API" };

/** The API's limit on `stop`. */
const MAX_STOP_SEQUENCES = 4;

/**
 * The call's model settings as Chat Completions fields (`temperature`, `top_p`, `stop`,
 * `tool_choice`; the max-tokens field is set with the body), after the refusals that need no
 * request: more than four stop sequences, a tool choice the call's tools cannot satisfy.
 */
function applySettings(body: Record<string, unknown>, request: ModelRequest): void {
  const settings = request.settings;
  if (!settings) return;
  if (settings.temperature !== undefined) body.temperature = settings.temperature;
  if (settings.topP !== undefined) body.top_p = settings.topP;
  const stop = settings.stopSequences;
  if (stop && stop.length > MAX_STOP_SEQUENCES) {
    throw refuse(
      OPENAI,
      `modelSettings.stopSequences has ${stop.length} entries, more than ${OPENAI.api} takes: at most ${MAX_STOP_SEQUENCES} stop sequences.`,
    );
  }
  if (stop?.length) body.stop = stop;
  const reasoning = settings.reasoning;
  if (reasoning) {
    refuseReasoning(
      OPENAI,
      reasoning,
      ["summary", "budgetTokens"],
      'Chat Completions takes only reasoning.effort (as reasoning_effort); for a summary use openai({ api: "responses" }).',
    );
    if (reasoning.effort !== undefined) body.reasoning_effort = reasoning.effort;
  }
  const choice = toolChoiceOf(OPENAI, request);
  if (choice === undefined) return;
  body.tool_choice =
    typeof choice === "object"
      ? { type: "function", function: { name: choice.name } }
      : choice === "any"
        ? "required"
        : choice;
}
