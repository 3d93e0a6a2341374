// What one model call sends (design/interactive.md): the agent's request, changed for this call
// by `beforeModelCall`, compacted to fit the context window, with the output spec and settings.

import { ConfigurationError, describeThrown, HookError } from "../errors.ts";
import type { Message } from "../model/messages.ts";
import {
  isModel,
  type Model,
  type ModelRequest,
  type ModelSettings,
  type ModelToolSpec,
} from "../model/model.ts";
import type { ToolDefinition } from "../tools/types.ts";
import { compact, contextMemory } from "./context.ts";
import type { RunContext } from "./loop.ts";
import { FINAL_OUTPUT } from "./output.ts";
import { checkModelSettings, requestSettings } from "./settings.ts";
import type { ErrorInfo, ModelCallChange } from "./types.ts";

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
export async function prepareModelCall(run: RunContext, agentModel: Model): Promise<PreparedCall> {
  const { config } = run;
  let model = agentModel;
  let settings: ModelSettings = config.modelSettings;
  let messages = run.messages;
  let tools = config.toolSpecs;
  let offered: ReadonlySet<string> = config.visible;
  const hook = config.hooks.beforeModelCall;
  if (hook) {
    let change: unknown;
    try {
      change = await hook({
        turn: run.numTurns,
        messages: run.messages.slice(),
        tools: config.toolSpecs.map((spec) => spec.name),
        model: agentModel,
        modelSettings: { ...config.modelSettings },
        usage: { ...run.usage },
        sessionId: run.sessionId,
        signal: run.signal,
      });
    } catch (error) {
      return failed(new HookError(`beforeModelCall threw: ${describeThrown(error).message}`));
    }
    const applied = applyChange(change, { settings, tools, offered, messages, model });
    if ("error" in applied) return failed(applied.error);
    ({ settings, tools, offered, messages, model } = applied);
  }
  // With `output` and no native structured output, the answer is a call to `final_output`.
  const output = config.output;
  const native = output !== undefined && model.structuredOutputs === true;
  if (output && !native) {
    tools = withFinalOutput(tools, output.tool);
    offered = new Set([...offered, FINAL_OUTPUT]);
  }
  if (config.context) {
    run.contextMemory ??= contextMemory();
    const compacted = await compact({
      settings: config.context,
      memory: run.contextMemory,
      model,
      system: config.system,
      tools,
      messages,
      turn: run.numTurns,
      signal: run.signal,
      emit: run.emit,
      usage: run.usage,
      transcript: messages === run.messages,
    });
    if (!compacted.ok) return failed(compacted.error);
    messages = compacted.messages;
  }
  const request: ModelRequest = {
    system: config.system,
    // A shallow copy: the model may keep the request while the transcript grows.
    messages: messages === run.messages ? messages.slice() : messages,
    tools,
  };
  if (config.modelName !== undefined) request.modelName = config.modelName;
  const inEffect = requestSettings(settings);
  if (inEffect) request.settings = inEffect;
  if (native) request.output = { name: FINAL_OUTPUT, schema: output.schema.jsonSchema };
  return { ok: true, model, request, offered };
}

/** Checks what the hook returned and applies it to this call. */
function applyChange(
  change: unknown,
  current: {
    settings: ModelSettings;
    tools: RunContext["config"]["toolSpecs"];
    offered: ReadonlySet<string>;
    messages: Message[];
    model: Model;
  },
): typeof current | { error: Error } {
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
