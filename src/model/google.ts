import { GeminiDecoder } from "./gemini-decoder.ts";
import { wireContents, wireTools } from "./gemini-request.ts";
import type { Model, ModelRequest, ModelStreamEvent } from "./model.ts";
import {
  lowerCaseKeys,
  PROVIDER_OPTION_KEYS,
  type ProviderOptions,
  resolveProvider,
} from "./provider-options.ts";
import type { ReasoningSettings } from "./reasoning.ts";
import { type Refuser, refuse, toolChoiceOf } from "./settings.ts";
import { readErrorBody, streamWithRetries } from "./transport.ts";

export const GOOGLE_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com";
export const GOOGLE_DEFAULT_MODEL = "gemini-2.5-flash";

export interface GoogleOptions extends ProviderOptions {
  /** The reply's token limit (`generationConfig.maxOutputTokens`), when given; else the model's default. */
  maxTokens?: number | undefined;
  /**
   * Typed output (the agent's `output`) as `responseMimeType: "application/json"` with
   * `responseJsonSchema`; default on. Gemini 2.x models refuse it together with function tools:
   * turn it off for them, and the engine offers a `final_output` tool instead.
   */
  structuredOutputs?: boolean | undefined;
}

const GOOGLE_KEYS: ReadonlySet<string> = new Set([...PROVIDER_OPTION_KEYS, "maxTokens"]);

/**
 * Google's Gemini API (`generativelanguage.googleapis.com`), natively: `streamGenerateContent`
 * with server-sent events. `baseURL` excludes `/v1beta`; `GEMINI_API_KEY` (then
 * `GOOGLE_GENERATIVE_AI_API_KEY`) and `GOOGLE_GEMINI_BASE_URL` are read when not given. Each
 * part's `thoughtSignature` is kept on its block and sent back on the same part, byte for byte,
 * on every later request to the same origin.
 */
export function google(options: GoogleOptions = {}): Model {
  const { apiKey, endpoint, transport, modelId, missingKeyHint } = resolveProvider({
    prefix: "google()",
    options,
    keys: GOOGLE_KEYS,
    variable: "GEMINI",
    defaultBaseURL: GOOGLE_DEFAULT_BASE_URL,
    path: "",
    defaultModel: GOOGLE_DEFAULT_MODEL,
  });
  const base = endpoint.replace(/\/+$/, "");
  const origin = new URL(base).origin;
  const structuredOutputs = options.structuredOutputs ?? true;
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "text/event-stream",
    ...(apiKey ? { "x-goog-api-key": apiKey } : {}),
    ...lowerCaseKeys(options.headers),
  };
  const readError = (status: number, responseHeaders: Record<string, string>, text: string) =>
    readErrorBody(status, responseHeaders, geminiErrorBody(text), "x-request-id", missingKeyHint);
  const createDecoder = () => new GeminiDecoder(origin);
  const urls = new Map<string, string>();
  const urlFor = (model: string) => {
    let url = urls.get(model);
    if (!url) {
      const name = model.startsWith("models/") ? model.slice("models/".length) : model;
      url = `${base}/v1beta/models/${encodeURIComponent(name)}:streamGenerateContent?alt=sse`;
      if (urls.size < 64) urls.set(model, url);
    }
    return url;
  };

  return {
    provider: "google",
    modelId,
    structuredOutputs,
    stream(
      request: ModelRequest,
      { signal }: { signal: AbortSignal },
    ): AsyncIterable<ModelStreamEvent> {
      const body: Record<string, unknown> = {
        contents: wireContents(request.messages, origin, request.modelName ?? modelId),
      };
      if (request.system) body.systemInstruction = { parts: [{ text: request.system }] };
      if (request.tools.length) body.tools = wireTools(request.tools);
      const generationConfig = generationConfigOf(request, options.maxTokens);
      const choice = toolChoiceOf(GOOGLE, request);
      if (choice !== undefined)
        body.toolConfig = { functionCallingConfig: functionCalling(choice) };
      if (structuredOutputs && request.output) {
        generationConfig.responseMimeType = "application/json";
        generationConfig.responseJsonSchema = request.output.schema;
      }
      if (Object.keys(generationConfig).length) body.generationConfig = generationConfig;
      return streamWithRetries({
        url: urlFor(request.modelName ?? modelId),
        // A copy per call: a user's fetch may change what it is given.
        headers: { ...headers },
        body,
        signal,
        transport,
        readError,
        createDecoder,
      });
    },
  };
}

const GOOGLE: Refuser = { prefix: "google()", api: "the Gemini API" };

/** The API's limit on `stopSequences`. */
const MAX_STOP_SEQUENCES = 5;

/** The call's settings as `generationConfig`, after the refusals that need no request. */
function generationConfigOf(
  request: ModelRequest,
  maxTokens: number | undefined,
): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  const settings = request.settings;
  const limit = settings?.maxOutputTokens ?? request.maxTokens ?? maxTokens;
  if (limit !== undefined) config.maxOutputTokens = limit;
  if (!settings) return config;
  if (settings.temperature !== undefined) {
    if (settings.temperature < 0 || settings.temperature > 2) {
      throw refuse(
        GOOGLE,
        `modelSettings.temperature is ${settings.temperature}, outside what ${GOOGLE.api} takes (0 to 2). Give a value from 0 to 2.`,
      );
    }
    config.temperature = settings.temperature;
  }
  if (settings.topP !== undefined) config.topP = settings.topP;
  const stop = settings.stopSequences;
  if (stop && stop.length > MAX_STOP_SEQUENCES) {
    throw refuse(
      GOOGLE,
      `modelSettings.stopSequences has ${stop.length} entries, more than ${GOOGLE.api} takes: at most ${MAX_STOP_SEQUENCES} stop sequences.`,
    );
  }
  if (stop?.length) config.stopSequences = stop;
  const reasoning = settings.reasoning;
  if (reasoning) {
    const thinking = thinkingConfigOf(reasoning);
    if (thinking) config.thinkingConfig = thinking;
  }
  return config;
}

/**
 * Reasoning settings as Gemini's `thinkingConfig`: `effort` as `thinkingLevel` (`"none"` as a
 * `thinkingBudget` of 0, which turns thinking off where the model allows it), `budgetTokens` as
 * `thinkingBudget`, and `includeThoughts` when a summary is asked. Gemini takes a level or a
 * budget, not both, and has no `"xhigh"` level: each is a `ConfigurationError` before any request.
 */
export function thinkingConfigOf(
  reasoning: ReasoningSettings,
): Record<string, unknown> | undefined {
  const config: Record<string, unknown> = {};
  const { effort, budgetTokens, summary } = reasoning;
  if (effort !== undefined && budgetTokens !== undefined) {
    throw refuse(
      GOOGLE,
      `modelSettings.reasoning has both effort ("${effort}") and budgetTokens (${budgetTokens}); ${GOOGLE.api} takes a thinking level or a thinking budget, not both. Give one of them.`,
    );
  }
  if (effort === "xhigh") {
    throw refuse(
      GOOGLE,
      `modelSettings.reasoning.effort "xhigh" has no Gemini thinking level (its levels are "minimal", "low", "medium" and "high"). Use "high", or budgetTokens.`,
    );
  }
  if (effort === "none") config.thinkingBudget = 0;
  else if (effort !== undefined) config.thinkingLevel = effort;
  if (budgetTokens !== undefined) config.thinkingBudget = budgetTokens;
  if (summary !== undefined) config.includeThoughts = true;
  return Object.keys(config).length ? config : undefined;
}

function functionCalling(choice: NonNullable<ReturnType<typeof toolChoiceOf>>): unknown {
  if (typeof choice === "object") return { mode: "ANY", allowedFunctionNames: [choice.name] };
  return { mode: choice === "any" ? "ANY" : choice === "none" ? "NONE" : "AUTO" };
}

/**
 * Gemini's error body (`{"error":{"code","message","status"}}`) with its `status` (such as
 * `RESOURCE_EXHAUSTED`) read as the error's type, as the shared reader expects it.
 */
function geminiErrorBody(text: string): string {
  try {
    const parsed = JSON.parse(text) as unknown;
    // Some proxies answer with the error inside an array.
    const body = (Array.isArray(parsed) ? parsed[0] : parsed) as {
      error?: { message?: unknown; status?: unknown; type?: unknown };
    };
    const error = body?.error;
    if (typeof error === "object" && error !== null && error.type === undefined) {
      return JSON.stringify({ error: { message: error.message, type: error.status } });
    }
    return Array.isArray(parsed) ? JSON.stringify(body) : text;
  } catch {
    return text;
  }
}
