import { type BuiltinPermission, builtinInfo } from "../builtin/define.ts";
import type { Workspace } from "../builtin/environment.ts";
import { ConfigurationError } from "../errors.ts";
import type { ToolDefinition } from "../tools/types.ts";
import {
  analyzeCommand,
  allowsAnything,
  type CommandAnalysis,
  denyCouldMatch,
  denyForms,
  matchesBashPattern,
  type SimpleCommand,
  unsafeToAllow,
} from "./bash-command.ts";
import { lexicalRelative, pathMatcher } from "./paths.ts";
import { isProtectedPath } from "./protected.ts";
import {
  type PermissionRule,
  type PermissionRules,
  parseRule,
  type RuleBehavior,
  wildcard,
} from "./rules.ts";

export type PermissionDecision =
  | { behavior: "allow" }
  | { behavior: "deny"; message: string }
  | { behavior: "ask"; reason: string };

/** The permission gate of one agent, built at assembly from its rules (DESIGN "the contract"). */
export interface PermissionGate {
  /** Decides a call from the rules alone: deny beats ask beats allow, then the defaults. */
  decide(tool: ToolDefinition, input: unknown): Promise<PermissionDecision>;
  /** Deny rules only, for input an approval rewrote or a resumed state carries: the reason, or undefined. */
  denial(tool: ToolDefinition, input: unknown): Promise<string | undefined>;
  /** Whether a `Read(...)` deny rule covers this workspace-relative path (LS, Glob and Grep hide it). */
  readDenied(relative: string): boolean;
  /** The `Read(...)` deny patterns, for the sandbox to mask. */
  readonly readDenyPatterns: readonly string[];
  /** Tool names a bare deny rule hides from the model. */
  hides(name: string): boolean;
}

type Family = "read" | "edit" | "bash" | "none" | "custom";

/** Rule names that also govern other built-ins (Claude Code's rule families). */
const FAMILY_RULE: Record<string, Family> = { Read: "read", Edit: "edit" };

/** Programs whose plain arguments are files they read: Bash calls naming a Read-denied file are denied. */
const FILE_READERS = new Set([
  "cat", "tac", "nl", "head", "tail", "less", "more", "most", "view", "vi", "vim", "nano",
  "grep", "egrep", "fgrep", "rg", "ag", "sed", "awk", "gawk", "cut", "sort", "uniq", "wc",
  "strings", "xxd", "od", "hexdump", "base64", "base32", "cp", "mv", "ln", "rsync", "scp",
  "source", ".", "diff", "cmp", "comm", "paste", "join", "file", "tee", "dd", "openssl",
  "gpg", "zip", "tar", "gzip", "zcat", "bat", "jq", "yq", "iconv", "split", "md5sum",
  "sha256sum", "sha1sum", "curl", "wget",
]);

interface CompiledRule {
  rule: PermissionRule;
  appliesTo: (tool: ToolDefinition) => boolean;
  /** Undefined: the rule has no pattern and matches every call of its tools. */
  matches?: (call: CallView) => boolean;
}

/** What rules see of one call. */
interface CallView {
  family: Family;
  /** Workspace-relative paths the call names (lexical and canonical forms); undefined entries lead outside. */
  paths: (string | undefined)[];
  bash?: { analysis: CommandAnalysis; raw: string };
  ruleContent?: string;
}

export function createPermissionGate(options: {
  rules: PermissionRules | undefined;
  /** `Tool(pattern)` entries of `disallowedTools`: deny rules. */
  extraDeny: string[];
  tools: Map<string, ToolDefinition>;
  workspace: Workspace;
  prefix: string;
}): PermissionGate {
  const { tools, workspace, prefix } = options;
  const compile = (behavior: RuleBehavior, list: unknown[]): CompiledRule[] =>
    list.map((text, index) =>
      compileRule(parseRule(text, `${prefix}: permissions.${behavior}[${index}]`), behavior, tools, prefix),
    );
  const rules = options.rules ?? {};
  const deny = [...compile("deny", rules.deny ?? []), ...compile("deny", options.extraDeny)];
  const ask = compile("ask", rules.ask ?? []);
  const allow = compile("allow", rules.allow ?? []);
  warnAboutBroadRules(allow);

  const readDenyRules = deny.filter(
    (rule) => rule.rule.content !== undefined && FAMILY_RULE[rule.rule.name] === "read",
  );
  const readDenyMatchers = readDenyRules.map((rule) => pathMatcher(rule.rule.content!, "deny"));
  const readDenied = (relative: string) => readDenyMatchers.some((match) => match(relative));
  const hidden = deny.filter((rule) => rule.rule.content === undefined);

  const view = async (tool: ToolDefinition, input: unknown): Promise<CallView> => {
    const permission = builtinInfo(tool)?.permission;
    if (!permission) {
      const ruleContent = tool.ruleContent ? String(tool.ruleContent(input)) : undefined;
      return { family: "custom", paths: [], ...(ruleContent !== undefined ? { ruleContent } : {}) };
    }
    return viewOf(permission, input, workspace);
  };

  const firstMatch = (list: CompiledRule[], tool: ToolDefinition, call: CallView) =>
    list.find((rule) => rule.appliesTo(tool) && (!rule.matches || rule.matches(call)));

  const denial = async (tool: ToolDefinition, input: unknown) => {
    const call = await view(tool, input);
    const rule = firstMatch(deny, tool, call);
    if (rule) return `Permission denied: the rule "${rule.rule.text}" forbids this call.`;
    if (call.bash) {
      const file = readDeniedFileInCommand(call.bash.analysis, workspace.root, readDenied);
      if (file !== undefined)
        return `Permission denied: this command reads "${file}", which a Read deny rule forbids.`;
    }
    return undefined;
  };

  return {
    readDenied,
    readDenyPatterns: readDenyRules.map((rule) => rule.rule.content!),
    hides: (name) => hidden.some((rule) => wildcard(rule.rule.name)(name)),
    denial,
    async decide(tool, input) {
      const denied = await denial(tool, input);
      if (denied) return { behavior: "deny", message: denied };
      const call = await view(tool, input);
      const asked = firstMatch(ask, tool, call);
      if (asked) return { behavior: "ask", reason: `the rule "${asked.rule.text}" asks for approval` };
      if (call.family === "edit") {
        const guarded = call.paths.find((relative) => relative !== undefined && isProtectedPath(relative));
        if (guarded !== undefined)
          return { behavior: "ask", reason: `"${guarded}" is a protected path: writes to it always ask` };
      }
      if (call.family === "bash") {
        const allowed = bashAllowed(allow, tool, call);
        return allowed === true ? { behavior: "allow" } : { behavior: "ask", reason: allowed };
      }
      if (firstMatch(allow, tool, call)) return { behavior: "allow" };
      if (call.family === "edit") return { behavior: "ask", reason: `${tool.name} asks by default` };
      return { behavior: "allow" };
    },
  };
}

function compileRule(
  rule: PermissionRule,
  behavior: RuleBehavior,
  tools: Map<string, ToolDefinition>,
  prefix: string,
): CompiledRule {
  const family = FAMILY_RULE[rule.name];
  const nameMatches = wildcard(rule.name);
  const appliesTo = (tool: ToolDefinition) => {
    if (nameMatches(tool.name)) return true;
    const permission = builtinInfo(tool)?.permission;
    return family !== undefined && permission?.kind === family;
  };
  if (rule.content === undefined) return { rule, appliesTo };
  const content = rule.content;
  // A pattern rule must be readable for every tool it names; otherwise it would silently match nothing.
  for (const tool of tools.values()) {
    if (!appliesTo(tool)) continue;
    const kind = builtinInfo(tool)?.permission.kind ?? "custom";
    if (kind === "none" || (kind === "custom" && !tool.ruleContent)) {
      throw new ConfigurationError(
        `${prefix}: the rule "${rule.text}" has a pattern, but the tool "${tool.name}" has nothing to match it against. ${kind === "custom" ? `Give the tool a ruleContent(input) option, or use the bare name "${tool.name}".` : `Use the bare name "${tool.name}".`}`,
      );
    }
  }
  if (rule.name === "Bash") {
    return {
      rule,
      appliesTo,
      matches: (call) => {
        if (!call.bash) return false;
        const { analysis, raw } = call.bash;
        if (behavior === "allow") return analysis.kind === "simple" && analysis.commands.every((command) => matchesBashPattern(content, command));
        if (analysis.kind === "complex") return denyCouldMatch(content, analysis, raw);
        return analysis.commands.some((command) =>
          denyForms(command).some((form) => matchesBashPattern(content, form)),
        );
      },
    };
  }
  const pathMatches = pathMatcher(content, behavior);
  const textMatches = wildcard(content);
  return {
    rule,
    appliesTo,
    matches: (call) => {
      if (call.family === "custom") return call.ruleContent !== undefined && textMatches(call.ruleContent);
      if (call.family !== "read" && call.family !== "edit") return false;
      const inside = call.paths.filter((relative): relative is string => relative !== undefined);
      // Allow: every form of the path must match (a symlink cannot borrow a grant); deny/ask: any.
      if (behavior === "allow") return inside.length > 0 && inside.length === call.paths.length && inside.every(pathMatches);
      return inside.some(pathMatches);
    },
  };
}

/** Auto-allowed only when every simple command matches an allow rule and none is unsafe to allow. */
function bashAllowed(allow: CompiledRule[], tool: ToolDefinition, call: CallView): true | string {
  const { analysis, raw } = call.bash!;
  const rules = allow.filter((rule) => rule.appliesTo(tool));
  if (rules.some((rule) => rule.matches === undefined)) return true;
  if (analysis.kind === "complex")
    return `the command uses ${analysis.reason}, which is never allowed without approval`;
  for (const command of analysis.commands) {
    const unsafe = unsafeToAllow(command);
    if (unsafe) return `${describe(command)}: ${unsafe}`;
    const single: CallView = { ...call, bash: { analysis: { kind: "simple", commands: [command] }, raw } };
    if (!rules.some((rule) => rule.matches!(single)))
      return `no allow rule matches ${describe(command)}`;
  }
  return analysis.commands.length > 0 ? true : "the command is empty";
}

function describe(command: SimpleCommand): string {
  return JSON.stringify([...command.assignments, ...command.argv].join(" "));
}

async function viewOf(
  permission: BuiltinPermission<unknown>,
  input: unknown,
  workspace: Workspace,
): Promise<CallView> {
  switch (permission.kind) {
    case "none":
      return { family: "none", paths: [] };
    case "bash": {
      const raw = permission.command(input);
      return { family: "bash", paths: [], bash: { analysis: analyzeCommand(raw), raw } };
    }
    default: {
      const paths: (string | undefined)[] = [];
      for (const given of permission.paths(input)) {
        paths.push(lexicalRelative(workspace.root, given));
        // The canonical form too: a symlink inside the workspace must not dodge a rule for its target.
        try {
          const resolved = await workspace.resolve(given);
          if (resolved.relative !== paths.at(-1)) paths.push(resolved.relative);
        } catch {
          // Outside the workspace, or unreadable: the tool refuses it itself.
        }
      }
      return { family: permission.kind, paths };
    }
  }
}

function readDeniedFileInCommand(
  analysis: CommandAnalysis,
  root: string,
  readDenied: (relative: string) => boolean,
): string | undefined {
  const commands = analysis.kind === "simple" ? analysis.commands : analysis.candidates;
  for (const command of commands) {
    for (const form of denyForms(command)) {
      const [program, ...args] = form.argv;
      if (program === undefined || !FILE_READERS.has(program.split("/").at(-1)!)) continue;
      for (const arg of args) {
        for (const candidate of [arg, arg.slice(arg.indexOf("=") + 1)]) {
          if (candidate === "" || candidate.startsWith("-")) continue;
          const relative = lexicalRelative(root, candidate);
          if (relative !== undefined && relative !== "" && readDenied(relative)) return candidate;
        }
      }
    }
  }
  return undefined;
}

function warnAboutBroadRules(allow: CompiledRule[]): void {
  for (const { rule } of allow) {
    if (rule.name === "Bash" && rule.content !== undefined && allowsAnything(rule.content)) {
      process.emitWarning(
        `The allow rule "${rule.text}" lets the model run any program through it; prefer rules for the exact commands you mean.`,
        { code: "SKEIN_BROAD_ALLOW_RULE" },
      );
    }
  }
}
