// What one model call sends (design/interactive.md): the agent's request, changed for this call
// by `beforeModelCall`, compacted to fit the context window, with the output spec and settings.

import { ConfigurationError, describeThrown, HookError } from "../core/errors.ts";
import type { Message } from "../core/messages.ts";
import {
  isModel,
  type Model,
  type ModelRequest,
  type ModelSettings,
  type ModelToolSpec,
} from "../model/model.ts";
import { priceOf } from "../model/pricing.ts";
import type { ToolDefinition } from "../tools/types.ts";
import type { ModelCallChange } from "./agent-options.ts";
import { countsDollars, unpricedMessage } from "./budget-price.ts";
import { type Compacted, compact, contextMemory } from "./context.ts";
import {
  type ChainLink,
  callHook,
  chainOf,
  contextFor,
  type HookEntries,
  type HookPlace,
  hasHook,
  hookLabel,
  type InheritedHooks,
} from "./hooks.ts";
import type { RunContext } from "./loop.ts";
import { FINAL_OUTPUT } from "./output.ts";
import { checkModelSettings, requestSettings } from "./settings.ts";
import type { ErrorInfo } from "./types.ts";

export type PreparedCall =
  | {
      ok: true;
      model: Model;
      request: ModelRequest;
      /** The tool names this request offers: a call to any other is `not_found`. */
      offered: ReadonlySet<string>;
    }
  | { ok: false; error: ErrorInfo };

/** Runs the hook and context management, and builds the request; a failure is the run's error. */
export function prepareModelCall(
  run: RunContext,
  agentModel: Model,
): PreparedCall | Promise<PreparedCall> {
  const { config } = run;
  const parts: CallParts = {
    settings: config.modelSettings,
    tools: config.toolSpecs,
    offered: config.visible,
    messages: run.messages,
    model: agentModel,
  };
  // Without the hook (and under the context threshold) nothing here awaits.
  const chain = chainOf(placeOf(run), "beforeModelCall");
  return chain.length > 0 ? withHook(run, parts, chain) : buildRequest(run, parts);
}

type CallParts = {
  settings: ModelSettings;
  tools: RunContext["config"]["toolSpecs"];
  offered: ReadonlySet<string>;
  messages: Message[];
  model: Model;
};

async function withHook(
  run: RunContext,
  parts: CallParts,
  chain: ChainLink[],
): Promise<PreparedCall> {
  let current = parts;
  // Innermost first; each hook sees what the ones before it changed.
  for (const link of chain) {
    let change: unknown;
    try {
      change = await callHook(
        link,
        contextFor(
          link,
          {
            turn: run.numTurns,
            messages: current.messages.slice(),
            tools: current.tools.map((spec) => spec.name),
            model: current.model,
            modelSettings: { ...current.settings },
            usage: { ...run.usage },
            sessionId: run.sessionId,
            signal: run.signal,
          },
          run.link.parentCallId,
        ),
        { event: "beforeModelCall" },
        run.signal,
      );
    } catch (error) {
      const thrown = error instanceof HookError && error.cause !== undefined ? error.cause : error;
      return failed(new HookError(`${hookLabel(link)} threw: ${describeThrown(thrown).message}`));
    }
    const applied = applyChange(change, current);
    if ("error" in applied) return failed(applied.error);
    current = applied;
  }
  return buildRequest(run, current);
}

/** The output spec, context management and settings, on what this call sends. */
function buildRequest(run: RunContext, parts: CallParts): PreparedCall | Promise<PreparedCall> {
  const { config } = run;
  let { tools, offered } = parts;
  const { model } = parts;
  // With `output` and no native structured output, the answer is a call to `final_output`.
  const output = config.output;
  const native = output !== undefined && model.structuredOutputs === true;
  if (output && !native) {
    tools = withFinalOutput(tools, output.tool);
    offered = new Set([...offered, FINAL_OUTPUT]);
  }
  const request = (messages: Message[]): PreparedCall => {
    const built: ModelRequest = {
      system: config.system,
      // A shallow copy: the model may keep the request while the transcript grows.
      messages: messages === run.messages ? messages.slice() : messages,
      tools,
    };
    if (config.modelName !== undefined) built.modelName = config.modelName;
    built.sessionId = run.sessionId;
    const inEffect = requestSettings(parts.settings);
    if (inEffect) built.settings = inEffect;
    if (native) built.output = { name: FINAL_OUTPUT, schema: output.schema.jsonSchema };
    // A dollar budget over the run cannot count an unpriced call: refused before the request.
    const modelId = built.modelName ?? model.modelId;
    if (countsDollars(run.link.budgets) && !priceOf(modelId, config.pricing))
      return failed(
        new ConfigurationError(
          unpricedMessage("maxBudgetUsd", [{ agent: config.id ?? "the agent", modelId }]),
        ),
      );
    return { ok: true, model, request: built, offered };
  };
  if (!config.context) return request(parts.messages);
  run.contextMemory ??= contextMemory();
  const compacted = compact({
    settings: config.context,
    memory: run.contextMemory,
    model,
    system: config.system,
    tools,
    messages: parts.messages,
    turn: run.numTurns,
    signal: run.signal,
    emit: run.emit,
    usage: run.usage,
    pricing: config.pricing,
    transcript: parts.messages === run.messages,
    ...(hasHook(placeOf(run), "preCompact") ? { preCompact: preCompactOf(run) } : {}),
  });
  const after = (done: Compacted) => (done.ok ? request(done.messages) : failed(done.error));
  return compacted instanceof Promise ? compacted.then(after) : after(compacted);
}

/** The run's `preCompact` hooks as context management calls them: the first veto or summary wins. */
function preCompactOf(run: RunContext) {
  return async (messages: Message[]): Promise<{ veto: true } | { summary: string } | undefined> => {
    for (const link of chainOf(placeOf(run), "preCompact")) {
      const answer = await callHook(
        link,
        contextFor(
          link,
          { sessionId: run.sessionId, messages: messages.slice(), reason: "context_window" },
          run.link.parentCallId,
        ),
        { event: "preCompact" },
        run.signal,
      );
      if (typeof answer !== "object" || answer === null) continue;
      if ((answer as { veto?: unknown }).veto === true) return { veto: true };
      const summary = (answer as { summary?: unknown }).summary;
      if (typeof summary === "string" && summary !== "") return { summary };
    }
    return undefined;
  };
}

/** Where a run sits for its hooks. */
export function placeOf(run: {
  config: { hooks: HookEntries };
  link?: { hooks?: InheritedHooks[]; depth: number };
}): HookPlace {
  return { own: run.config.hooks, inherited: run.link?.hooks, depth: run.link?.depth ?? 0 };
}

/** Checks what the hook returned and applies it to this call. */
function applyChange(change: unknown, current: CallParts): CallParts | { error: Error } {
  if (change === undefined || change === null) return current;
  if (typeof change !== "object" || Array.isArray(change))
    return {
      error: new HookError(
        "beforeModelCall returned something that is not an object of changes (messages, tools, model, modelSettings).",
      ),
    };
  const given = change as ModelCallChange & Record<string, unknown>;
  const unknown = Object.keys(given).filter(
    (key) => !["messages", "tools", "model", "modelSettings"].includes(key),
  );
  if (unknown.length > 0)
    return {
      error: new HookError(`beforeModelCall returned unknown keys: ${unknown.join(", ")}.`),
    };
  const next = { ...current };
  if (given.messages !== undefined) {
    if (!Array.isArray(given.messages))
      return {
        error: new HookError(
          "beforeModelCall returned messages that are not an array of messages.",
        ),
      };
    next.messages = given.messages;
  }
  if (given.tools !== undefined) {
    if (!Array.isArray(given.tools))
      return {
        error: new HookError("beforeModelCall returned tools that are not an array of tool names."),
      };
    const bad = given.tools.filter((name) => !current.offered.has(name));
    if (bad.length > 0)
      return {
        error: new HookError(
          `beforeModelCall returned tools the agent does not send: ${bad.map((name) => JSON.stringify(name)).join(", ")}; return a subset of context.tools.`,
        ),
      };
    const keep = new Set(given.tools);
    next.tools = current.tools.filter((spec) => keep.has(spec.name));
    next.offered = keep;
  }
  if (given.model !== undefined) {
    if (!isModel(given.model))
      return { error: new HookError("beforeModelCall returned a model that is not a Model.") };
    next.model = given.model;
  }
  if (given.modelSettings !== undefined) {
    try {
      const checked = checkModelSettings("beforeModelCall", given.modelSettings, next.offered);
      next.settings = { ...current.settings, ...checked };
    } catch (error) {
      return {
        error: new HookError(
          error instanceof ConfigurationError ? error.message : describeThrown(error).message,
        ),
      };
    }
  }
  return next;
}

const extended = new WeakMap<readonly ModelToolSpec[], ModelToolSpec[]>();

/** The tools with `final_output` appended: the same array each time (its size is counted once). */
function withFinalOutput(tools: ModelToolSpec[], tool: ToolDefinition): ModelToolSpec[] {
  let list = extended.get(tools);
  if (!list) {
    list = [
      ...tools,
      { name: FINAL_OUTPUT, description: tool.description, input_schema: tool.inputSchema },
    ];
    extended.set(tools, list);
  }
  return list;
}

function failed(error: Error): PreparedCall {
  return { ok: false, error: { name: error.name, message: error.message } };
}
