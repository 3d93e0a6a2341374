import { anthropic, google, type Model, openai } from "../index.ts";
import { ANTHROPIC_DEFAULT_BASE_URL } from "../model/anthropic.ts";
import { parseModelName } from "../model/by-name.ts";
import { GOOGLE_DEFAULT_BASE_URL } from "../model/google.ts";
import { OPENAI_DEFAULT_BASE_URL } from "../model/openai.ts";
import { ENVIRONMENT, type EnvironmentName, environmentKey } from "../model/provider-options.ts";
import { CliError } from "./failure.ts";

export type ProviderName = "anthropic" | "openai" | "google";
export const PROVIDER_NAMES: readonly ProviderName[] = ["anthropic", "openai", "google"];

export interface ProviderFlags {
  provider?: ProviderName;
  model?: string;
  baseUrl?: string;
}

export interface ResolvedProvider {
  name: ProviderName;
  model: Model;
  modelId: string;
  baseURL: string;
}

const PROVIDERS: Record<ProviderName, { prefix: EnvironmentName; defaultBaseURL: string }> = {
  anthropic: { prefix: "ANTHROPIC", defaultBaseURL: ANTHROPIC_DEFAULT_BASE_URL },
  openai: { prefix: "OPENAI", defaultBaseURL: OPENAI_DEFAULT_BASE_URL },
  google: { prefix: "GEMINI", defaultBaseURL: GOOGLE_DEFAULT_BASE_URL },
};

/**
 * The model the command talks to: `--provider` (default: the one `--model` names, as
 * model/by-name.ts reads it, else anthropic), its base URL from `--base-url`, else
 * `<PREFIX>_BASE_URL` (`GOOGLE_GEMINI_BASE_URL` for google), else the provider's own, and its key
 * from `<PREFIX>_API_KEY` (`GEMINI_API_KEY`, then `GOOGLE_GENERATIVE_AI_API_KEY`) when that
 * URL is the provider's own host or that base URL variable. A key is
 * required only for the provider's own host: a local server (Ollama, vLLM, llama.cpp) usually
 * needs none. Throws `CliError` before anything is sent.
 */
export function resolveProvider(
  flags: ProviderFlags,
  env: NodeJS.ProcessEnv = process.env,
): ResolvedProvider {
  // `--model gpt-4o` or `--model openai:qwen3` picks the protocol as a model name does in
  // createAgent; `--provider` wins over a family (`gpt-*` through an Anthropic-compatible proxy).
  const named = flags.model ? parseModelName(flags.model) : undefined;
  const prefixed = named !== undefined && named.model !== flags.model;
  if (prefixed && flags.provider !== undefined && flags.provider !== named.protocol) {
    throw new CliError(
      `--model ${flags.model} names the ${named.protocol} protocol but --provider says ${flags.provider}; drop one of them.`,
    );
  }
  const name = flags.provider ?? named?.protocol ?? "anthropic";
  const { prefix, defaultBaseURL } = PROVIDERS[name];
  const variables = ENVIRONMENT[prefix];
  const baseURL = flags.baseUrl ?? (env[variables.baseURL] || defaultBaseURL);
  // The key goes only to the provider's own host or to <PREFIX>_BASE_URL, never to another
  // --base-url: a server named on the command line does not get the environment's key.
  const apiKey = environmentKey(prefix, baseURL, defaultBaseURL, env);
  if (!apiKey && sameHost(baseURL, defaultBaseURL)) {
    throw new CliError(
      `set ${variables.keys.join(" or ")} or pass --base-url for a server that needs none`,
    );
  }
  const options = {
    baseURL,
    ...(apiKey ? { apiKey } : {}),
    ...(named ? { model: named.model } : {}),
  };
  const model =
    name === "anthropic"
      ? anthropic(options)
      : name === "google"
        ? google(options)
        : openai(options);
  return { name, model, modelId: model.modelId, baseURL };
}

function sameHost(url: string, other: string): boolean {
  try {
    return new URL(url).hostname === new URL(other).hostname;
  } catch {
    return false; // not a URL: the provider says so, with the expected form
  }
}

/** The system prompt of the command's agent (`skein dev` resumes runs with the same agent). */
export function cliSystemPrompt(cwd: string): string {
  return `You are skein, an agent run from the command line in the directory ${cwd}. Answer concisely.`;
}
