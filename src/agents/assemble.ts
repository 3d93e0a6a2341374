// createAgent, createBareAgent and defineAgent: the workspace, the built-in tools, the permission
// gate, the preset, the model factory and the tracing loader plugged into the engine's
// configuration, and the handle agent tools and handoffs use to assemble the agent again.

import { statSync } from "node:fs";
import path from "node:path";
import { createBackgroundTasks } from "../builtin/background.ts";
import type { BuiltinEnvironment } from "../builtin/environment.ts";
import { BUILTIN_TOOL_NAMES, builtinTools } from "../builtin/index.ts";
import { probeSandbox, sandboxPolicy } from "../builtin/sandbox.ts";
import { loadSkills, SKILL_TOOL_NAME, skillListing, skillTool } from "../builtin/skills.ts";
import { createWorkspace } from "../builtin/workspace.ts";
import { ConfigurationError } from "../core/errors.ts";
import {
  AGENT_OPTION_KEYS,
  assertKnownOptions,
  assertOneOf,
  describeValue,
  PERMISSION_KEYS,
} from "../core/options.ts";
import { ANTHROPIC_DEFAULT_MODEL } from "../model/anthropic.ts";
import { modelFromName } from "../model/by-name.ts";
import { createPermissionGate, type PermissionGate } from "../permissions/gate.ts";
import { checkHardenedPreset, checkHardenedServers } from "../permissions/preset.ts";
import type { AgentOptions, OutputOf, OutputSchema } from "../run/agent-options.ts";
import { checkSharedSecret, resolveApprovalSecret } from "../run/approval-secret.ts";
import { assertPricedBudget } from "../run/budget-price.ts";
import { type EngineConfig, type ModelFactory, resolveConfig } from "../run/config.ts";
import { wildcard } from "../run/tool-filters.ts";
import { isProcessLocal } from "../sessions/memory-store.ts";
import { checkSessionStore } from "../sessions/open-run.ts";
import { type Agent, type AgentContext, type AgentDefinition, agentFrom } from "./agent.ts";
import { fileAgentOf } from "./file-agent.ts";
import { checkAgentTools } from "./reach.ts";
import { type AgentHandle, registerAgent } from "./registry.ts";

/** Checks agent options strictly and returns them, typed, for `createAgent` / `createBareAgent` later. */
export function defineAgent<S extends OutputSchema | undefined = undefined>(
  options: AgentOptions<S>,
): AgentDefinition<S> {
  assemble(options, { builtins: false, definition: true });
  return options;
}

/** An agent with skein's built-in tools (Read, LS, Glob, Grep, Write, Edit, Bash, ...) followed by yours. */
export function createAgent<S extends OutputSchema | undefined = undefined>(
  options: AgentOptions<S> | AgentDefinition<S>,
): Agent<OutputOf<S>> {
  return build(options, { builtins: true }) as Agent<OutputOf<S>>;
}

/** An agent with only the tools you give it. */
export function createBareAgent<S extends OutputSchema | undefined = undefined>(
  options: AgentOptions<S> | AgentDefinition<S>,
): Agent<OutputOf<S>> {
  return build(options, { builtins: false }) as Agent<OutputOf<S>>;
}

type Choice = { builtins: boolean; definition?: boolean; alsoKnown?: readonly string[] };

/** Assembles an agent and keeps its handle, so agent tools and handoffs can run it narrowed or hardened. */
function build(options: AgentOptions, choice: Choice): Agent {
  const [config, context] = assemble(options, choice);
  const handle = handleFor(options, choice, config, context);
  const agent = agentFrom(config, context, handle);
  registerAgent(agent, handle);
  return agent;
}

function handleFor(
  options: AgentOptions,
  choice: Choice,
  config: EngineConfig,
  context: AgentContext,
): AgentHandle {
  let hardened: AgentHandle | undefined;
  let agent: Agent | undefined;
  const handle: AgentHandle = {
    config,
    workspace: context.workspace,
    run: (prompt, runOptions) => handle.agent().run(prompt, runOptions),
    agent: () => {
      agent ??= agentFrom(config, context, handle);
      return agent;
    },
    withStore: (sessionStore, approvalSecret) => {
      checkSharedSecret(options.approvalSecret, approvalSecret);
      const stored: AgentOptions = { ...options, sessionStore, approvalSecret };
      const [w, c] = assemble(stored, choice);
      return handleFor(stored, choice, w, c);
    },
    hardened: () => {
      if (config.hardened) return handle;
      if (!hardened) {
        const hardenedOptions: AgentOptions = { ...options, preset: "hardened" };
        const [h, c] = assemble(hardenedOptions, choice);
        hardened = handleFor(hardenedOptions, choice, h, c);
      }
      return hardened;
    },
    narrowed: (carried) => {
      const own = options.permissions ?? {};
      const narrowedOptions: AgentOptions = {
        ...options,
        permissions: {
          ...own,
          deny: [...(own.deny ?? []), ...carried.deny],
          ask: [...(own.ask ?? []), ...carried.ask],
        },
        disallowedTools: [...(options.disallowedTools ?? []), ...carried.hidden],
      };
      // The carried rules were written for the sender's tools: they may name tools this agent lacks.
      const named = [...carried.deny, ...carried.ask].map((rule) => rule.replace(/\(.*$/s, ""));
      const wider: Choice = { ...choice, alsoKnown: [...(choice.alsoKnown ?? []), ...named] };
      const [n, c] = assemble(narrowedOptions, wider);
      return handleFor(narrowedOptions, wider, withAllowed(n, carried.allowed), c);
    },
  };
  return handle;
}

/**
 * Plugs the workspace, the built-in tools, the permission gate and the preset into the engine's
 * configuration. The engine sees them only through `resolveConfig`'s small interfaces.
 */
function assemble(options: AgentOptions, choice: Choice): [EngineConfig, AgentContext] {
  const prefix = "AgentOptions";
  assertKnownOptions(prefix, options, AGENT_OPTION_KEYS);
  assertOneOf(prefix, "preset", options.preset, ["hardened"]);
  assertKnownOptions(`${prefix}: permissions`, options.permissions, PERMISSION_KEYS);
  for (const behavior of PERMISSION_KEYS) {
    const list = (options.permissions as Record<string, unknown> | undefined)?.[behavior];
    if (list !== undefined && !Array.isArray(list))
      throw new ConfigurationError(
        `${prefix}: permissions.${behavior} must be an array of rules such as "Bash(npm run test:*)", received ${describeValue(list)}.`,
      );
  }
  const store = checkSessionStore(prefix, options.sessionStore);
  const workspace = createWorkspace(workspaceRoot(options.cwd, prefix));
  const skills =
    options.skills !== undefined ? loadSkills(options.skills, workspace.root, prefix) : [];
  const hardened = options.preset === "hardened";
  const background = createBackgroundTasks();
  let gate: PermissionGate | undefined;
  const environment: BuiltinEnvironment = {
    workspace,
    // The gate is built once the tool list is known, after the built-ins that consult it.
    hiddenFromSearch: (relative, tool) => gate?.hiddenFromSearch(relative, tool) ?? false,
    recheck: (tool, given, opened) => gate?.recheck(tool, given, opened),
    get readDenyPatterns() {
      return gate?.readDenyPatterns ?? [];
    },
    background,
    sandboxed: hardened,
    readOnlyFolders: skills.map((skill) => createWorkspace(skill.dir)),
  };
  const approvalSecret = resolveApprovalSecret(prefix, options.approvalSecret, {
    durableStore: store !== undefined && !isProcessLocal(store),
  });
  const config = resolveConfig(options, {
    ...(approvalSecret !== undefined ? { approvalSecret } : {}),
    builtins: [
      ...(choice.builtins ? builtinTools(environment) : []),
      ...(skills.length > 0 ? [skillTool(skills)] : []),
    ],
    modelFactory: modelByName,
    trace: async (start) => (await import("../tracing/otel.ts")).otelTrace(start),
    background,
    ...(hardened
      ? {
          sandbox: async () => sandboxPolicy(workspace.root, (await probeSandbox()).available),
        }
      : {}),
    permissions: (tools, { extraDeny }) => {
      if (hardened) {
        checkHardenedPreset(tools, prefix);
        checkHardenedServers(options.mcpServers, prefix);
      }
      const reachable = checkAgentTools(tools, { root: workspace.root, hardened, prefix });
      gate = createPermissionGate({
        rules: options.permissions,
        extraDeny,
        tools,
        workspace,
        prefix,
        // A definition may go to createAgent later: rules may name the built-ins it will have;
        // rules may also name the tools of the agents this one's agent tools start.
        alsoKnown: [
          ...(choice.definition ? BUILTIN_TOOL_NAMES : []),
          ...reachable,
          ...(choice.alsoKnown ?? []),
          // An MCP server's tools are known at run time: rules may name any of them.
          ...Object.keys(options.mcpServers ?? {}).map((name) => `mcp__${name}__*`),
        ],
      });
      return gate;
    },
  });
  if (hardened) config.hardened = true;
  // Listed only when the model may call Skill (allowedTools or a bare deny rule can hide it).
  if (skills.length > 0 && config.visible.has(SKILL_TOOL_NAME))
    config.system = [config.system, skillListing(skills)].filter(Boolean).join("\n\n");
  // A key known to be missing fails here, not as the first run's result (the provider made here
  // is dropped: each run makes its own, as SKEIN_MODEL may name another). A definition is checked
  // where it is used: a worker may have keys its author's process lacks.
  const inherits = fileAgentOf(options)?.inheritModel === true;
  if (inherits) config.inheritsModel = true;
  const made =
    config.model.kind === "name" && !choice.definition && !inherits
      ? modelByName(config.model)
      : undefined;
  if (config.budget?.limits.maxBudgetUsd !== undefined)
    assertPricedBudget(prefix, config, config.modelName ?? made?.modelId);
  // With a session store, a reply is logged before any of its calls is prepared: no eager starts.
  if (store) config.eager = false;
  return [config, { ...(store ? { store } : {}), root: workspace.root, workspace }];
}

function workspaceRoot(cwd: unknown, prefix: string): string {
  if (cwd !== undefined && (typeof cwd !== "string" || cwd === "")) {
    throw new ConfigurationError(
      `${prefix}: cwd must be the path of a directory, received ${describeValue(cwd)}.`,
    );
  }
  const root = path.resolve(cwd ?? process.cwd());
  let isDirectory = false;
  try {
    isDirectory = statSync(root).isDirectory();
  } catch {
    // Reported below, the same way as a file.
  }
  if (!isDirectory) {
    throw new ConfigurationError(
      `${prefix}: cwd ${JSON.stringify(cwd ?? root)} is not an existing directory; the workspace root must exist.`,
    );
  }
  return root;
}

/**
 * The sender chain's `allowedTools` on top of the target's own: a tool stays visible only if every
 * list lets the model see a tool of that name.
 */
function withAllowed(config: EngineConfig, lists: string[][] | undefined): EngineConfig {
  if (!lists || lists.length === 0) return config;
  const matchers = lists.map((list) => list.map((entry) => wildcard(entry.replace(/\(.*$/s, ""))));
  const passes = (name: string) => matchers.every((list) => list.some((matches) => matches(name)));
  const visible = new Set([...config.visible].filter(passes));
  return {
    ...config,
    visible,
    admits: (name, tool) => passes(name) && config.admits(name, tool),
    toolSpecs: config.toolSpecs.filter((spec) => visible.has(spec.name)),
    restrictions: {
      ...config.restrictions,
      allowed: [...(config.restrictions.allowed ?? []), ...lists],
    },
  };
}

/** The model used when an agent names none and `SKEIN_MODEL` is unset. */
export const DEFAULT_MODEL = ANTHROPIC_DEFAULT_MODEL;

/**
 * A model given by name picks its protocol from the name (model/by-name.ts: `claude-*`
 * Anthropic; `gpt-*`, `o1*`, `o3*`, `o4*` OpenAI; `anthropic:` / `openai:` for any other; a
 * bare name is Anthropic, as for DeepSeek's Anthropic endpoint), with `apiKey` and `baseURL` for
 * that provider. Called at assembly (a missing key is a `ConfigurationError` there) and again at
 * each run.
 */
const modelByName: ModelFactory = (choice) => {
  // An empty variable counts as unset, as for keys and base URLs.
  const fromEnvironment = !choice.name && Boolean(process.env.SKEIN_MODEL);
  return modelFromName(choice.name || process.env.SKEIN_MODEL || DEFAULT_MODEL, {
    ...(choice.apiKey !== undefined ? { apiKey: choice.apiKey } : {}),
    ...(choice.baseURL !== undefined ? { baseURL: choice.baseURL } : {}),
    ...(fromEnvironment ? { source: "SKEIN_MODEL" } : {}),
  });
};
