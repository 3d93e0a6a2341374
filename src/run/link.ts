// How a run knows where it stands in a tree of runs (agent tools, design/agents.md), and the seam
// through which the engine runs an agent tool's child without knowing how agents are assembled.

import { emptyUsage, type Usage } from "../core/messages.ts";
import type { ApprovalHandler, ToolDefinition, ToolResult } from "../tools/types.ts";
import type { ResumeOptions } from "./agent-options.ts";
import type { Budget, TreeState } from "./budget.ts";
import type { CallEnvironment, CallRecord } from "./call.ts";
import type { EngineConfig } from "./config.ts";
import type { ResolvedGuardrails } from "./guardrails.ts";
import type { InheritedHooks } from "./hooks.ts";
import type { PermissionMode } from "./policy.ts";
import type { PendingToolCall, RunState } from "./types.ts";

export const DEFAULT_MAX_DEPTH = 3;

/** What a run shares with the child runs its agent tools start. */
export interface RunLink {
  /** 0 for a top-level run; a child run's parent's depth + 1. */
  depth: number;
  /** The least `maxDepth` along the chain. */
  depthLimit: number;
  /** What child runs spent before this run was restored from a state (their part of its `totalUsage`). */
  childUsage: Usage;
  /**
   * The child runs started from this run, each as what it has spent so far (counted live, so a
   * child still settling after a timeout has its model calls counted already).
   */
  children: Set<() => Usage>;
  /** Model calls this run may still make before its `maxTurns`. */
  turnsLeft(): number;
  /** The approval handler of the nearest run up the chain that has one (this run's own included), as given. */
  approval?: ApprovalHandler;
  /** Some run up the chain (this one included) is under the hardened preset. */
  hardened: boolean;
  /** The permission mode calls are decided under now (a child's: the stricter of its own and its parent's). */
  mode(): PermissionMode;
  /** The tree-scoped hooks of the agents above this run, innermost first. */
  hooks?: InheritedHooks[];
  /** For a child run: the agent tool call that started it. */
  parentCallId?: string;
  /** What the whole tree shares: its trip (a budget, a tripwire). */
  tree?: TreeState;
  /** The budgets this run spends against: its own, then its ancestors'. */
  budgets?: Budget[];
  /** The guardrails of the agents above this run, innermost first. */
  guardrails?: ResolvedGuardrails[];
  /** The input guardrails running beside the first model call: calls with side effects wait for them. */
  inputGuard?: Promise<unknown>;
}

/** The link of a top-level run. */
export function rootLink(config: EngineConfig, turnsLeft: () => number): RunLink {
  const link: RunLink = {
    depth: 0,
    depthLimit: config.maxDepth,
    childUsage: emptyUsage(),
    children: new Set(),
    turnsLeft,
    hardened: config.hardened === true,
    mode: () => config.permissionMode ?? "default",
  };
  if (config.approval) link.approval = config.approval;
  return link;
}

/** How an agent tool call ended, as the engine needs it. */
export type AgentOutcome =
  | { kind: "value"; value: ToolResult }
  /** The child paused: the call waits, carrying the child's state and its waiting calls. */
  | { kind: "child"; state: RunState; pending: PendingToolCall[] };

/** A paused child restored for `resume`, checked before anything runs (opaque to the engine). */
export interface ChildResume {
  readonly kind: "child_resume";
}

/** The parent run as an agent tool sees it. */
export interface ParentRun {
  env: CallEnvironment;
  link: RunLink;
}

/**
 * What an agent tool adds to a tool (src/agents implements it and marks the tool with
 * `asAgentTool`): the engine calls `invoke` where it would call a handler, and `restore` where
 * `resume` checks a waiting call.
 */
export interface AgentRuntime {
  /** The agents this tool can start, by the name calls give them (checked at the parent's assembly). */
  readonly targets: ReadonlyMap<string, { config: EngineConfig; root: string }>;
  invoke(
    record: CallRecord,
    parent: ParentRun,
    signal: AbortSignal,
    resume: ChildResume | undefined,
  ): Promise<AgentOutcome>;
  /** Checks and restores the child state of a paused call; throws `ResumeError` before any side effect. */
  restore(
    call: { id: string; input: unknown; state: RunState },
    parent: { config: EngineConfig; link: RunLink; sessionId: string },
    answers: Pick<ResumeOptions, "approvals" | "toolOutputs">,
  ): Promise<ChildResume>;
}

/** Agent tools by identity: a private registry, as for built-ins, so the tool shape stays the engine's own. */
const agentTools = new WeakMap<ToolDefinition, AgentRuntime>();

/** Marks `tool` as an agent tool whose calls run a child through `runtime`. */
export function asAgentTool<T extends ToolDefinition>(tool: T, runtime: AgentRuntime): T {
  agentTools.set(tool, runtime);
  return tool;
}

/** The runtime of an agent tool, or undefined for any other tool. */
export function agentRuntimeOf(tool: ToolDefinition | undefined): AgentRuntime | undefined {
  return tool === undefined ? undefined : agentTools.get(tool);
}
