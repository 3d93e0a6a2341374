// allowedTools and disallowedTools: which tools the model sees, by name patterns with `*`
// wildcards (the permission rules' tool names match the same way).

import { ConfigurationError } from "../core/errors.ts";
import { describeValue } from "../core/options.ts";
import type { ToolDefinition } from "../tools/types.ts";
import type { AgentOptions } from "./agent-options.ts";
import type { Restrictions } from "./config.ts";
import type { PermissionLayer } from "./permission-layer.ts";

/** A name or custom-tool pattern as a test: `*` matches any run of characters, the rest literally. */
export function wildcard(pattern: string): (text: string) => boolean {
  if (!pattern.includes("*")) return (text) => text === pattern;
  // Not a regular expression: `^a.*b.*c.*d$` backtracks over every split of a long text (a
  // 1,600-character ruleContent took 8 s, on the event loop). With `*` as the only wildcard,
  // each literal part at its leftmost place after the one before is a match whenever one exists.
  const [first, ...rest] = pattern.split("*");
  const last = rest.pop()!;
  return (text) => {
    const end = text.length - last.length;
    if (end < first!.length || !text.startsWith(first!) || !text.endsWith(last)) return false;
    let at = first!.length;
    for (const part of rest) {
      const found = text.indexOf(part, at);
      if (found === -1 || found + part.length > end) return false;
      at = found + part.length;
    }
    return true;
  };
}

export interface ToolFilters {
  allowed?: ((name: string) => boolean)[];
  disallowed: ((name: string) => boolean)[];
  /** `Tool(pattern)` entries of disallowedTools: deny rules, not filters. */
  denyRules: { text: string; index: number }[];
}

/**
 * allowedTools / disallowedTools: tool names with `*` wildcards; they decide only what the model
 * sees and grant nothing. Unknown names are ignored (seed 002 lists a `read_file` that may not
 * exist). A `Tool(pattern)` entry in allowedTools counts as its tool's name.
 */
export function toolFilters(options: AgentOptions, prefix: string): ToolFilters {
  const read = (list: unknown, name: string): string[] | undefined => {
    if (list === undefined) return undefined;
    if (!Array.isArray(list) || list.some((entry) => typeof entry !== "string")) {
      throw new ConfigurationError(
        `${prefix}: ${name} must be an array of tool names, received ${describeValue(list)}.`,
      );
    }
    return list as string[];
  };
  const nameOf = (entry: string) => entry.replace(/\(.*\)$/s, "");
  const allowed = read(options.allowedTools, "allowedTools");
  const disallowed = read(options.disallowedTools, "disallowedTools") ?? [];
  return {
    ...(allowed ? { allowed: allowed.map((entry) => wildcard(nameOf(entry))) } : {}),
    disallowed: disallowed.filter((entry) => !entry.includes("(")).map(wildcard),
    denyRules: disallowed
      .map((text, index) => ({ text, index }))
      .filter(({ text }) => text.includes("(")),
  };
}

export function admitted(
  name: string,
  filters: ToolFilters,
  permissions: PermissionLayer | undefined,
  tool: ToolDefinition | undefined,
): boolean {
  if (filters.allowed && !filters.allowed.some((matches) => matches(name))) return false;
  if (filters.disallowed.some((matches) => matches(name))) return false;
  return !permissions?.hides(name, tool);
}

/** The agent's own deny and ask rules and hidden names, as a handoff carries them. */
export function restrictionsOf(options: AgentOptions): Restrictions {
  const disallowed = (options.disallowedTools ?? []) as string[];
  return {
    deny: [
      ...((options.permissions?.deny ?? []) as string[]),
      ...disallowed.filter((entry) => entry.includes("(")),
    ],
    ask: [...((options.permissions?.ask ?? []) as string[])],
    hidden: disallowed.filter((entry) => !entry.includes("(")),
    ...(options.allowedTools ? { allowed: [[...(options.allowedTools as string[])]] } : {}),
  };
}
