/**
 * The files a Bash command writes, under the `Edit(...)` and `Write(...)` rules: its output
 * redirections (`> f`, `>> f`, `2> f`, `&> f`) and the destinations of recognised writers (`cp`,
 * `tee`, `dd of=`, writers.ts). Paths are judged from the workspace root, and with their leading
 * `./` `../` steps removed, as reads are. What each finding does:
 * - an Edit or Write deny rule covers the file, or some file is named only at run time (or by a
 *   program named only at run time) while such deny rules exist: deny;
 * - an Edit or Write ask rule covers it, or it is a protected path: ask, whatever allows Bash;
 * - a redirection outside the workspace, to `/dev/tcp`, or to a target known only at run time
 *   ("unconfined"), or one no Edit or Write allow rule covers ("uncovered"): ask, unless `Bash`
 *   is allowed outright. A rule allowing the program (`Bash(cp:*)`) grants its own arguments;
 *   a redirection is the shell's write, which it does not grant.
 */
import type { Workspace } from "../../tools/workspace.ts";
import { lexicalRelative } from "../paths.ts";
import { isProtectedGlob, isProtectedPath } from "../protected.ts";
import { denyView } from "./deny.ts";
import { expandOnDisk, patternForms } from "./read-globs.ts";
import { pathForms } from "./reads.ts";
import { shellSidePaths } from "./shell-side.ts";
import type { CommandAnalysis } from "./types.ts";
import { writtenBy } from "./writers.ts";

export interface WriteConcern {
  deny?: string;
  ask?: string;
  /** A redirection the rules do not place (outside, the network, run time): asks unless Bash is allowed outright. */
  unconfined?: string;
  /** A redirection no allow rule for Edit or Write covers: asks unless Bash is allowed outright. */
  uncovered?: string;
}

export interface EditRules {
  denied(relative: string): boolean;
  asked(relative: string): boolean;
  allowed(relative: string): boolean;
  anyDeny: boolean;
  /** Whether a deny rule's pattern could cover a path this workspace-relative shell glob names. */
  globDenied(glob: string): boolean;
  globAsked(glob: string): boolean;
}

/** At most this many patterns of one command are expanded against the files. */
const MAX_GLOBS = 64;

/** At most this many written files are followed through symbolic links. */
const MAX_RESOLVED = 256;

/** Targets that are no file of the workspace: writing to them changes nothing. */
const HARMLESS = new Set(["/dev/null", "/dev/stdout", "/dev/stderr"]);

interface Target {
  text: string;
  /** A redirection (judged also for where it lands), or a writer's argument. */
  redirect: boolean;
}

export function writeConcern(
  analysis: CommandAnalysis,
  workspace: Workspace,
  rules: EditRules,
): WriteConcern | Promise<WriteConcern> {
  const concern: WriteConcern = {};
  const targets: Target[] = [];
  const globs: Target[] = [];
  const atRunTime = (reason: string, redirect: boolean) => {
    if (rules.anyDeny) concern.deny ??= `${reason}, and Edit deny rules forbid some files`;
    else if (redirect) concern.unconfined ??= reason;
  };
  let patterns = 0;
  const named = (text: string, pattern: boolean, redirect: boolean) => {
    // Through the shell's own /proc entry (`/proc/self/cwd/.git/config`): also what it names there.
    if (!pattern) {
      targets.push({ text, redirect });
      for (const each of shellSidePaths(workspace.root, text))
        targets.push({ text: each, redirect });
      return;
    }
    const shown = JSON.stringify(text);
    if (++patterns > MAX_GLOBS)
      return atRunTime(`it writes to files named by more than ${MAX_GLOBS} patterns`, redirect);
    const forms = patternForms(text, workspace.root);
    if (!forms)
      return atRunTime(`it writes to ${shown}, which expands to too many names`, redirect);
    for (const literal of forms.literals) targets.push({ text: literal, redirect });
    for (const glob of forms.globs) {
      if (rules.globDenied(glob))
        concern.deny ??= `it writes to ${shown}, a pattern that can name a file an Edit or Write deny rule forbids`;
      else if (rules.globAsked(glob))
        concern.ask ??= `it writes to ${shown}, a pattern that can name a file an Edit or Write rule asks about`;
      else if (isProtectedGlob(glob))
        concern.ask ??= `it writes to ${shown}, a pattern that can name a protected path: writes to them always ask`;
      else if (redirect)
        concern.unconfined ??= `it writes to ${shown}, a pattern the shell expands`;
      globs.push({ text: glob, redirect });
    }
  };
  const view = denyView(analysis);
  const commands = analysis.kind === "simple" ? analysis.commands : analysis.candidates;
  // The forms too: redirections inside code given to `bash -c`, `eval`, `find -exec sh -c`.
  for (const command of new Set([...commands, ...view.forms])) {
    for (const redirect of command.redirects ?? []) {
      const shown = JSON.stringify(redirect.target);
      // bash itself opens a network connection for these names, whatever the command.
      if (/^\/dev\/(?:tcp|udp)\//.test(redirect.target) && redirect.kind !== "text")
        concern.unconfined ??= `it connects to the network through ${shown}`;
      if (redirect.kind !== "write" && redirect.kind !== "readwrite") continue;
      if (HARMLESS.has(redirect.target)) continue;
      if (redirect.dynamic && /[$`]/.test(redirect.target))
        atRunTime(`it writes to ${shown}, named only at run time`, true);
      else named(redirect.target, redirect.dynamic === true, true);
    }
  }
  if (view.opaque) atRunTime(`a program it runs is named only at run time (${view.opaque})`, false);
  for (const form of view.forms) {
    const written = writtenBy(form);
    if (written.unknown)
      atRunTime(`it writes to a file named only at run time (${written.unknown})`, false);
    for (const target of written.targets) named(target.text, target.pattern, false);
  }
  if (targets.length === 0 && globs.length === 0) return concern;
  return judgeTargets(targets, globs, workspace, rules, concern, atRunTime);
}

async function judgeTargets(
  targets: Target[],
  globs: Target[],
  workspace: Workspace,
  rules: EditRules,
  concern: WriteConcern,
  atRunTime: (reason: string, redirect: boolean) => void,
): Promise<WriteConcern> {
  // The files a pattern matches now (a link into a protected directory, say): judged as named.
  for (const { text, redirect } of globs.slice(0, MAX_GLOBS)) {
    const found = await expandOnDisk(workspace.root, text);
    if (found === "too many")
      atRunTime(
        `it writes to ${JSON.stringify(text)}, which matches too many files to check`,
        redirect,
      );
    else for (const path of found.paths) targets.push({ text: path, redirect: false });
  }
  const unique = new Map<string, Target>();
  for (const target of targets)
    if (!unique.get(target.text)?.redirect) unique.set(target.text, target);
  let resolved = 0;
  for (const { text, redirect } of unique.values()) {
    const shown = JSON.stringify(text);
    const lexical = lexicalRelative(workspace.root, text);
    // As written from the root, and from below it (the shell's directory may be a subdirectory).
    const forms = new Set(pathForms(workspace.root, text));
    let canonical: string | undefined;
    // Where links lead is looked up for so many files; past that, a deny rule means deny.
    if (lexical !== undefined && ++resolved > MAX_RESOLVED)
      atRunTime(
        `it writes to more than ${MAX_RESOLVED} files, too many to follow links for`,
        redirect,
      );
    else if (lexical !== undefined) {
      try {
        canonical = (await workspace.resolve(text)).relative;
        forms.add(canonical);
      } catch {
        // A symlink out of the workspace: the write lands outside it.
      }
    }
    const any = (test: (relative: string) => boolean) => [...forms].some(test);
    if (any(rules.denied))
      concern.deny ??= `it writes to ${shown}, which an Edit or Write deny rule forbids`;
    else if (any(rules.asked))
      concern.ask ??= `it writes to ${shown}, which an Edit or Write rule asks about`;
    else if (any(isProtectedPath))
      concern.ask ??= `it writes to ${shown}, a protected path: writes to it always ask`;
    else if (!redirect) continue;
    else if (lexical === undefined)
      concern.unconfined ??= `it writes to ${shown}, outside the workspace`;
    else if (canonical === undefined)
      concern.unconfined ??= `it writes to ${shown}, which leads outside the workspace`;
    else if (!rules.allowed(lexical) || !rules.allowed(canonical))
      concern.uncovered ??= `it writes to ${shown}, and no Edit or Write allow rule covers it (Edit asks by default)`;
  }
  return concern;
}
