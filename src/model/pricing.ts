// What a model call costs (design/models.md, "Cost"): a price table per model id, in US dollars
// per million tokens, and the cost of one call's usage.

import { ConfigurationError } from "../core/errors.ts";
import type { Usage } from "../core/messages.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";

/** A model's prices in US dollars per million tokens (the shape of the agent's `pricing`). */
export interface ModelPrice {
  /** Input tokens not read from the cache. */
  inputPerMTok: number;
  /** Output tokens, reasoning included. */
  outputPerMTok: number;
  /** Input tokens read from the cache; default `inputPerMTok`. */
  cacheReadPerMTok?: number;
  /** Input tokens written to the cache; default `inputPerMTok`. */
  cacheWritePerMTok?: number;
}

/** Prices by model id. */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** The day `MODEL_PRICES` was last taken (UTC, ISO 8601). */
export const PRICES_TAKEN = "2026-12-07";

/**
 * The prices skein knows, for the models its docs name: list prices of the providers' own hosts,
 * standard tier, at `PRICES_TAKEN`. They change: give `pricing` to `createAgent` to add a model or
 * override a price.
 *
 * Source of every entry: the generated model catalogue of the pi agent toolkit
 * (github.com/earendil-works/pi, formerly badlogic/pi-mono; packages/ai/src/models.generated.ts),
 * which is generated from the providers' published price lists. The Anthropic and OpenAI entries
 * were first taken at pi-mono commit 83378aad (committed 2026-03-15); the Gemini entries, and
 * gpt-5.5, gpt-5.4-mini, gpt-5.4-nano, gpt-4.1-nano and claude-opus-4-7, were taken on 2026-12-07
 * from its stored copy at commit 00282b5b, against which every earlier entry was checked unchanged.
 */
export const MODEL_PRICES: PriceTable = Object.freeze({
  // Anthropic (cache writes: the 5-minute cache).
  "claude-opus-4-7": price(5, 25, 0.5, 6.25),
  "claude-opus-4-6": price(5, 25, 0.5, 6.25),
  "claude-sonnet-4-6": price(3, 15, 0.3, 3.75),
  "claude-sonnet-4-5": price(3, 15, 0.3, 3.75),
  "claude-haiku-4-5": price(1, 5, 0.1, 1.25),
  // OpenAI (no charge for cache writes).
  "gpt-5.5": price(5, 30, 0.5, 0),
  "gpt-5.4": price(2.5, 15, 0.25, 0),
  "gpt-5.4-mini": price(0.75, 4.5, 0.075, 0),
  "gpt-5.4-nano": price(0.2, 1.25, 0.02, 0),
  "gpt-5.2": price(1.75, 14, 0.175, 0),
  "gpt-5.1": price(1.25, 10, 0.13, 0),
  "gpt-5": price(1.25, 10, 0.125, 0),
  "gpt-5-mini": price(0.25, 2, 0.025, 0),
  "gpt-5-nano": price(0.05, 0.4, 0.005, 0),
  "gpt-4.1": price(2, 8, 0.5, 0),
  "gpt-4.1-mini": price(0.4, 1.6, 0.1, 0),
  "gpt-4.1-nano": price(0.1, 0.4, 0.03, 0),
  "gpt-4o": price(2.5, 10, 1.25, 0),
  "gpt-4o-mini": price(0.15, 0.6, 0.08, 0),
  o1: price(15, 60, 7.5, 0),
  o3: price(2, 8, 0.5, 0),
  "o3-mini": price(1.1, 4.4, 0.55, 0),
  "o4-mini": price(1.1, 4.4, 0.28, 0),
  // Google Gemini, the Gemini API's paid tier (thoughts are billed as output). One price a model:
  // where Google charges more for prompts over 200k tokens (the Pro models), the lower tier.
  // Cache writes as the catalogue gives them; Gemini reports none.
  "gemini-3.1-pro-preview": price(2, 12, 0.2, 0),
  "gemini-3.1-flash-lite-preview": price(0.25, 1.5, 0.025, 1),
  "gemini-3-pro-preview": price(2, 12, 0.2, 0),
  "gemini-3-flash-preview": price(0.5, 3, 0.05, 0),
  "gemini-2.5-pro": price(1.25, 10, 0.125, 0),
  "gemini-2.5-flash": price(0.3, 2.5, 0.03, 0),
  "gemini-2.5-flash-lite": price(0.1, 0.4, 0.025, 0),
  "gemini-2.0-flash": price(0.1, 0.4, 0.025, 0),
});

function price(
  inputPerMTok: number,
  outputPerMTok: number,
  cacheReadPerMTok: number,
  cacheWritePerMTok: number,
): ModelPrice {
  return Object.freeze({ inputPerMTok, outputPerMTok, cacheReadPerMTok, cacheWritePerMTok });
}

/**
 * The price of a model id: the agent's `pricing` first, then `MODEL_PRICES`; each by the id as
 * given, then without a date suffix (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`) or an
 * `anthropic:`/`openai:`/`google:` prefix. Undefined when neither table has it.
 */
export function priceOf(modelId: string, pricing?: PriceTable): ModelPrice | undefined {
  for (const id of candidates(modelId)) {
    if (pricing && Object.hasOwn(pricing, id)) return pricing[id];
    if (Object.hasOwn(MODEL_PRICES, id)) return MODEL_PRICES[id];
  }
  return undefined;
}

function candidates(modelId: string): string[] {
  const bare = modelId.replace(/^(anthropic|openai|openai-chat|google):/, "");
  const undated = bare.replace(/-(\d{8}|\d{4}-\d{2}-\d{2})$/, "");
  return [...new Set([modelId, bare, undated])];
}

/** What `usage` cost at `price`, in US dollars. */
export function costOf(usage: Partial<Usage>, price: ModelPrice): number {
  const perToken = (perMTok: number | undefined, tokens: number | undefined) =>
    ((perMTok ?? price.inputPerMTok) * (tokens ?? 0)) / 1_000_000;
  return (
    perToken(price.inputPerMTok, usage.inputTokens) +
    perToken(price.outputPerMTok, usage.outputTokens) +
    perToken(price.cacheReadPerMTok, usage.cacheReadInputTokens) +
    perToken(price.cacheWritePerMTok, usage.cacheCreationInputTokens)
  );
}

/** `usage` with its cost, when the model has a price; the same object, unpriced, when not. */
export function priced(
  usage: Partial<Usage> | undefined,
  modelId: string,
  pricing?: PriceTable,
): Partial<Usage> | undefined {
  if (!usage) return usage;
  const found = priceOf(modelId, pricing);
  return found ? { ...usage, costUsd: costOf(usage, found) } : usage;
}

const PRICE_KEYS: ReadonlySet<string> = new Set([
  "inputPerMTok",
  "outputPerMTok",
  "cacheReadPerMTok",
  "cacheWritePerMTok",
]);

/** Checks an agent's `pricing`; throws `ConfigurationError` saying what is wrong. */
export function checkPricing(prefix: string, pricing: unknown): PriceTable | undefined {
  if (pricing === undefined) return undefined;
  if (typeof pricing !== "object" || pricing === null || Array.isArray(pricing))
    throw new ConfigurationError(
      `${prefix}: pricing must be an object of prices by model id, such as { "my-model": { inputPerMTok: 1, outputPerMTok: 4 } }, received ${describeValue(pricing)}.`,
    );
  for (const [id, entry] of Object.entries(pricing)) {
    const where = `${prefix}: pricing["${id}"]`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry))
      throw new ConfigurationError(
        `${where} must be { inputPerMTok, outputPerMTok, cacheReadPerMTok?, cacheWritePerMTok? } in US dollars per million tokens, received ${describeValue(entry)}.`,
      );
    assertKnownOptions(where, entry, PRICE_KEYS);
    for (const key of PRICE_KEYS) {
      const value = (entry as Record<string, unknown>)[key];
      const required = key === "inputPerMTok" || key === "outputPerMTok";
      if (value === undefined && !required) continue;
      if (typeof value !== "number" || !Number.isFinite(value) || value < 0)
        throw new ConfigurationError(
          `${where}.${key} must be a price in US dollars per million tokens (a finite number, 0 or more), received ${describeValue(value)}.`,
        );
    }
  }
  return pricing as PriceTable;
}
