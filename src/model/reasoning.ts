// `modelSettings.reasoning` (design/models.md, "Reasoning settings"): one setting for every
// protocol, checked strictly, and what each protocol can take of it.

import { ConfigurationError } from "../core/errors.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";
import { type Refuser, refuse } from "./settings.ts";

export type ReasoningEffort = "none" | "minimal" | "low" | "medium" | "high" | "xhigh";
export type ReasoningSummary = "auto" | "concise" | "detailed";

/** How much the model reasons before it answers, for models that reason. */
export interface ReasoningSettings {
  /** OpenAI's effort levels; Anthropic reads them as a thinking budget, Gemini as `thinkingLevel`. */
  effort?: ReasoningEffort;
  /** A readable summary of the reasoning (Responses; Gemini's `includeThoughts`). */
  summary?: ReasoningSummary;
  /** A token budget for reasoning (Anthropic's `budget_tokens`, Gemini's `thinkingBudget`). */
  budgetTokens?: number;
}

export const REASONING_EFFORTS: readonly ReasoningEffort[] = [
  "none",
  "minimal",
  "low",
  "medium",
  "high",
  "xhigh",
];
export const REASONING_SUMMARIES: readonly ReasoningSummary[] = ["auto", "concise", "detailed"];
const REASONING_KEYS: ReadonlySet<string> = new Set(["effort", "summary", "budgetTokens"]);

/** Checks `modelSettings.reasoning`; throws `ConfigurationError` saying what is wrong. */
export function checkReasoning(prefix: string, value: unknown): ReasoningSettings | undefined {
  if (value === undefined) return undefined;
  const where = `${prefix}: modelSettings.reasoning`;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ConfigurationError(
      `${where} must be an object { effort?, summary?, budgetTokens? }, received ${describeValue(value)}.`,
    );
  assertKnownOptions(where, value, REASONING_KEYS);
  const { effort, summary, budgetTokens } = value as ReasoningSettings;
  const list = (values: readonly string[]) => values.map((entry) => `"${entry}"`).join(", ");
  if (effort !== undefined && !REASONING_EFFORTS.includes(effort))
    throw new ConfigurationError(
      `${where}.effort must be one of ${list(REASONING_EFFORTS)}, received ${describeValue(effort)}.`,
    );
  if (summary !== undefined && !REASONING_SUMMARIES.includes(summary))
    throw new ConfigurationError(
      `${where}.summary must be one of ${list(REASONING_SUMMARIES)}, received ${describeValue(summary)}.`,
    );
  if (
    budgetTokens !== undefined &&
    (typeof budgetTokens !== "number" || !Number.isInteger(budgetTokens) || budgetTokens < 0)
  )
    throw new ConfigurationError(
      `${where}.budgetTokens must be a whole number of tokens (0 or more), received ${describeValue(budgetTokens)}.`,
    );
  if (effort === "none" && budgetTokens !== undefined && budgetTokens > 0)
    throw new ConfigurationError(
      `${where}: effort "none" turns reasoning off, but budgetTokens is ${budgetTokens}; give one or the other.`,
    );
  return value as ReasoningSettings;
}

/** Refuses the parts of `reasoning` a protocol cannot take, before any request is sent. */
export function refuseReasoning(
  who: Refuser,
  reasoning: ReasoningSettings,
  cannot: readonly ("summary" | "budgetTokens" | "effort")[],
  instead: string,
): void {
  for (const key of cannot) {
    if (reasoning[key] === undefined) continue;
    throw refuse(
      who,
      `modelSettings.reasoning.${key} cannot be sent: ${who.api} has no such setting. ${instead}`,
    );
  }
}

/**
 * The thinking budget Anthropic's `thinking` gets for an effort (its API takes a budget, not an
 * effort): documented in docs/models.md. `"none"` turns thinking off.
 */
export const ANTHROPIC_EFFORT_BUDGETS: Readonly<Record<Exclude<ReasoningEffort, "none">, number>> =
  Object.freeze({
    minimal: 1024,
    low: 2048,
    medium: 8192,
    high: 16_384,
    xhigh: 32_768,
  });

/** Anthropic's smallest thinking budget. */
export const ANTHROPIC_MIN_BUDGET = 1024;
