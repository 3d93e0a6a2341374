import { ConfigurationError } from "../core/errors.ts";
import {
  AGENT_OPTION_KEYS,
  assertFunction,
  assertKnownOptions,
  assertOneOf,
  assertPositiveInteger,
  describeValue,
  TOOL_CONCURRENCY_KEYS,
  TOOL_EXECUTION_KEYS,
} from "../core/options.ts";
import { isModel, type Model, type ModelSettings, type ModelToolSpec } from "../model/model.ts";
import { checkPricing, type PriceTable } from "../model/pricing.ts";
import { isToolDefinition, runtimeOf } from "../tools/definition.ts";
import type {
  ApprovalHandler,
  BackgroundTasks,
  SandboxPolicy,
  ToolDefinition,
} from "../tools/types.ts";
import type { AgentOptions, ConcurrencyMode, ToolBatchPolicy } from "./agent-options.ts";
import { type Budget, budgetOf } from "./budget.ts";
import { type ResolvedGuardrails, resolveGuardrails } from "./guardrails.ts";
import { checkStopContinuations, type HookEntries, resolveHooks } from "./hooks.ts";
import { agentRuntimeOf, DEFAULT_MAX_DEPTH } from "./link.ts";
import { type OutputSpec, resolveOutput } from "./output.ts";
import type { PermissionLayer } from "./permission-layer.ts";
import { checkPermissionMode, type PermissionMode } from "./policy.ts";
import { type ContextSettings, checkContextOptions, checkModelSettings } from "./settings.ts";
import { admitted, restrictionsOf, toolFilters } from "./tool-filters.ts";
import { isToolSource, type ToolSource } from "./tool-source.ts";
import type { TraceLoader, Tracing } from "./trace.ts";

export const DEFAULT_MAX_TURNS = 100;
export const DEFAULT_MAX_CONCURRENCY = 10;
export const DEFAULT_MAX_RESULT_CHARS = 100_000;
export const DEFAULT_MAX_STOP_CONTINUATIONS = 3;

/** Told to the model when two of its calls could overlap under the agent's mode and tools. */
export const PARALLEL_CALLS_HINT =
  "You may call several tools in one reply when the calls do not depend on each other; they can run at the same time. When a call needs the result of an earlier call, make it in a later reply, after you have seen that result.";

/**
 * How the agent names its model: a `Model` object, or a name (with `apiKey`/`baseURL`) that the
 * caller of `resolveConfig` turns into a provider at run time, so the engine knows no HTTP.
 */
export type ModelChoice =
  | { kind: "object"; model: Model }
  | { kind: "name"; name: string | undefined; apiKey?: string; baseURL?: string };

/** Turns a model name into a `Model` (agents/assemble.ts gives the providers by name). */
export type ModelFactory = (choice: Extract<ModelChoice, { kind: "name" }>) => Model;

/** The narrowing a handoff carries: deny and ask rules, and tool names hidden. */
export interface Restrictions {
  deny: string[];
  ask: string[];
  hidden: string[];
  /**
   * The `allowedTools` lists of the chain, one per agent that has one: a tool stays visible only
   * if it matches an entry of every list.
   */
  allowed?: string[][];
}

/** What the assembly (agents/assemble.ts) plugs in besides the options. */
export interface Resolution {
  builtins?: readonly ToolDefinition[];
  modelFactory: ModelFactory;
  /** Builds the permission layer once the agent's tools are known (and checks presets against them). */
  permissions?: (
    tools: Map<string, ToolDefinition>,
    rules: { extraDeny: { text: string; index: number }[] },
  ) => PermissionLayer;
  background?: BackgroundTasks;
  /** The sandbox policy under the hardened preset, read once per run. */
  sandbox?: () => Promise<SandboxPolicy>;
  /** The seals' key, resolved by the assembly (approval-secret.ts); undefined: the process's own. */
  approvalSecret?: string;
  /** Loads the tracing code for an agent with a `tracer` (the assembly gives src/tracing's). */
  trace?: TraceLoader;
}

/** Everything the engine reads, resolved once per agent. */
export interface EngineConfig {
  id?: string;
  model: ModelChoice;
  modelFactory: ModelFactory;
  modelName?: string;
  /** The agent's `pricing` (checked), read before `MODEL_PRICES`. */
  pricing?: PriceTable;
  system: string;
  /** Every tool by name: a Map, so names such as `__proto__` or `toString` never reach a prototype. */
  tools: Map<string, ToolDefinition>;
  /** Names the model may call (after allowedTools/disallowedTools). */
  visible: Set<string>;
  /**
   * Whether allowedTools/disallowedTools and bare deny rules let the model see a tool of this
   * name, whether or not this agent has it (a child's tools must pass every ancestor's).
   */
  admits(name: string, tool?: ToolDefinition): boolean;
  /** The deny and ask rules and hidden names of this agent (and of the chain above it), as written. */
  restrictions: Restrictions;
  /** `maxDepth`: how deep agent tools may nest runs under this agent's. */
  maxDepth: number;
  /** The agent's model settings (checked). */
  modelSettings: ModelSettings;
  /** Context management; false when off. */
  context: ContextSettings | false;
  /** Typed final output. */
  output?: OutputSpec;
  /** An OpenTelemetry tracer (`tracer`): the run, its model calls and tool calls become spans. */
  tracing?: Tracing;
  /** Tool sources (`mcpServers`) by name: their tools join each run before its model calls. */
  sources?: { name: string; source: ToolSource }[];
  /** Under the hardened preset. */
  hardened?: boolean;
  /** Run as a child (an agent tool's), it takes its parent's model (an agent file's `model: inherit`). */
  inheritsModel?: boolean;
  /** The tool list sent to the model, built once. */
  toolSpecs: ModelToolSpec[];
  maxTurns: number;
  mode: ConcurrencyMode;
  maxConcurrency: number;
  batchPolicy?: ToolBatchPolicy;
  /** The agent's hooks, checked (its children inherit the tree-scoped ones). */
  hooks: HookEntries;
  /** How many times `stop` hooks may keep a run going; default 3. */
  maxStopContinuations: number;
  /** `maxBudgetUsd`, `maxTotalTokens`, `maxToolCalls`: a template, counted afresh per run. */
  budget?: Budget;
  /** The agent's guardrails (children run their own and their ancestors'). */
  guardrails?: ResolvedGuardrails;
  /** The agent has agent tools: its runs may have children, so a tree state is made. */
  parent?: boolean;
  maxResultChars: number;
  /**
   * Start concurrency-safe calls while the model still streams. Off with a batch policy (it must
   * see the whole batch first) and wherever a batch could turn sequential.
   */
  eager: boolean;
  permissions?: PermissionLayer;
  /** `permissionMode`: how calls the rules ask about are treated (default "default"). */
  permissionMode?: PermissionMode;
  approval?: ApprovalHandler;
  approvalSecret?: string;
  background?: BackgroundTasks;
  sandbox?: () => Promise<SandboxPolicy>;
}

export function resolveConfig(
  options: AgentOptions,
  resolution: Resolution,
  prefix = "AgentOptions",
): EngineConfig {
  const builtins = resolution.builtins ?? [];
  assertKnownOptions(prefix, options, AGENT_OPTION_KEYS);
  const model = resolveModelChoice(options, prefix);
  assertPositiveInteger(prefix, "maxTurns", options.maxTurns);
  assertPositiveInteger(prefix, "maxDepth", options.maxDepth);
  assertPositiveInteger(prefix, "maxResultChars", options.maxResultChars);
  if (options.systemPrompt !== undefined && typeof options.systemPrompt !== "string") {
    throw new ConfigurationError(
      `${prefix}: systemPrompt must be a string, received ${describeValue(options.systemPrompt)}.`,
    );
  }
  if (options.modelName !== undefined && typeof options.modelName !== "string") {
    throw new ConfigurationError(
      `${prefix}: modelName must be a string, received ${describeValue(options.modelName)}.`,
    );
  }

  const pricing = checkPricing(prefix, options.pricing);

  const { mode, maxConcurrency } = resolveConcurrency(options, prefix);
  if (options.tools !== undefined && !Array.isArray(options.tools)) {
    throw new ConfigurationError(
      `${prefix}: tools must be an array of tools built with tool() or defineTool(), received ${describeValue(options.tools)}.`,
    );
  }
  if (options.id !== undefined && typeof options.id !== "string") {
    throw new ConfigurationError(
      `${prefix}: id must be a string, received ${describeValue(options.id)}.`,
    );
  }
  const tools = collectTools([...builtins, ...(options.tools ?? [])], prefix, builtins.length);
  assertFunction(prefix, "approval", options.approval);
  const filters = toolFilters(options, prefix);
  const permissions = resolution.permissions?.(tools, { extraDeny: filters.denyRules });
  const admits = (name: string, tool?: ToolDefinition) =>
    admitted(name, filters, permissions, tool);
  const visible = new Set([...tools.keys()].filter((name) => admits(name)));
  const toolSpecs = [...visible].map((name) => {
    const tool = tools.get(name)!;
    return { name: tool.name, description: tool.description, input_schema: tool.inputSchema };
  });

  if (
    options.toolBatchPolicy !== undefined &&
    typeof options.toolBatchPolicy?.validate !== "function"
  ) {
    throw new ConfigurationError(
      `${prefix}: toolBatchPolicy must be an object with a validate({ toolCalls }) function.`,
    );
  }
  const hooks = resolveHooks(prefix, options.hooks, options.preset === "hardened");
  checkStopContinuations(prefix, options.maxStopContinuations);

  const parallelPossible = canOverlap(
    mode,
    maxConcurrency,
    [...visible].map((name) => tools.get(name)!),
  );
  const system = [options.systemPrompt ?? "", parallelPossible ? PARALLEL_CALLS_HINT : ""]
    .filter(Boolean)
    .join("\n\n");

  const modelSettings = checkModelSettings(prefix, options.modelSettings, new Set(visible));
  const context = checkContextOptions(prefix, options.context);
  const output = resolveOutput(prefix, options.output, options.outputRetries, tools.keys());
  const sources = resolveSources(prefix, options.mcpServers);
  if (
    options.tracer !== undefined &&
    typeof (options.tracer as { startSpan?: unknown } | null)?.startSpan !== "function"
  )
    throw new ConfigurationError(
      `${prefix}: tracer must be an OpenTelemetry Tracer (trace.getTracer("my-app") from @opentelemetry/api), received ${describeValue(options.tracer)}.`,
    );
  let tracing: Tracing | undefined;
  if (options.tracer !== undefined) {
    if (!resolution.trace)
      throw new ConfigurationError(`${prefix}: tracer is not supported here (no run is traced).`);
    tracing = { tracer: options.tracer, start: resolution.trace };
  }

  const budget = budgetOf(prefix, options);
  const guardrails = resolveGuardrails(prefix, options.guardrails);
  const permissionMode = checkPermissionMode(
    prefix,
    options.permissionMode,
    options.preset === "hardened",
  );

  return {
    id: options.id,
    model,
    ...(permissionMode && permissionMode !== "default" ? { permissionMode } : {}),
    modelSettings,
    context,
    ...(output ? { output } : {}),
    ...(sources ? { sources } : {}),
    ...(tracing ? { tracing } : {}),
    modelFactory: resolution.modelFactory,
    modelName: options.modelName,
    ...(pricing ? { pricing } : {}),
    system,
    tools,
    visible,
    admits,
    restrictions: restrictionsOf(options),
    maxDepth: options.maxDepth ?? DEFAULT_MAX_DEPTH,
    toolSpecs,
    maxTurns: options.maxTurns ?? DEFAULT_MAX_TURNS,
    mode,
    maxConcurrency,
    batchPolicy: options.toolBatchPolicy,
    hooks,
    maxStopContinuations: options.maxStopContinuations ?? DEFAULT_MAX_STOP_CONTINUATIONS,
    ...(budget ? { budget } : {}),
    ...(guardrails ? { guardrails } : {}),
    ...([...tools.values()].some((tool) => agentRuntimeOf(tool)) ? { parent: true } : {}),
    maxResultChars: options.maxResultChars ?? DEFAULT_MAX_RESULT_CHARS,
    eager:
      options.toolBatchPolicy === undefined &&
      mode !== "sequential" &&
      ![...tools.values()].some((tool) => tool.executionMode === "sequential"),
    ...(permissions ? { permissions } : {}),
    ...(options.approval ? { approval: options.approval } : {}),
    ...(resolution.approvalSecret !== undefined
      ? { approvalSecret: resolution.approvalSecret }
      : {}),
    ...(resolution.background ? { background: resolution.background } : {}),
    ...(resolution.sandbox ? { sandbox: resolution.sandbox } : {}),
  };
}

function resolveModelChoice(options: AgentOptions, prefix: string): ModelChoice {
  const { model, apiKey, baseURL } = options;
  if (isModel(model)) {
    if (apiKey !== undefined || baseURL !== undefined) {
      throw new ConfigurationError(
        `${prefix}: apiKey and baseURL go with a model name; with a Model object, give them to the provider (for example anthropic({ apiKey, baseURL })).`,
      );
    }
    return { kind: "object", model };
  }
  if (model !== undefined && typeof model !== "string") {
    throw new ConfigurationError(
      `${prefix}: model must be a Model object or a model name, received ${describeValue(model)}.`,
    );
  }
  for (const [name, value] of [
    ["apiKey", apiKey],
    ["baseURL", baseURL],
  ] as const) {
    if (value !== undefined && typeof value !== "string") {
      throw new ConfigurationError(
        `${prefix}: ${name} must be a string, received ${describeValue(value)}.`,
      );
    }
  }
  return { kind: "name", name: model, apiKey, baseURL };
}

function resolveConcurrency(
  options: AgentOptions,
  prefix: string,
): { mode: ConcurrencyMode; maxConcurrency: number } {
  if (options.toolConcurrency !== undefined && options.toolExecution !== undefined) {
    throw new ConfigurationError(
      `${prefix}: give either toolConcurrency or toolExecution, not both (toolExecution: { toolConcurrency: n } means toolConcurrency: { mode: "all", maxConcurrency: n }).`,
    );
  }
  if (options.toolExecution !== undefined) {
    assertKnownOptions(`${prefix}: toolExecution`, options.toolExecution, TOOL_EXECUTION_KEYS);
    const limit = options.toolExecution.toolConcurrency;
    assertPositiveInteger(prefix, "toolExecution.toolConcurrency", limit);
    return { mode: "all", maxConcurrency: limit ?? DEFAULT_MAX_CONCURRENCY };
  }
  const concurrency = options.toolConcurrency ?? {};
  assertKnownOptions(`${prefix}: toolConcurrency`, concurrency, TOOL_CONCURRENCY_KEYS);
  assertOneOf(prefix, "toolConcurrency.mode", concurrency.mode, ["safe", "all", "sequential"]);
  assertPositiveInteger(prefix, "toolConcurrency.maxConcurrency", concurrency.maxConcurrency);
  return {
    mode: concurrency.mode ?? "safe",
    maxConcurrency: concurrency.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY,
  };
}

function collectTools(
  list: unknown[],
  prefix: string,
  builtinCount: number,
): Map<string, ToolDefinition> {
  if (!Array.isArray(list))
    throw new ConfigurationError(`${prefix}: tools must be an array of tool definitions.`);
  const tools = new Map<string, ToolDefinition>();
  list.forEach((tool, index) => {
    if (!isToolDefinition(tool)) {
      throw new ConfigurationError(
        `${prefix}: tools[${index - builtinCount}] is ${describeValue(tool)}, not a tool; build tools with tool() or defineTool().`,
      );
    }
    if (tools.has(tool.name)) {
      throw new ConfigurationError(
        `${prefix}: two tools are named "${tool.name}"${index < builtinCount ? "" : " (a name must be unique, built-in tools included)"}; rename one.`,
      );
    }
    tools.set(tool.name, tool);
  });
  return tools;
}

/** Whether two calls of one reply could ever run at the same time under this configuration. */
function canOverlap(
  mode: ConcurrencyMode,
  maxConcurrency: number,
  tools: ToolDefinition[],
): boolean {
  if (mode === "sequential" || maxConcurrency < 2) return false;
  const parallel = tools.filter((tool) => tool.executionMode !== "sequential");
  if (mode === "all") return parallel.length > 0;
  return parallel.some((tool) => runtimeOf(tool).isConcurrencySafe !== undefined);
}

/** `mcpServers`: handles made by `mcpServer()` of `skein/mcp`, under names tools are prefixed with. */
function resolveSources(
  prefix: string,
  servers: unknown,
): { name: string; source: ToolSource }[] | undefined {
  if (servers === undefined) return undefined;
  if (typeof servers !== "object" || servers === null || Array.isArray(servers))
    throw new ConfigurationError(
      `${prefix}: mcpServers must map server names to mcpServer() handles (from "skein/mcp"), received ${describeValue(servers)}.`,
    );
  const entries = Object.entries(servers);
  for (const [name, server] of entries) {
    if (!/^[A-Za-z0-9_-]{1,40}$/.test(name))
      throw new ConfigurationError(
        `${prefix}: the MCP server name ${JSON.stringify(name)} must be 1-40 letters, digits, "_" or "-" (it prefixes its tools: mcp__<name>__<tool>).`,
      );
    if (!isToolSource(server))
      throw new ConfigurationError(
        `${prefix}: mcpServers.${name} is ${describeValue(server)}, not a server handle; wrap its options with mcpServer() from "skein/mcp" (a .mcp.json entry can be passed to it as is).`,
      );
  }
  return entries.length > 0
    ? entries.map(([name, source]) => ({ name, source: source as ToolSource }))
    : undefined;
}
