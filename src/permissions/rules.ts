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

/** `text` as a regular expression that matches it literally. */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
