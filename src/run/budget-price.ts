// A dollar budget counts `usage.costUsd`, which only a priced model has: a model of the tree with
// no price would make `maxBudgetUsd` a budget that never trips. So it is refused before any
// request (design/policy.md, "Budgets"; prices: design/models.md).

import { ConfigurationError } from "../core/errors.ts";
import { priceOf } from "../model/pricing.ts";
import type { Budget } from "./budget.ts";
import type { EngineConfig } from "./config.ts";
import { agentRuntimeOf } from "./link.ts";

/** Whether any of these budgets counts dollars. */
export function countsDollars(budgets: readonly (Budget | undefined)[] | undefined): boolean {
  return budgets?.some((budget) => budget?.limits.maxBudgetUsd !== undefined) === true;
}

/** The model id a configuration's calls are priced by, when it is known without making the model. */
function pricedId(config: EngineConfig, above: string | undefined): string | undefined {
  if (config.inheritsModel) return above;
  const choice = config.model;
  return config.modelName ?? (choice.kind === "object" ? choice.model.modelId : choice.name);
}

/**
 * The agents of the tree under `config` (itself included, and every agent its agent tools can
 * start, at any depth) whose model has no price in their `pricing` or in `MODEL_PRICES`.
 * `modelId`: the root's model id when the configuration does not say it (a default model).
 */
export function unpricedModels(
  config: EngineConfig,
  modelId?: string,
): { agent: string; modelId: string }[] {
  const found: { agent: string; modelId: string }[] = [];
  const seen = new Set<EngineConfig>();
  const visit = (at: EngineConfig, name: string, above: string | undefined, given?: string) => {
    if (seen.has(at) || seen.size > 256) return;
    seen.add(at);
    const id = given ?? pricedId(at, above);
    if (id !== undefined && !priceOf(id, at.pricing)) found.push({ agent: name, modelId: id });
    for (const tool of at.tools.values()) {
      const runtime = agentRuntimeOf(tool);
      if (!runtime) continue;
      for (const [child, target] of runtime.targets) visit(target.config, child, id);
    }
  };
  visit(config, config.id ?? "the agent", undefined, modelId ?? pricedId(config, undefined));
  return found;
}

/** A `ConfigurationError` when a dollar budget is given and a model of the tree has no price. */
export function assertPricedBudget(where: string, config: EngineConfig, modelId?: string): void {
  const missing = unpricedModels(config, modelId);
  if (missing.length === 0) return;
  throw new ConfigurationError(unpricedMessage(where, missing));
}

export function unpricedMessage(where: string, missing: { agent: string; modelId: string }[]) {
  const list = missing.map(({ agent, modelId }) => `"${modelId}" (${agent})`).join(", ");
  const first = missing[0]!.modelId;
  const many = missing.length > 1;
  return `${where}: maxBudgetUsd counts US dollars, but the model${many ? "s" : ""} ${list} ${many ? "have" : "has"} no price, so the budget could never trip on ${many ? "their" : "its"} calls. Give the agent that runs it a price: pricing: { "${first}": { inputPerMTok, outputPerMTok } } (US dollars per million tokens), or use maxTotalTokens.`;
}
