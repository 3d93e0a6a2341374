// Policy a whole tree of runs shares (design/policy.md): budgets counted over the tree, and the
// trip that ends the tree cleanly (a budget or a guardrail's tripwire) through one abort.

import { ConfigurationError } from "../core/errors.ts";
import { describeValue } from "../core/options.ts";
import type { ErrorInfo } from "./types.ts";

/** Why the tree ended: the subtype of every run's result, and the error it carries. */
export interface Trip {
  subtype: "error_max_budget" | "error_guardrail";
  error: ErrorInfo;
}

/** One tree's shared state: made with its top-level run, shared by every child run. */
export class TreeState {
  readonly controller = new AbortController();
  tripped: Trip | undefined;

  /** Ends the tree: the first trip wins; every run's signal aborts with it. */
  trip(trip: Trip): void {
    if (this.tripped) return;
    this.tripped = trip;
    this.controller.abort(new Error(trip.error.message));
  }
}

export interface BudgetLimits {
  maxBudgetUsd?: number;
  maxTotalTokens?: number;
  maxToolCalls?: number;
}

/** One budget (an agent's or a run's), and what the runs beneath it have spent. */
export interface Budget {
  limits: BudgetLimits;
  /** Where it was given, for the message: `AgentOptions` or `RunOptions`. */
  where: string;
  usd: number;
  tokens: number;
  toolCalls: number;
}

export const BUDGET_KEYS = ["maxBudgetUsd", "maxTotalTokens", "maxToolCalls"] as const;

/** Checks the budget options of an agent or a run; undefined when none is given. */
export function budgetOf(where: string, options: BudgetLimits | undefined): Budget | undefined {
  if (!options) return undefined;
  const limits: BudgetLimits = {};
  for (const key of BUDGET_KEYS) {
    const value = options[key];
    if (value === undefined) continue;
    const whole = key !== "maxBudgetUsd";
    if (
      typeof value !== "number" ||
      !Number.isFinite(value) ||
      value < 0 ||
      (whole && !Number.isInteger(value))
    )
      throw new ConfigurationError(
        `${where}: ${key} must be ${whole ? "a whole number" : "a number of US dollars"} of 0 or more, received ${describeValue(value)}.`,
      );
    limits[key] = value;
  }
  if (Object.keys(limits).length === 0) return undefined;
  return { limits, where, usd: 0, tokens: 0, toolCalls: 0 };
}

/** A fresh copy of a budget for one run (what is spent is counted per run of the agent). */
export function freshBudget(budget: Budget): Budget {
  return { limits: budget.limits, where: budget.where, usd: 0, tokens: 0, toolCalls: 0 };
}

/** Adds spending to every budget over a run; trips the tree when one is exceeded (strictly over). */
export function spend(
  budgets: readonly Budget[] | undefined,
  tree: TreeState | undefined,
  amount: { tokens?: number; usd?: number; toolCalls?: number },
): boolean {
  if (!budgets || budgets.length === 0) return false;
  for (const budget of budgets) {
    budget.tokens += amount.tokens ?? 0;
    budget.usd += amount.usd ?? 0;
    budget.toolCalls += amount.toolCalls ?? 0;
  }
  for (const budget of budgets) {
    const over = exceeded(budget);
    if (over) {
      tree?.trip({
        subtype: "error_max_budget",
        error: { name: "BudgetExceededError", message: over },
      });
      return true;
    }
  }
  return false;
}

function exceeded(budget: Budget): string | undefined {
  const { limits } = budget;
  if (limits.maxToolCalls !== undefined && budget.toolCalls > limits.maxToolCalls)
    return `maxToolCalls (${budget.where}) is ${limits.maxToolCalls} tool calls, and the agent tree reached ${budget.toolCalls}: the run ended, with every child run.`;
  if (limits.maxTotalTokens !== undefined && budget.tokens > limits.maxTotalTokens)
    return `maxTotalTokens (${budget.where}) is ${limits.maxTotalTokens} tokens, and the agent tree reached ${budget.tokens} (input + output): the run ended, with every child run.`;
  if (limits.maxBudgetUsd !== undefined && budget.usd > limits.maxBudgetUsd)
    return `maxBudgetUsd (${budget.where}) is $${limits.maxBudgetUsd}, and the agent tree reached $${budget.usd.toFixed(6)}: the run ended, with every child run.`;
  return undefined;
}
