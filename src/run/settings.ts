// Model settings and context-management options, checked at assembly (design/interactive.md).

import { ConfigurationError } from "../core/errors.ts";
import {
  assertKnownOptions,
  CONTEXT_KEYS,
  describeValue,
  MODEL_SETTINGS_KEYS,
  SUMMARIZE_KEYS,
} from "../core/options.ts";
import type { ModelSettings } from "../model/model.ts";
import { isModel, type Model } from "../model/model.ts";
import { checkReasoning } from "../model/reasoning.ts";
import type { ContextOptions } from "./agent-options.ts";

/** Checks `modelSettings` (of an agent, or returned by `beforeModelCall`); throws `ConfigurationError`. */
export function checkModelSettings(
  prefix: string,
  settings: unknown,
  toolNames: ReadonlySet<string> | undefined,
): ModelSettings {
  if (settings === undefined) return {};
  assertKnownOptions(`${prefix}: modelSettings`, settings, MODEL_SETTINGS_KEYS);
  const given = settings as ModelSettings;
  const bad = (key: string, what: string, value: unknown): never => {
    throw new ConfigurationError(
      `${prefix}: modelSettings.${key} must be ${what}, received ${describeValue(value)}.`,
    );
  };
  const { temperature, topP, stopSequences, toolChoice, maxOutputTokens } = given;
  checkReasoning(prefix, given.reasoning);
  if (
    temperature !== undefined &&
    (typeof temperature !== "number" || !Number.isFinite(temperature) || temperature < 0)
  )
    bad("temperature", "a finite number of at least 0", temperature);
  if (topP !== undefined && (typeof topP !== "number" || !(topP >= 0 && topP <= 1)))
    bad("topP", "a number from 0 to 1", topP);
  if (
    stopSequences !== undefined &&
    (!Array.isArray(stopSequences) ||
      stopSequences.some((entry) => typeof entry !== "string" || entry === ""))
  )
    bad("stopSequences", "an array of non-empty strings", stopSequences);
  if (
    maxOutputTokens !== undefined &&
    (typeof maxOutputTokens !== "number" ||
      !Number.isInteger(maxOutputTokens) ||
      maxOutputTokens < 1)
  )
    bad("maxOutputTokens", "a positive integer", maxOutputTokens);
  if (toolChoice !== undefined) {
    const named = typeof toolChoice === "object" && toolChoice !== null ? toolChoice : undefined;
    if (named) {
      assertKnownOptions(`${prefix}: modelSettings.toolChoice`, named, new Set(["name"]));
      if (typeof named.name !== "string" || (toolNames && !toolNames.has(named.name)))
        bad(
          "toolChoice",
          `"auto", "any", "required", "none" or { name } naming one of the agent's tools${toolNames ? ` (${[...toolNames].join(", ") || "none"})` : ""}`,
          named.name,
        );
    } else if (!["auto", "any", "required", "none"].includes(toolChoice as string))
      bad("toolChoice", '"auto", "any", "required", "none" or { name: "<tool>" }', toolChoice);
  }
  return given;
}

/** Settings as a request carries them: `"required"` is `"any"`; undefined when there are none. */
export function requestSettings(
  settings: ModelSettings,
): NonNullable<import("../model/model.ts").ModelRequest["settings"]> | undefined {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(settings)) {
    const value = settings[key as keyof ModelSettings];
    if (value === undefined) continue;
    out ??= {};
    out[key] = value;
  }
  // Nearly every call: an agent without settings sends none, and nothing is made for it.
  if (!out) return undefined;
  if (out.toolChoice === "required") out.toolChoice = "any";
  return out as NonNullable<import("../model/model.ts").ModelRequest["settings"]>;
}

/** Context management as the engine reads it. */
export interface ContextSettings {
  /** Undefined: by the model id of each call. */
  window?: number;
  threshold: number;
  target: number;
  summarize: false | { model?: Model; instructions?: string };
}

export function checkContextOptions(prefix: string, options: unknown): ContextSettings | false {
  if (options === false) return false;
  const defaults: ContextSettings = { threshold: 0.8, target: 0.5, summarize: false };
  if (options === undefined) return defaults;
  if (options === true) return defaults;
  assertKnownOptions(`${prefix}: context`, options, CONTEXT_KEYS);
  const given = options as ContextOptions;
  const bad = (key: string, what: string, value: unknown): never => {
    throw new ConfigurationError(
      `${prefix}: context.${key} must be ${what}, received ${describeValue(value)}.`,
    );
  };
  const settings: ContextSettings = { ...defaults };
  if (given.window !== undefined) {
    if (typeof given.window !== "number" || !Number.isInteger(given.window) || given.window < 1)
      bad("window", "a positive integer (tokens)", given.window);
    settings.window = given.window;
  }
  const fraction = (key: "threshold" | "target", value: unknown) => {
    if (typeof value !== "number" || !(value > 0 && value <= 1))
      bad(key, "a fraction of the window, above 0 and at most 1", value);
    return value as number;
  };
  if (given.threshold !== undefined) settings.threshold = fraction("threshold", given.threshold);
  if (given.target !== undefined) settings.target = fraction("target", given.target);
  if (settings.target > settings.threshold)
    bad("target", `at most the threshold (${settings.threshold})`, settings.target);
  const summarize = given.summarize;
  if (summarize === true) settings.summarize = {};
  else if (summarize !== undefined && summarize !== false) {
    assertKnownOptions(`${prefix}: context.summarize`, summarize, SUMMARIZE_KEYS);
    if (summarize.model !== undefined && !isModel(summarize.model))
      bad("summarize.model", "a Model (a provider or scriptedModel)", summarize.model);
    if (summarize.instructions !== undefined && typeof summarize.instructions !== "string")
      bad("summarize.instructions", "a string", summarize.instructions);
    settings.summarize = { ...summarize };
  }
  return settings;
}

/** The context window of a model id, in tokens, when the agent sets none. */
export function defaultWindow(modelId: string): number {
  // Asked on every call: prefixes looked at without a regular expression.
  const id = modelId.startsWith("anthropic:")
    ? modelId.slice(10)
    : modelId.startsWith("openai:")
      ? modelId.slice(7)
      : modelId;
  if (id.startsWith("claude-")) return 200_000;
  if (id.startsWith("gpt-4.1")) return 1_047_576;
  if (id.startsWith("gpt-4o")) return 128_000;
  if (id.startsWith("gpt-5")) return 400_000;
  if (id.startsWith("o3") || id.startsWith("o4-mini")) return 200_000;
  return 128_000;
}
