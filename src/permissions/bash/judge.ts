/**
 * The Bash part of the permission gate: how `Bash(...)` rules match a command, what Read and
 * Edit rules say about the files it reads and the files its redirections write, and when it is
 * auto-allowed. A redirection target is judged from the workspace root (as file arguments are);
 * writes to it follow the `Edit(...)` and `Write(...)` rules: denied when one denies it, asked
 * when one asks, when it is protected or outside the workspace, and (unless `Bash` itself is
 * allowed outright) when no such allow rule covers it, since Edit asks by default.
 */
import type { Workspace } from "../../builtin/environment.ts";
import { lexicalRelative } from "../paths.ts";
import { isProtectedPath } from "../protected.ts";
import type { RuleBehavior } from "../rules.ts";
import { allowVerdict } from "./allow.ts";
import { denyView } from "./deny.ts";
import { couldMatchBashPattern, matchesBashPattern } from "./patterns.ts";
import { type FileReadConcern, fileReadConcern, pathForms, type ReadRules } from "./reads.ts";
import type { CommandAnalysis, SimpleCommand } from "./types.ts";

/** A command as the gate sees it; `reads` and `writes` only for the Bash tool itself. */
export interface BashCall {
  analysis: CommandAnalysis;
  raw: string;
  reads?: FileReadConcern;
  writes?: WriteConcern;
}

export interface WriteConcern {
  deny?: string;
  ask?: string;
  /** A write no allow rule for Edit or Write covers: asks unless Bash is allowed outright. */
  uncovered?: string;
}

export interface EditRules {
  denied(relative: string): boolean;
  asked(relative: string): boolean;
  allowed(relative: string): boolean;
  anyDeny: boolean;
}

/** Targets that are no file of the workspace: writing to them changes nothing. */
const HARMLESS = new Set(["/dev/null", "/dev/stdout", "/dev/stderr"]);

/** Whether a `Bash(pattern)` rule of this behaviour matches the command. */
export function bashRuleMatcher(
  pattern: string,
  behavior: RuleBehavior,
): (call: BashCall) => boolean {
  return ({ analysis }) => {
    if (behavior === "allow")
      return (
        analysis.kind === "simple" && analysis.commands.every((c) => matchesBashPattern(pattern, c))
      );
    const view = denyView(analysis);
    return view.opaque !== undefined || view.forms.some((f) => couldMatchBashPattern(pattern, f));
  };
}

/** The deny message for a rule that matched; says why when some program is named only at run time. */
export function bashDenial(rule: string, pattern: string | undefined, call: BashCall): string {
  const view = denyView(call.analysis);
  if (pattern === undefined || view.opaque === undefined)
    return `Permission denied: the rule "${rule}" forbids this call.`;
  return `Permission denied: ${view.opaque}, so it could be what the rule "${rule}" forbids. Write the program and its arguments out in plain words.`;
}

/**
 * Auto-allowed only when `Bash` is allowed outright, or the command is simple, every simple
 * command matches an allow rule and none is unsafe, and every file it writes is covered.
 */
export function bashVerdict(
  call: BashCall,
  rules: { outright: boolean; matches: (command: SimpleCommand) => boolean },
): true | string {
  if (rules.outright) return true;
  const verdict = allowVerdict(call.analysis, rules.matches);
  if (verdict !== true) return verdict;
  return call.writes?.uncovered ?? true;
}

/** Reads and writes of a Bash command under the rules; a promise when the disk must be read. */
export function bashConcerns(
  call: BashCall,
  workspace: Workspace,
  read: ReadRules,
  edit: EditRules,
): BashCall | Promise<BashCall> {
  const reads = fileReadConcern(call.analysis, workspace.root, read);
  const writes = writeConcern(call.analysis, workspace, edit);
  if (!(reads instanceof Promise) && !(writes instanceof Promise))
    return { ...call, reads, writes };
  return Promise.all([reads, writes]).then(([r, w]) => ({ ...call, reads: r, writes: w }));
}

function writeConcern(
  analysis: CommandAnalysis,
  workspace: Workspace,
  rules: EditRules,
): WriteConcern | Promise<WriteConcern> {
  const commands = analysis.kind === "simple" ? analysis.commands : analysis.candidates;
  const targets: string[] = [];
  const concern: WriteConcern = {};
  for (const command of commands) {
    for (const redirect of command.redirects ?? []) {
      // bash itself opens a network connection for these names, whatever the command.
      if (/^\/dev\/(?:tcp|udp)\//.test(redirect.target) && redirect.kind !== "text")
        concern.ask ??= `it connects to the network through ${JSON.stringify(redirect.target)}`;
      if (redirect.kind !== "write" && redirect.kind !== "readwrite") continue;
      if (HARMLESS.has(redirect.target)) continue;
      if (!redirect.dynamic) targets.push(redirect.target);
      else if (rules.anyDeny)
        concern.deny ??= `it writes to ${JSON.stringify(redirect.target)}, named only at run time, and Edit deny rules forbid some files`;
      else
        concern.ask ??= `it writes to ${JSON.stringify(redirect.target)}, named only at run time`;
    }
  }
  if (targets.length === 0) return concern;
  return judgeTargets(targets, workspace, rules, concern);
}

async function judgeTargets(
  targets: string[],
  workspace: Workspace,
  rules: EditRules,
  concern: WriteConcern,
): Promise<WriteConcern> {
  for (const target of targets) {
    const lexical = lexicalRelative(workspace.root, target);
    const shown = JSON.stringify(target);
    if (lexical === undefined) {
      concern.ask ??= `it writes to ${shown}, outside the workspace`;
      continue;
    }
    const forms = new Set([lexical, ...pathForms(workspace.root, target)]);
    let canonical: string | undefined = lexical;
    try {
      canonical = (await workspace.resolve(target)).relative;
      forms.add(canonical);
    } catch {
      // A symlink out of the workspace: the write lands outside it.
      canonical = undefined;
    }
    if ([...forms].some((f) => rules.denied(f))) {
      concern.deny ??= `it writes to ${shown}, which an Edit or Write deny rule forbids`;
      continue;
    }
    if (canonical === undefined)
      concern.ask ??= `it writes to ${shown}, which leads outside the workspace`;
    else if ([...forms].some((f) => rules.asked(f)))
      concern.ask ??= `it writes to ${shown}, which an Edit or Write rule asks about`;
    else if ([...forms].some((f) => isProtectedPath(f)))
      concern.ask ??= `it writes to ${shown}, a protected path: writes to it always ask`;
    else if (!rules.allowed(lexical) || !rules.allowed(canonical))
      concern.uncovered ??= `it writes to ${shown}, and no Edit or Write allow rule covers it (Edit asks by default)`;
  }
  return concern;
}
