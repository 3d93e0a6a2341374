import { type BuiltinPermission, builtinInfo } from "../builtin/define.ts";
import type { Workspace } from "../builtin/environment.ts";
import { ConfigurationError } from "../errors.ts";
import type { ToolDefinition } from "../tools/types.ts";
import {
  allowsAnything,
  analyzeCommand,
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
  decide(tool: ToolDefinition, input: unknown): PermissionDecision | Promise<PermissionDecision>;
  /** Deny rules only, for input an approval rewrote or a resumed state carries: the reason, or undefined. */
  denial(tool: ToolDefinition, input: unknown): string | undefined | Promise<string | undefined>;
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
  "cat",
  "tac",
  "nl",
  "head",
  "tail",
  "less",
  "more",
  "most",
  "view",
  "vi",
  "vim",
  "nano",
  "grep",
  "egrep",
  "fgrep",
  "rg",
  "ag",
  "sed",
  "awk",
  "gawk",
  "cut",
  "sort",
  "uniq",
  "wc",
  "strings",
  "xxd",
  "od",
  "hexdump",
  "base64",
  "base32",
  "cp",
  "mv",
  "ln",
  "rsync",
  "scp",
  "source",
  ".",
  "diff",
  "cmp",
  "comm",
  "paste",
  "join",
  "file",
  "tee",
  "dd",
  "openssl",
  "gpg",
  "zip",
  "tar",
  "gzip",
  "zcat",
  "bat",
  "jq",
  "yq",
  "iconv",
  "split",
  "md5sum",
  "sha256sum",
  "sha1sum",
  "curl",
  "wget",
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
  /** The custom tool's ruleContent threw: its pattern rules cannot be read, so the call is denied. */
  ruleContentFailed?: boolean;
}

export function createPermissionGate(options: {
  rules: PermissionRules | undefined;
  /** `Tool(pattern)` entries of `disallowedTools` (with their index there): deny rules. */
  extraDeny: { text: string; index: number }[];
  tools: Map<string, ToolDefinition>;
  workspace: Workspace;
  prefix: string;
}): PermissionGate {
  const { tools, workspace, prefix } = options;
  const compile = (behavior: RuleBehavior, entries: { text: unknown; where: string }[]) =>
    entries.map(({ text, where }) =>
      compileRule(parseRule(text, `${prefix}: ${where}`), behavior, tools, prefix),
    );
  const listed = (behavior: RuleBehavior) =>
    (options.rules?.[behavior] ?? []).map((text: unknown, index: number) => ({
      text,
      where: `permissions.${behavior}[${index}]`,
    }));
  const deny = compile("deny", [
    ...listed("deny"),
    // Named by their place in disallowedTools, where the user wrote them.
    ...options.extraDeny.map(({ text, index }) => ({ text, where: `disallowedTools[${index}]` })),
  ]);
  const ask = compile("ask", listed("ask"));
  const allow = compile("allow", listed("allow"));
  warnAboutBroadRules(allow);

  const readDenyRules = deny.filter(
    (rule) => rule.rule.content !== undefined && FAMILY_RULE[rule.rule.name] === "read",
  );
  const readDenyMatchers = readDenyRules.map((rule) => pathMatcher(rule.rule.content!, "deny"));
  const readDenied = (relative: string) => readDenyMatchers.some((match) => match(relative));
  const hidden = deny.filter((rule) => rule.rule.content === undefined);

  const patterned = [...deny, ...ask, ...allow].filter((rule) => rule.rule.content !== undefined);
  // Synchronous where it can be, so a call's permission check costs no extra turns of the event loop.
  const view = (tool: ToolDefinition, input: unknown): CallView | Promise<CallView> => {
    const permission = builtinInfo(tool)?.permission;
    if (permission) return viewOf(permission, input, workspace);
    // A custom tool's ruleContent runs only when a pattern rule names the tool.
    if (!tool.ruleContent || !patterned.some((rule) => rule.appliesTo(tool)))
      return { family: "custom", paths: [] };
    try {
      return { family: "custom", paths: [], ruleContent: String(tool.ruleContent(input)) };
    } catch {
      return { family: "custom", paths: [], ruleContentFailed: true };
    }
  };

  const firstMatch = (list: CompiledRule[], tool: ToolDefinition, call: CallView) =>
    list.find((rule) => rule.appliesTo(tool) && (!rule.matches || rule.matches(call)));

  const denialOf = (tool: ToolDefinition, call: CallView): string | undefined => {
    if (call.ruleContentFailed)
      return `Permission denied: the tool "${tool.name}" could not describe this call for its permission rules (its ruleContent threw).`;
    const rule = firstMatch(deny, tool, call);
    if (rule) return `Permission denied: the rule "${rule.rule.text}" forbids this call.`;
    if (call.bash) {
      const file = readDeniedFileInCommand(call.bash.analysis, workspace.root, readDenied);
      if (file !== undefined)
        return `Permission denied: this command reads "${file}", which a Read deny rule forbids.`;
    }
    return undefined;
  };

  const judge = (tool: ToolDefinition, call: CallView): PermissionDecision => {
    const denied = denialOf(tool, call);
    if (denied) return { behavior: "deny", message: denied };
    const asked = firstMatch(ask, tool, call);
    if (asked)
      return { behavior: "ask", reason: `the rule "${asked.rule.text}" asks for approval` };
    if (call.family === "edit") {
      const guarded = call.paths.find(
        (relative) => relative !== undefined && isProtectedPath(relative),
      );
      if (guarded !== undefined)
        return {
          behavior: "ask",
          reason: `"${guarded}" is a protected path: writes to it always ask`,
        };
    }
    if (call.family === "bash") {
      const allowed = bashAllowed(allow, tool, call);
      return allowed === true ? { behavior: "allow" } : { behavior: "ask", reason: allowed };
    }
    if (firstMatch(allow, tool, call)) return { behavior: "allow" };
    if (call.family === "edit") return { behavior: "ask", reason: `${tool.name} asks by default` };
    return { behavior: "allow" };
  };

  const then = <T>(value: CallView | Promise<CallView>, next: (call: CallView) => T) =>
    value instanceof Promise ? value.then(next) : next(value);

  return {
    readDenied,
    readDenyPatterns: readDenyRules.map((rule) => rule.rule.content!),
    hides: (name) => hidden.some((rule) => wildcard(rule.rule.name)(name)),
    denial: (tool, input) => then(view(tool, input), (call) => denialOf(tool, call)),
    decide: (tool, input) => then(view(tool, input), (call) => judge(tool, call)),
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
        if (behavior === "allow")
          return (
            analysis.kind === "simple" &&
            analysis.commands.every((command) => matchesBashPattern(content, command))
          );
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
      if (call.family === "custom")
        return call.ruleContent !== undefined && textMatches(call.ruleContent);
      if (call.family !== "read" && call.family !== "edit") return false;
      const inside = call.paths.filter((relative): relative is string => relative !== undefined);
      // Allow: every form of the path must match (a symlink cannot borrow a grant); deny/ask: any.
      if (behavior === "allow")
        return (
          inside.length > 0 && inside.length === call.paths.length && inside.every(pathMatches)
        );
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
    const single: CallView = {
      ...call,
      bash: { analysis: { kind: "simple", commands: [command] }, raw },
    };
    if (!rules.some((rule) => rule.matches!(single)))
      return `no allow rule matches ${describe(command)}`;
  }
  return analysis.commands.length > 0 ? true : "the command is empty";
}

function describe(command: SimpleCommand): string {
  return JSON.stringify([...command.assignments, ...command.argv].join(" "));
}

function viewOf(
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
