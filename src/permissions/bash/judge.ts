/**
 * The Bash part of the permission gate: how `Bash(...)` rules match a command, what Read and
 * Edit rules say about the files it reads (reads.ts) and writes (writes.ts), and when it is
 * auto-allowed. `Bash` allowed outright means the gate does not ask on its own account: deny
 * rules still deny, ask rules the user wrote (for Bash, or for a file it reads or writes) and
 * writes into protected paths still ask, and the sandbox is what confines the rest.
 */
import type { Workspace } from "../../tools/workspace.ts";
import type { RuleBehavior } from "../rules.ts";
import { allowVerdict } from "./allow.ts";
import { denyView } from "./deny.ts";
import { couldMatchBashPattern, matchesBashPattern } from "./patterns.ts";
import { type FileReadConcern, fileReadConcern, type ReadRules } from "./reads.ts";
import type { CommandAnalysis, SimpleCommand } from "./types.ts";
import { type EditRules, type WriteConcern, writeConcern } from "./writes.ts";

export type { EditRules, WriteConcern } from "./writes.ts";

/** A command as the gate sees it; `reads` and `writes` only for the Bash tool itself. */
export interface BashCall {
  analysis: CommandAnalysis;
  raw: string;
  reads?: FileReadConcern;
  writes?: WriteConcern;
}

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
 * Auto-allowed when `Bash` is allowed outright, or when the command is simple, every simple
 * command matches an allow rule and none is unsafe, and every file it redirects output to is
 * inside the workspace and covered by an Edit or Write allow rule.
 */
export function bashVerdict(
  call: BashCall,
  rules: { outright: boolean; matches: (command: SimpleCommand) => boolean },
): true | string {
  if (rules.outright) return true;
  const verdict = allowVerdict(call.analysis, rules.matches);
  if (verdict !== true) return verdict;
  return call.writes?.unconfined ?? call.writes?.uncovered ?? true;
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
