// Assembly-time checks of the agents an agent's tools can start (design/agents.md, "Permissions").

import path from "node:path";
import { ConfigurationError } from "../core/errors.ts";
import { checkHardenedPreset } from "../permissions/preset.ts";
import type { EngineConfig } from "../run/config.ts";
import { agentRuntimeOf } from "../run/link.ts";
import type { ToolDefinition } from "../tools/types.ts";

/**
 * Checks the agent tools among `tools`: each agent they start works inside this agent's
 * workspace, and under the hardened preset every tool of every agent reachable through them
 * passes the preset's rule. Returns the names of those reachable tools (rules may name them).
 */
export function checkAgentTools(
  tools: Map<string, ToolDefinition>,
  parent: { root: string; hardened: boolean; prefix: string },
): string[] {
  const names = new Set<string>();
  const seen = new Set<EngineConfig>();
  const visit = (list: Iterable<ToolDefinition>, via: string) => {
    for (const tool of list) {
      const agent = agentRuntimeOf(tool);
      if (!agent) continue;
      for (const [target, child] of agent.targets) {
        if (seen.has(child.config)) continue;
        seen.add(child.config);
        const where = `${via}the agent "${target}" of the tool "${tool.name}"`;
        if (parent.hardened) checkHardenedPreset(child.config.tools, `${parent.prefix} (${where})`);
        for (const name of child.config.tools.keys()) names.add(name);
        visit(child.config.tools.values(), `${where}, `);
      }
    }
  };
  for (const tool of tools.values()) {
    const agent = agentRuntimeOf(tool);
    if (!agent) continue;
    for (const [target, child] of agent.targets) {
      if (!isInside(parent.root, child.root))
        throw new ConfigurationError(
          `${parent.prefix}: the agent "${target}" of the tool "${tool.name}" works in ${JSON.stringify(child.root)}, outside this agent's workspace ${JSON.stringify(parent.root)}. A child agent's cwd must lie inside its parent's workspace.`,
        );
    }
  }
  visit(tools.values(), "");
  return [...names];
}

export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}
