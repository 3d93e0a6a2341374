// A model given as a string (`createAgent({ model: "gpt-4o" })`, SKEIN_MODEL): which protocol it
// speaks, read from what users type.

import { ConfigurationError } from "../core/errors.ts";
import { anthropic } from "./anthropic.ts";
import { google } from "./google.ts";
import type { Model } from "./model.ts";
import { openai } from "./openai.ts";

export type Protocol = "anthropic" | "openai" | "google";

export interface NamedModel {
  /** Undefined for a bare name of no known family: the Anthropic protocol, by default. */
  protocol: Protocol | undefined;
  /** The model id to send, without an `anthropic:` / `openai:` / `google:` prefix. */
  model: string;
}

const PREFIXES: readonly Protocol[] = ["anthropic", "openai", "google"];
const FAMILIES: readonly [RegExp, Protocol][] = [
  [/^claude-/, "anthropic"],
  [/^(gpt-|o1|o3|o4)/, "openai"],
  [/^gemini-/, "google"],
];

const EXAMPLES: Record<Protocol, string> = {
  anthropic: "anthropic:claude-sonnet-4-6",
  openai: "openai:gpt-4o",
  google: "google:gemini-2.5-flash",
};

/**
 * `anthropic:<id>`, `openai:<id>` and `google:<id>` name the protocol outright (for any id:
 * `openai:qwen3`, `anthropic:deepseek-chat`); otherwise `claude-*` is Anthropic, `gpt-*`, `o1*`,
 * `o3*`, `o4*` are OpenAI, and `gemini-*` is Gemini's native API. Only these prefixes are read:
 * `qwen3:8b` (an Ollama tag) stays a bare name.
 */
export function parseModelName(name: string): NamedModel {
  for (const protocol of PREFIXES) {
    if (!name.startsWith(`${protocol}:`)) continue;
    const model = name.slice(protocol.length + 1);
    if (model.trim() === "") {
      throw new ConfigurationError(
        `model "${name}" names no model after "${protocol}:"; write it as ${protocol}:<model id>, such as ${EXAMPLES[protocol]}.`,
      );
    }
    return { protocol, model };
  }
  const family = FAMILIES.find(([pattern]) => pattern.test(name));
  return { protocol: family?.[1], model: name };
}

/**
 * The provider for a model name, with `apiKey` / `baseURL` given beside it. A bare name of no
 * known family speaks the Anthropic protocol (as for DeepSeek's Anthropic endpoint); when that
 * fails for want of a key or with a 401/403/404, the error says so and how to choose OpenAI.
 */
export function modelFromName(
  name: string,
  options: { apiKey?: string; baseURL?: string; source?: string },
): Model {
  const { protocol, model } = parseModelName(name);
  const settings = {
    model,
    ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
    ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
  };
  if (protocol === "openai") return openai(settings);
  if (protocol === "google") return google(settings);
  if (protocol === "anthropic") return anthropic(settings);
  const from = options.source ? ` (from ${options.source})` : "";
  const hint = `The model name "${name}"${from} has no protocol prefix, so it is sent with the Anthropic protocol; for an OpenAI-compatible server, write "openai:${name}".`;
  let provider: Model;
  try {
    provider = anthropic(settings);
  } catch (error) {
    throw withHint(error, hint);
  }
  return {
    provider: provider.provider,
    modelId: provider.modelId,
    structuredOutputs: provider.structuredOutputs ?? false,
    async *stream(request, streamOptions) {
      try {
        yield* provider.stream(request, streamOptions);
      } catch (error) {
        throw withHint(error, hint);
      }
    },
  };
}

/** The hint added to the errors a protocol mix-up causes; the error keeps its class and fields. */
function withHint(error: unknown, hint: string): unknown {
  if (!(error instanceof Error)) return error;
  const status = (error as { status?: unknown }).status;
  const mixUp =
    error instanceof ConfigurationError || status === 401 || status === 403 || status === 404;
  if (mixUp && !error.message.includes(hint))
    error.message = `${error.message.replace(/\.?\s*$/, ".")} ${hint}`;
  return error;
}
