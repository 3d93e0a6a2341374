import { ConfigurationError } from "../core/errors.ts";
import { describeValue } from "../core/options.ts";

/** One permission rule: `Name` (every call of the tools it names) or `Name(content)`. */
export interface PermissionRule {
  /** The rule as written, for messages. */
  text: string;
  /** Tool-name pattern: letters, digits, `_`, `-`, with `*` wildcards (`mcp__server__*`). */
  name: string;
  /** The pattern inside the parentheses, if any. */
  content?: string;
}

export type RuleBehavior = "allow" | "ask" | "deny";

export interface PermissionRules {
  allow?: string[];
  ask?: string[];
  deny?: string[];
}

const RULE = /^([A-Za-z0-9_*-]+)(?:\((.*)\))?$/s;

/** Parses one rule string; a malformed rule is an assembly error that says how to write it. */
export function parseRule(text: unknown, where: string): PermissionRule {
  if (typeof text !== "string") {
    throw new ConfigurationError(
      `${where}: a rule must be a string such as "Bash(npm run test:*)", received ${describeValue(text)}.`,
    );
  }
  const match = RULE.exec(text.trim());
  if (!match) {
    throw new ConfigurationError(
      `${where}: cannot read the rule ${JSON.stringify(text)}. Write a tool name ("Bash", "mcp__server__*") or a name with a pattern in parentheses ("Read(src/**)", "Bash(npm run test:*)").`,
    );
  }
  const [, name, content] = match;
  if (content !== undefined && content.trim() === "") {
    throw new ConfigurationError(
      `${where}: the rule ${JSON.stringify(text)} has an empty pattern; write the bare tool name to match every call.`,
    );
  }
  return content === undefined ? { text, name: name! } : { text, name: name!, content };
}

/** `text` as a regular expression that matches it literally. */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
