// Checks that a rule's tool name names a tool the agent has, and suggests the closest one when not.

import { ConfigurationError } from "../core/errors.ts";
import type { PermissionRule } from "./rules.ts";

/**
 * A rule whose exact tool name names no tool is an assembly error: it would match nothing, and
 * the user who wrote `deny: ["write(.env)"]` believes `.env` is protected. Names with `*`
 * (`mcp__fs__*`) may match nothing yet: tools of that kind can come and go.
 */
export function assertRuleNamesTool(
  rule: PermissionRule,
  known: readonly string[],
  where: string,
): void {
  if (rule.name.includes("*") || known.includes(rule.name)) return;
  // Known patterns (`mcp__fs__*`): the tools of a source whose list is known only at run time.
  if (known.some((entry) => entry.endsWith("*") && rule.name.startsWith(entry.slice(0, -1))))
    return;
  const closest = closestName(
    rule.name,
    known.filter((entry) => !entry.endsWith("*")),
  );
  const hint =
    closest !== undefined
      ? `did you mean "${closest}"? (tool names are case-sensitive)`
      : `the agent's tools are ${known.map((name) => `"${name}"`).join(", ") || "none"}`;
  throw new ConfigurationError(
    `${where}: the rule "${rule.text}" names the tool "${rule.name}", which this agent does not have, so it would match nothing; ${hint}.`,
  );
}

/** The known name nearest to `name` (case-insensitive edit distance), if any is near enough. */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const wanted = name.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(wanted, candidate.toLowerCase());
    if (best === undefined || distance < best.distance) best = { name: candidate, distance };
  }
  // Near enough to be a typo: a third of the name, at least two edits.
  const limit = Math.max(2, Math.floor(name.length / 3));
  return best !== undefined && best.distance <= limit ? best.name : undefined;
}

/** Levenshtein distance, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}
