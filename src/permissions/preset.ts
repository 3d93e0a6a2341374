import { ConfigurationError } from "../core/errors.ts";
import { builtinInfo } from "../tools/builtin-mark.ts";
import type { ToolDefinition } from "../tools/types.ts";

/** Network reach the hardened preset accepts from a custom tool. */
const CONFINED_NETWORK = new Set(["none", "loopback"]);

/**
 * The hardened preset, at assembly: every tool that is not built in must declare `security`
 * (a tool without it is treated as reaching everything, so it fails closed) with `network`
 * "none" or "loopback". The error names the tool and the rule.
 */
export function checkHardenedPreset(tools: Map<string, ToolDefinition>, prefix: string): void {
  for (const tool of tools.values()) {
    if (builtinInfo(tool)) continue;
    const security = tool.security;
    if (!security) {
      throw new ConfigurationError(
        `${prefix}: the hardened preset refuses the tool "${tool.name}": it declares no security metadata, so it is treated as { network: "unrestricted", filesystem: "unrestricted", sideEffects: "external" }. Rule: every custom tool declares security with network "none" or "loopback", for example tool(..., { security: { network: "none" } }).`,
      );
    }
    if (!CONFINED_NETWORK.has(security.network)) {
      throw new ConfigurationError(
        `${prefix}: the hardened preset refuses the tool "${tool.name}": its security.network is "${security.network}". Rule: a custom tool's network must be "none" or "loopback" under the hardened preset.`,
      );
    }
  }
}

/**
 * Under the hardened preset every MCP server declares `security` with `network` "none" or
 * "loopback": its tools are code the agent's host runs, like a custom tool's.
 */
export function checkHardenedServers(servers: unknown, prefix: string): void {
  if (typeof servers !== "object" || servers === null) return;
  for (const [name, server] of Object.entries(servers)) {
    const security = (server as { security?: { network?: unknown } } | null)?.security;
    if (!security)
      throw new ConfigurationError(
        `${prefix}: the hardened preset refuses the MCP server "${name}": it declares no security metadata, so it is treated as { network: "unrestricted", filesystem: "unrestricted", sideEffects: "external" }. Rule: every MCP server declares security with network "none" or "loopback", for example mcpServer({ ..., security: { network: "none" } }).`,
      );
    if (!CONFINED_NETWORK.has(security.network as string))
      throw new ConfigurationError(
        `${prefix}: the hardened preset refuses the MCP server "${name}": its security.network is "${String(security.network)}". Rule: an MCP server's network must be "none" or "loopback" under the hardened preset.`,
      );
  }
}
