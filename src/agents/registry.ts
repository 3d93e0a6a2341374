// What skein keeps about each agent it assembled, for agent tools and handoffs: its engine
// configuration and workspace, and how to assemble it again narrowed or hardened.

import type { SessionStore } from "../core/session-store.ts";
import type { RunOptions } from "../run/agent-options.ts";
import type { EngineConfig, Restrictions } from "../run/config.ts";
import type { SDKResultMessage } from "../run/types.ts";
import type { Prompt } from "../run/user-content.ts";
import type { Workspace } from "../tools/workspace.ts";
import type { Agent } from "./agent.ts";

export interface AgentHandle {
  config: EngineConfig;
  workspace: Workspace;
  /** The same agent under the hardened preset (a child of a hardened parent), assembled once. */
  hardened(): AgentHandle;
  /** The same agent with a handoff's deny and ask rules and hidden tools added to its own. */
  narrowed(restrictions: Restrictions): AgentHandle;
  /** `agent.run` of this (possibly narrowed) agent. */
  run(prompt: Prompt, options?: RunOptions): Promise<SDKResultMessage>;
  /** This (possibly narrowed) agent, as an `Agent`. */
  agent(): Agent;
  /**
   * The same agent logging into `store` (a queue worker's) and sealing with `approvalSecret`,
   * assembled anew. Throws `ConfigurationError` when the agent was given another secret.
   */
  withStore(store: SessionStore, approvalSecret: string): AgentHandle;
}

const handles = new WeakMap<object, AgentHandle>();

export function registerAgent(agent: object, handle: AgentHandle): void {
  handles.set(agent, handle);
}

/** The handle of an agent skein made, or undefined for anything else. */
export function handleOf(value: unknown): AgentHandle | undefined {
  return typeof value === "object" && value !== null ? handles.get(value) : undefined;
}
