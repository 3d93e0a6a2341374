// One permission rule compiled against an agent's tools, and what the rules see of one call:
// its family, the workspace paths it names, its command. gate.ts decides with them.

import { ConfigurationError } from "../core/errors.ts";
import { wildcard } from "../run/tool-filters.ts";
import { type BuiltinPermission, builtinInfo } from "../tools/builtin-mark.ts";
import type { ToolDefinition } from "../tools/types.ts";
import type { Workspace } from "../tools/workspace.ts";
import {
  allowsAnything,
  analyzeCommand,
  type BashCall,
  bashRuleMatcher,
  bashVerdict,
} from "./bash/index.ts";
import { lexicalRelative, pathMatcher, workspacePattern } from "./paths.ts";
import type { PermissionRule, RuleBehavior } from "./rules.ts";

export type Family = "read" | "edit" | "bash" | "none" | "custom";

/** Rule names that also govern other built-ins (Claude Code's rule families). */
export const FAMILY_RULE: Record<string, Family> = { Read: "read", Edit: "edit" };

/**
 * Built-ins whose rule patterns are paths, by name. A rule naming one of them (`Write(.env)`,
 * `Grep(secrets/**)`) governs that tool's paths alone; `Read(...)` and `Edit(...)` govern their
 * whole family. Known by name so a definition checked without built-ins (`defineAgent`) reads
 * these rules as `createAgent` will.
 */
const PATH_TOOLS = ["Read", "LS", "Glob", "Grep", "Write", "Edit"];

export interface CompiledRule {
  rule: PermissionRule;
  appliesTo: (tool: ToolDefinition) => boolean;
  /** Whether the rule's name, as written, names this tool (families aside). */
  names: (toolName: string) => boolean;
  /** Undefined: the rule has no pattern and matches every call of its tools. */
  matches?: (call: CallView) => boolean;
  /** For rules naming path tools (`Read(...)`, `Write(...)`, ...): the pattern as a test of one workspace-relative path. */
  path?: (relative: string) => boolean;
  /** That pattern, workspace-relative in gitignore form. */
  pathPattern?: string;
}

/** What rules see of one call. */
export interface CallView {
  family: Family;
  /** Workspace-relative paths the call names (lexical and canonical forms); undefined entries lead outside. */
  paths: (string | undefined)[];
  /**
   * The command (Bash, or a custom tool's ruleContent read as a command by a `Bash(...)` rule);
   * for Bash itself, also what Read and Edit rules say about the files it reads and writes.
   */
  bash?: BashCall;
  ruleContent?: string;
  /** The custom tool's ruleContent threw: its pattern rules cannot be read, so the call is denied. */
  ruleContentFailed?: boolean;
}

export function compileRule(
  rule: PermissionRule,
  behavior: RuleBehavior,
  context: { tools: Map<string, ToolDefinition>; root: string; prefix: string; at: string },
): CompiledRule {
  const family = FAMILY_RULE[rule.name];
  const names = wildcard(rule.name);
  const appliesTo = (tool: ToolDefinition) => {
    if (names(tool.name)) return true;
    const permission = builtinInfo(tool)?.permission;
    return family !== undefined && permission?.kind === family;
  };
  if (rule.content === undefined) return { rule, appliesTo, names };
  const content = rule.content;
  // A pattern rule must be readable for every tool it names; otherwise it would silently match nothing.
  for (const tool of context.tools.values()) {
    if (!appliesTo(tool)) continue;
    const kind = builtinInfo(tool)?.permission.kind ?? "custom";
    if (kind === "none" || (kind === "custom" && !tool.ruleContent)) {
      throw new ConfigurationError(
        `${context.prefix}: the rule "${rule.text}" has a pattern, but the tool "${tool.name}" has nothing to match it against. ${kind === "custom" ? `Give the tool a ruleContent(input) option, or use the bare name "${tool.name}".` : `Use the bare name "${tool.name}".`}`,
      );
    }
  }
  // Bash rules read commands with the shell's rules, whichever tool carries the command.
  if (rule.name === "Bash")
    return { rule, appliesTo, names, matches: bashMatcher(content, behavior) };
  const textMatches = wildcard(content);
  // A path pattern whenever the rule reaches a tool whose calls name paths.
  const governsPaths =
    family !== undefined ||
    PATH_TOOLS.some(names) ||
    [...context.tools.values()].some((tool) => {
      const kind = builtinInfo(tool)?.permission.kind;
      return appliesTo(tool) && (kind === "read" || kind === "edit");
    });
  const pathPattern = governsPaths
    ? workspacePattern(content, context.root, `${context.at} "${rule.text}"`)
    : undefined;
  const path = pathPattern !== undefined ? pathMatcher(pathPattern, behavior) : undefined;
  return {
    rule,
    appliesTo,
    names,
    ...(path ? { path, pathPattern } : {}),
    matches: (call) => {
      if (call.family === "custom")
        return call.ruleContent !== undefined && textMatches(call.ruleContent);
      if ((call.family !== "read" && call.family !== "edit") || !path) return false;
      const inside = call.paths.filter((relative): relative is string => relative !== undefined);
      // Allow: every form of the path must match (a symlink cannot borrow a grant); deny/ask: any.
      if (behavior === "allow")
        return inside.length > 0 && inside.length === call.paths.length && inside.every(path);
      return inside.some(path);
    },
  };
}

function bashMatcher(pattern: string, behavior: RuleBehavior): (call: CallView) => boolean {
  const matches = bashRuleMatcher(pattern, behavior);
  return (call) => call.bash !== undefined && matches(call.bash);
}

/** Auto-allowed only when every simple command matches an allow rule and none is unsafe to allow. */
export function bashAllowed(
  allow: CompiledRule[],
  tool: ToolDefinition,
  call: CallView,
): true | string {
  const { raw } = call.bash!;
  const rules = allow.filter((rule) => rule.appliesTo(tool));
  return bashVerdict(call.bash!, {
    outright: rules.some((rule) => rule.matches === undefined),
    matches: (command) => {
      const single: CallView = {
        ...call,
        bash: { analysis: { kind: "simple", commands: [command] }, raw },
      };
      return rules.some((rule) => rule.matches!(single));
    },
  });
}

export function viewOf(
  permission: BuiltinPermission<unknown>,
  input: unknown,
  workspace: Workspace,
): CallView | Promise<CallView> {
  switch (permission.kind) {
    case "none":
      return { family: "none", paths: [] };
    case "bash": {
      const raw = permission.command(input);
      return { family: "bash", paths: [], bash: { analysis: analyzeCommand(raw), raw } };
    }
    default:
      return pathView(permission.kind, permission.paths(input), workspace);
  }
}

async function pathView(
  family: "read" | "edit",
  givenPaths: string[],
  workspace: Workspace,
): Promise<CallView> {
  const paths: (string | undefined)[] = [];
  for (const given of givenPaths) {
    const lexical = lexicalRelative(workspace.root, given);
    paths.push(lexical);
    // The canonical form too: a symlink inside the workspace must not dodge a rule for its target.
    try {
      const resolved = await workspace.resolve(given);
      if (resolved.relative !== lexical) paths.push(resolved.relative);
    } catch {
      // Outside the workspace, or unreadable: the tool refuses it itself.
    }
  }
  return { family, paths };
}

export function warnAboutBroadRules(allow: CompiledRule[]): void {
  for (const { rule } of allow) {
    if (rule.name === "Bash" && rule.content !== undefined && allowsAnything(rule.content)) {
      process.emitWarning(
        `The allow rule "${rule.text}" lets the model run any program through it; prefer rules for the exact commands you mean.`,
        { code: "SKEIN_BROAD_ALLOW_RULE" },
      );
    }
  }
}
