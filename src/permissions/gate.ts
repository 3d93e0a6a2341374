import type { PermissionDecision, PermissionLayer } from "../run/permission-layer.ts";
import { builtinInfo } from "../tools/builtin-mark.ts";
import type { ToolDefinition } from "../tools/types.ts";
import type { Workspace } from "../tools/workspace.ts";
import { analyzeCommand, bashConcerns, bashDenial, type FileReadConcern } from "./bash/index.ts";
import {
  bashAllowed,
  type CallView,
  type CompiledRule,
  compileRule,
  FAMILY_RULE,
  viewOf,
  warnAboutBroadRules,
} from "./compile-rule.ts";
import { globMeetsPattern } from "./glob-meet.ts";
import { lexicalRelative } from "./paths.ts";
import { isProtectedPath } from "./protected.ts";
import { rerooted, rerootedPaths, toRoot } from "./reroot.ts";
import { assertRuleNamesTool } from "./rule-names.ts";
import { type PermissionRules, parseRule, type RuleBehavior } from "./rules.ts";

/** The permission gate of one agent, built at assembly from its rules (DESIGN "the contract"). */
export interface PermissionGate extends PermissionLayer {
  /** Whether a deny or ask rule for `Read(...)` or for the search tool itself covers this path. */
  hiddenFromSearch(relative: string, tool: string, base?: Workspace): boolean;
  /** Checks the path a file tool actually opened against the rules (see `BuiltinEnvironment.recheck`). */
  recheck(tool: string, given: string, opened: string): string | undefined;
  /** The `Read(...)` deny patterns (workspace-relative, gitignore-style), for the sandbox to mask. */
  readonly readDenyPatterns: readonly string[];
}

const ALLOW: PermissionDecision = Object.freeze({ behavior: "allow" });

export function createPermissionGate(options: {
  rules: PermissionRules | undefined;
  /** `Tool(pattern)` entries of `disallowedTools` (with their index there): deny rules. */
  extraDeny: { text: string; index: number }[];
  tools: Map<string, ToolDefinition>;
  workspace: Workspace;
  prefix: string;
  /** Names that count as tools of the agent besides `tools` (the built-ins, when `defineAgent` checks a definition). */
  alsoKnown?: readonly string[];
}): PermissionGate {
  const { tools, workspace, prefix } = options;
  const known = [...new Set([...tools.keys(), ...(options.alsoKnown ?? [])])];
  const compile = (behavior: RuleBehavior, entries: { text: unknown; where: string }[]) =>
    entries.map(({ text, where }) => {
      const at = `${prefix}: ${where}`;
      const rule = parseRule(text, at);
      assertRuleNamesTool(rule, known, at);
      return compileRule(rule, behavior, { tools, root: workspace.root, prefix, at });
    });
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

  const readRules = (list: CompiledRule[]) =>
    list.filter((rule) => rule.path && FAMILY_RULE[rule.rule.name] === "read");
  const readDeny = readRules(deny);
  const readAsk = readRules(ask);
  const readDenied = (relative: string) => readDeny.some((rule) => rule.path!(relative));
  const readAsked = (relative: string) => readAsk.some((rule) => rule.path!(relative));
  // Deny and ask rules naming one search tool (`Grep(secrets/**)`) hide paths from it alone.
  const searchRules = [...deny, ...ask].filter(
    (rule) => rule.path && FAMILY_RULE[rule.rule.name] === undefined,
  );
  const hiddenFrom = (relative: string, tool: string) =>
    searchRules.some((rule) => rule.names(tool) && rule.path!(relative));
  const globMeets = (list: CompiledRule[]) => (glob: string) =>
    list.some((rule) => globMeetsPattern(glob, rule.pathPattern!));
  const readRulesFor = {
    denied: readDenied,
    asked: readAsked,
    any: readDeny.length + readAsk.length > 0,
    anyDeny: readDeny.length > 0,
    globDenied: globMeets(readDeny),
    globAsked: globMeets(readAsk),
  };
  // Files Bash writes (redirections, recognised writers): Edit(...) rules and rules naming
  // Write or Edit govern them.
  const writes = (rule: CompiledRule) =>
    FAMILY_RULE[rule.rule.name] === "edit" || rule.names("Write") || rule.names("Edit");
  const writeDeny = deny.filter((rule) => rule.path && writes(rule));
  const writeAsk = ask.filter((rule) => rule.path && writes(rule));
  const writeAllow = allow.filter(writes);
  const editRulesFor = {
    denied: (relative: string) => writeDeny.some((rule) => rule.path!(relative)),
    asked: (relative: string) => writeAsk.some((rule) => rule.path!(relative)),
    allowed: (relative: string) =>
      writeAllow.some((rule) => rule.matches === undefined || rule.path?.(relative) === true),
    anyDeny: writeDeny.length > 0,
    globDenied: globMeets(writeDeny),
    globAsked: globMeets(writeAsk),
  };
  const bare = deny.filter((rule) => rule.matches === undefined);

  const patterned = [...deny, ...ask, ...allow].filter((rule) => rule.matches !== undefined);
  // Synchronous where it can be, so a call's permission check costs no extra turns of the event loop.
  const view = (
    tool: ToolDefinition,
    input: unknown,
    base?: Workspace,
  ): CallView | Promise<CallView> => {
    const permission = builtinInfo(tool)?.permission;
    // A child agent's call names paths from the child's own root, which lies inside this one.
    const from = base && base.root !== workspace.root ? base : undefined;
    if (permission?.kind === "bash") {
      const call = viewOf(permission, input, workspace) as CallView;
      const bash = from
        ? bashConcerns(
            call.bash!,
            from,
            rerooted(readRulesFor, from.root, workspace.root),
            rerooted(editRulesFor, from.root, workspace.root),
          )
        : bashConcerns(call.bash!, workspace, readRulesFor, editRulesFor);
      return bash instanceof Promise ? bash.then((b) => ({ ...call, bash: b })) : { ...call, bash };
    }
    if (permission && from && permission.kind !== "none")
      return rerootedPaths(viewOf(permission, input, from), from.root, workspace.root);
    if (permission) return viewOf(permission, input, workspace);
    // A custom tool's ruleContent runs only when a pattern rule names the tool.
    if (!tool.ruleContent || !patterned.some((rule) => rule.appliesTo(tool)))
      return { family: "custom", paths: [] };
    try {
      const ruleContent = String(tool.ruleContent(input));
      return {
        family: "custom",
        paths: [],
        ruleContent,
        bash: { analysis: analyzeCommand(ruleContent), raw: ruleContent },
      };
    } catch {
      return { family: "custom", paths: [], ruleContentFailed: true };
    }
  };

  const firstMatch = (list: CompiledRule[], tool: ToolDefinition, call: CallView) =>
    list.find((rule) => rule.appliesTo(tool) && (!rule.matches || rule.matches(call)));

  const readConcern = (call: CallView): FileReadConcern =>
    call.family === "bash" ? call.bash?.reads : undefined;

  const denialOf = (tool: ToolDefinition, call: CallView): string | undefined => {
    if (call.ruleContentFailed)
      return `Permission denied: the tool "${tool.name}" could not describe this call for its permission rules (its ruleContent threw).`;
    const rule = firstMatch(deny, tool, call);
    if (rule && call.bash) return bashDenial(rule.rule.text, rule.rule.content, call.bash);
    if (rule) return `Permission denied: the rule "${rule.rule.text}" forbids this call.`;
    const concern = readConcern(call);
    if (concern && "deny" in concern)
      return `Permission denied: this command reads "${concern.deny}", which a Read deny rule forbids.`;
    const written = call.family === "bash" ? call.bash?.writes?.deny : undefined;
    if (written) return `Permission denied: ${written}.`;
    return undefined;
  };

  const judge = (tool: ToolDefinition, call: CallView): PermissionDecision => {
    const denied = denialOf(tool, call);
    if (denied) return { behavior: "deny", message: denied };
    const asked = firstMatch(ask, tool, call);
    if (asked)
      return {
        behavior: "ask",
        reason: `the rule "${asked.rule.text}" asks for approval`,
        basis: "rule",
      };
    if (call.family === "edit") {
      const guarded = call.paths.find(
        (relative) => relative !== undefined && isProtectedPath(relative),
      );
      if (guarded !== undefined)
        return {
          behavior: "ask",
          reason: `"${guarded}" is a protected path: writes to it always ask`,
          basis: "protected",
        };
    }
    if (call.family === "bash") {
      const concern = readConcern(call);
      if (concern && "ask" in concern)
        return { behavior: "ask", reason: concern.ask, basis: "rule" };
      // Ask rules and protected paths ask whatever allows Bash; bashAllowed weighs the other writes.
      const written = call.bash?.writes?.ask;
      if (written) return { behavior: "ask", reason: written, basis: "protected" };
      const allowed = bashAllowed(allow, tool, call);
      if (allowed === true) return { behavior: "allow" };
      const outside = call.bash?.writes?.unconfined !== undefined;
      return { behavior: "ask", reason: allowed, basis: outside ? "outside" : "default" };
    }
    if (firstMatch(allow, tool, call)) return { behavior: "allow" };
    if (call.family === "edit")
      return { behavior: "ask", reason: `${tool.name} asks by default`, basis: "default" };
    return { behavior: "allow" };
  };

  const then = <T>(value: CallView | Promise<CallView>, next: (call: CallView) => T) =>
    value instanceof Promise ? value.then(next) : next(value);
  // Custom tools no rule names are allowed without a look at their input: the common case, free.
  const unruled = new Set(
    [...tools.values()]
      .filter(
        (tool) =>
          !builtinInfo(tool) && ![...deny, ...ask, ...allow].some((rule) => rule.appliesTo(tool)),
      )
      .map((tool) => tool.name),
  );

  return {
    readDenyPatterns: readDeny.map((rule) => rule.pathPattern!),
    hiddenFromSearch: (given, tool, base) => {
      // A child agent's search names paths from the child's root, inside this one.
      const relative =
        base && base.root !== workspace.root ? toRoot(base.root, workspace.root, given) : given;
      if (relative === undefined) return false;
      return readDenied(relative) || readAsked(relative) || hiddenFrom(relative, tool);
    },
    hides: (name, given) => {
      const tool = tools.get(name) ?? given;
      if (tool) return bare.some((rule) => rule.appliesTo(tool));
      return bare.some((rule) => rule.names(name));
    },
    denial: (tool, input, base) => then(view(tool, input, base), (call) => denialOf(tool, call)),
    decide: (tool, input, base) =>
      unruled.has(tool.name) && tools.get(tool.name) === tool
        ? ALLOW
        : then(view(tool, input, base), (call) => judge(tool, call)),
    recheck(name, given, opened) {
      // The gate approved `given` as it resolved then; the opened path must not be one the rules
      // would have treated differently (a symlink swapped in since the check).
      const tool = tools.get(name);
      const permission = tool && builtinInfo(tool)?.permission;
      if (!tool || (permission?.kind !== "read" && permission?.kind !== "edit"))
        return `Permission denied: ${JSON.stringify(given)} cannot be checked against the rules.`;
      const kind = permission.kind;
      const asGiven = lexicalRelative(workspace.root, given);
      const rulesOf = (list: CompiledRule[]) =>
        list.filter((rule) => rule.path && rule.appliesTo(tool));
      const denied = rulesOf(deny).find((rule) => rule.path!(opened));
      if (denied)
        return `Permission denied: ${JSON.stringify(given)} now leads to a path the rule "${denied.rule.text}" forbids; it was not ${kind === "read" ? "read" : "changed"}.`;
      const swapped = asGiven !== opened;
      if (swapped && rulesOf(ask).some((rule) => rule.path!(opened) && !rule.path!(asGiven ?? "")))
        return `${JSON.stringify(given)} now leads to a path that needs approval; call the tool again with that path.`;
      if (swapped && kind === "edit" && isProtectedPath(opened) && !isProtectedPath(asGiven ?? ""))
        return `${JSON.stringify(given)} now leads into a protected path; it was not changed. Call the tool again with that path.`;
      return undefined;
    },
  };
}
