import { ConfigurationError } from "../core/errors.ts";
import { assertKnownOptions, assertPositiveInteger, describeValue } from "../core/options.ts";
import type { TransportOptions } from "./transport.ts";

/** What every provider factory accepts (DESIGN: provider options). */
export interface ProviderOptions {
  apiKey?: string | undefined;
  baseURL?: string | undefined;
  /** The model id sent when the agent gives no `modelName`. */
  model?: string | undefined;
  /** Extra headers; they override skein's own (for example `anthropic-version`). */
  headers?: Record<string, string> | undefined;
  /** Retries of a failed turn before anything of it was passed on; default 2. */
  maxRetries?: number | undefined;
  /** A `retry-after` longer than this is not waited for (normal backoff applies); default 60,000. */
  maxRetryDelayMs?: number | undefined;
  /** Until the response headers arrive; default 120,000. */
  timeoutMs?: number | undefined;
  /** Between stream events (keep-alive comments and pings do not count); default 120,000. */
  idleTimeoutMs?: number | undefined;
  /**
   * The whole of one attempt, from the request to the stream's end; default 600,000 (10 minutes).
   * A server that keeps sending events but never finishes ends with a retryable `APITimeoutError`.
   */
  totalTimeoutMs?: number | undefined;
  /**
   * The `fetch` every HTTP request goes through (retries included), with `globalThis.fetch`'s
   * signature: for a proxy or a custom dispatcher (Node's own fetch ignores `HTTPS_PROXY`).
   * Timeouts, retries and abort work as with the default. Default: `globalThis.fetch`.
   */
  fetch?: typeof globalThis.fetch | undefined;
}

export const PROVIDER_OPTION_KEYS: readonly string[] = [
  "apiKey",
  "baseURL",
  "model",
  "headers",
  "maxRetries",
  "maxRetryDelayMs",
  "timeoutMs",
  "idleTimeoutMs",
  "totalTimeoutMs",
  "fetch",
  "structuredOutputs",
];

export function resolveTransport(prefix: string, options: ProviderOptions): TransportOptions {
  if (
    options.maxRetries !== undefined &&
    (!Number.isInteger(options.maxRetries) || options.maxRetries < 0)
  ) {
    throw new ConfigurationError(
      `${prefix}: maxRetries must be a whole number of retries (0 or more), received ${describeValue(options.maxRetries)}.`,
    );
  }
  assertPositiveInteger(prefix, "maxRetryDelayMs", options.maxRetryDelayMs);
  assertPositiveInteger(prefix, "timeoutMs", options.timeoutMs);
  assertPositiveInteger(prefix, "idleTimeoutMs", options.idleTimeoutMs);
  assertPositiveInteger(prefix, "totalTimeoutMs", options.totalTimeoutMs);
  if (options.fetch !== undefined && typeof options.fetch !== "function") {
    throw new ConfigurationError(
      `${prefix}: fetch must be a function with the signature of globalThis.fetch, received ${describeValue(options.fetch)}.`,
    );
  }
  if (options.headers !== undefined) {
    const valid =
      typeof options.headers === "object" &&
      options.headers !== null &&
      Object.values(options.headers).every((value) => typeof value === "string");
    if (!valid) throw new ConfigurationError(`${prefix}: headers must be an object of strings.`);
  }
  return {
    maxRetries: options.maxRetries ?? 2,
    maxRetryDelayMs: options.maxRetryDelayMs ?? 60_000,
    timeoutMs: options.timeoutMs ?? 120_000,
    idleTimeoutMs: options.idleTimeoutMs ?? 120_000,
    totalTimeoutMs: options.totalTimeoutMs ?? 600_000,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };
}

/** Which environment variables a provider reads. */
export type EnvironmentName = "ANTHROPIC" | "OPENAI" | "GEMINI";

/** The variables of each provider: its keys (the first set one counts) and its base URL. */
export const ENVIRONMENT: Record<EnvironmentName, { keys: readonly string[]; baseURL: string }> = {
  ANTHROPIC: { keys: ["ANTHROPIC_API_KEY"], baseURL: "ANTHROPIC_BASE_URL" },
  OPENAI: { keys: ["OPENAI_API_KEY"], baseURL: "OPENAI_BASE_URL" },
  GEMINI: {
    keys: ["GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"],
    baseURL: "GOOGLE_GEMINI_BASE_URL",
  },
};

/** The first key variable that is set (an empty one counts as unset), and its name. */
export function keyVariable(
  variable: EnvironmentName,
  env: NodeJS.ProcessEnv = process.env,
): { name: string; key: string } | undefined {
  for (const name of ENVIRONMENT[variable].keys) {
    const key = env[name];
    if (key) return { name, key };
  }
  return undefined;
}

/**
 * The key and base URL: given, else `<PREFIX>_API_KEY` / `<PREFIX>_BASE_URL`, else the provider's
 * own host. A key from the environment goes only where that environment points (see
 * `environmentKey`); `withheld` names it when it was kept back.
 */
export function readEnvironment(
  prefix: string,
  options: ProviderOptions,
  variable: EnvironmentName,
  defaultBaseURL: string,
): { apiKey: string | undefined; baseURL: string; withheld?: string } {
  for (const name of ["apiKey", "baseURL", "model"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "string") {
      throw new ConfigurationError(
        `${prefix}: ${name} must be a string, received ${describeValue(options[name])}.`,
      );
    }
  }
  // An empty variable counts as unset, as shells often leave them.
  const baseURL = options.baseURL || process.env[ENVIRONMENT[variable].baseURL] || defaultBaseURL;
  try {
    new URL(baseURL);
  } catch {
    throw new ConfigurationError(
      `${prefix}: baseURL must be an absolute URL such as ${defaultBaseURL}, received ${describeValue(baseURL)}.`,
    );
  }
  if (options.apiKey) return { apiKey: options.apiKey, baseURL };
  const apiKey = environmentKey(variable, baseURL, defaultBaseURL);
  const withheld = apiKey ? undefined : keyVariable(variable)?.name;
  return withheld ? { apiKey, baseURL, withheld } : { apiKey, baseURL };
}

/**
 * `<PREFIX>_API_KEY`, when `baseURL` is where the environment means it to go: the provider's own
 * host (same origin as `defaultBaseURL`), or `<PREFIX>_BASE_URL` itself. Code such as
 * `{ apiKey: process.env.DEEPSEEK_API_KEY, baseURL: "https://api.deepseek.com/anthropic" }` with
 * that variable unset must not hand `ANTHROPIC_API_KEY` to another company: no key is sent, and a
 * 401 says to pass `apiKey`. The CLI resolves its key by this same rule.
 */
export function environmentKey(
  variable: EnvironmentName,
  baseURL: string,
  defaultBaseURL: string,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const key = keyVariable(variable, env)?.key;
  if (!key) return undefined;
  const target = parsedURL(baseURL);
  if (!target) return undefined;
  if (target.origin === parsedURL(defaultBaseURL)?.origin) return key;
  const meant = parsedURL(env[ENVIRONMENT[variable].baseURL] || "");
  return meant && samePlace(meant, target) ? key : undefined;
}

function parsedURL(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/** The same origin and path, trailing slashes aside. */
function samePlace(a: URL, b: URL): boolean {
  const path = (url: URL) => url.pathname.replace(/\/+$/, "");
  return a.origin === b.origin && path(a) === path(b);
}

/** Header names are case-insensitive: lower-cased, a user's header replaces skein's own instead of joining it. */
export function lowerCaseKeys(headers: Record<string, string> | undefined): Record<string, string> {
  const lower: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) lower[name.toLowerCase()] = value;
  return lower;
}

/** What both factories resolve once from their options: where to send, with which key, how patiently. */
export interface ResolvedProvider {
  apiKey: string | undefined;
  endpoint: string;
  transport: TransportOptions;
  modelId: string;
  /** Said after a 401 when no key was sent: which option sends one. */
  missingKeyHint?: string;
}

export function resolveProvider(spec: {
  prefix: string;
  options: ProviderOptions & { maxTokens?: number; structuredOutputs?: boolean };
  keys: ReadonlySet<string>;
  variable: EnvironmentName;
  defaultBaseURL: string;
  path: string;
  defaultModel: string;
}): ResolvedProvider {
  const { prefix, options, variable } = spec;
  assertKnownOptions(prefix, options, spec.keys);
  assertPositiveInteger(prefix, "maxTokens", options.maxTokens);
  if (options.structuredOutputs !== undefined && typeof options.structuredOutputs !== "boolean") {
    throw new ConfigurationError(
      `${prefix}: structuredOutputs must be a boolean, received ${describeValue(options.structuredOutputs)}.`,
    );
  }
  const { apiKey, baseURL, withheld } = readEnvironment(
    prefix,
    options,
    variable,
    spec.defaultBaseURL,
  );
  const endpoint = `${baseURL.replace(/\/+$/, "")}${spec.path}`;
  const ownHost = new URL(spec.defaultBaseURL).hostname;
  const server = new URL(baseURL).host;
  // Said after a 401: with no key sent, the server's refusal is most likely about that.
  const missingKeyHint = apiKey
    ? undefined
    : withheld
      ? `No API key was sent: ${withheld} is sent only to ${ownHost} or to ${ENVIRONMENT[variable].baseURL}. Pass apiKey (to createAgent or ${prefix}) with the key for ${server}, or set ${ENVIRONMENT[variable].baseURL} to this server.`
      : `No API key was sent to ${server}: pass apiKey (to createAgent or ${prefix}).`;
  // A key is required only for the provider's own host; local and compatible servers may need
  // none. The key is read here, once, so a missing one is known now: the factory throws.
  if (!apiKey && new URL(endpoint).hostname === ownHost)
    throw new ConfigurationError(
      `${prefix}: no API key for ${ownHost}. Set ${ENVIRONMENT[variable].keys.join(" or ")}, or pass apiKey (and baseURL for another server).`,
    );
  return {
    ...(missingKeyHint ? { missingKeyHint } : {}),
    apiKey,
    endpoint,
    transport: resolveTransport(prefix, options),
    modelId: options.model ?? spec.defaultModel,
  };
}
