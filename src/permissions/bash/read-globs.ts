/**
 * A word the shell expands to file names (a glob, a brace, a leading `~`) as the paths it can
 * name: literal paths, and globs relative to the workspace root that the rules are compared with
 * as patterns (glob-meet.ts), whatever files exist now. Then, for symbolic links and for readers
 * that read a directory whole, the glob expanded against the files as they are (bounded).
 */
import { lstat, readdir, realpath } from "node:fs/promises";
import { homedir } from "node:os";
import nodePath from "node:path";
import {
  GLOBSTAR,
  globParts,
  globSegment,
  isPattern,
  type Segment,
  segmentMatches,
} from "../glob-meet.ts";
import { lexicalRelative } from "../paths.ts";
import { shellSidePaths } from "./shell-side.ts";
import { walkCovered } from "./walk.ts";

/** More alternatives than this from braces is too many to read: treated as unknown. */
const MAX_ALTERNATIVES = 64;
/** Directory entries read while expanding one glob, at most. */
const MAX_ENTRIES = 50_000;

export interface PatternForms {
  /** Paths the word names as written (after braces and `~`): judged as plain paths. */
  literals: string[];
  /** Workspace-relative globs (`/`-separated; "" is the root itself, or a directory above it). */
  globs: string[];
}

/** The forms of a pattern word; undefined when its braces make too many alternatives to read. */
export function patternForms(word: string, root: string): PatternForms | undefined {
  const alternatives = expandBraces(word);
  if (!alternatives) return undefined;
  const literals = new Set<string>();
  const globs = new Set<string>();
  for (const alternative of alternatives) {
    const forms = tildeForms(alternative);
    // Through the shell's own /proc entry (`/proc/self/cwd/.e*`): also what it names there.
    for (const each of forms.flatMap((form) => [form, ...shellSidePaths(root, form)])) {
      const plain = globParts(each).every((part) => part === ".." || !isPattern(globSegment(part)));
      if (plain) literals.add(each);
      else for (const glob of rootRelative(each, root)) globs.add(glob);
    }
  }
  return { literals: [...literals], globs: [...globs] };
}

/**
 * Bash's brace expansion, over-inclusively: a quoted brace is expanded too, and a sequence
 * (`{1..9}`, `{a..z}`) stands as `*`, which matches whatever it makes within one name.
 */
export function expandBraces(word: string): string[] | undefined {
  const done: string[] = [];
  const pending = [word];
  while (pending.length > 0) {
    const text = pending.pop()!;
    const brace = firstBrace(text);
    if (!brace) {
      done.push(text);
      if (done.length > MAX_ALTERNATIVES) return undefined;
      continue;
    }
    for (const alternative of brace.alternatives)
      pending.push(text.slice(0, brace.start) + alternative + text.slice(brace.end + 1));
    if (pending.length + done.length > MAX_ALTERNATIVES) return undefined;
  }
  return done;
}

/**
 * A brace expression to expand: the first `}` that closes a `{` holding a comma at its own level,
 * or a sequence. One pass, so a word of many unclosed braces costs its length, not its square;
 * an inner brace may come first, which gives the same names in the end.
 */
function firstBrace(
  text: string,
): { start: number; end: number; alternatives: string[] } | undefined {
  const open: { start: number; commas: number[] }[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "{" && text[i - 1] !== "$") open.push({ start: i, commas: [] });
    else if (c === "," && open.length > 0) open.at(-1)!.commas.push(i);
    else if (c === "}" && open.length > 0) {
      const { start, commas } = open.pop()!;
      if (commas.length > 0) {
        const cuts = [start, ...commas, i];
        const alternatives = cuts.slice(1).map((cut, k) => text.slice(cuts[k]! + 1, cut));
        return { start, end: i, alternatives };
      }
      const body = text.slice(start + 1, i);
      if (/^(?:-?\d+|[A-Za-z])\.\.(?:-?\d+|[A-Za-z])(?:\.\.-?\d+)?$/.test(body))
        return { start, end: i, alternatives: ["*"] };
    }
  }
  return undefined;
}

/**
 * A word with a leading `~`: as written (a directory named `~`, as the plain-path check reads it)
 * and in the home directory the shell would use. `~user`, `~+` and `~-` name a directory the
 * gate does not know: the rest may be anywhere.
 */
function tildeForms(word: string): string[] {
  const tilde = /^~([^/]*)(.*)$/s.exec(word);
  if (!tilde) return [word];
  const [, name, rest] = tilde;
  if (name === "") return [word, `${process.env.HOME || homedir()}${rest}`];
  return [word, `**${rest}`];
}

/** A segment that may name `.` or `..` (a wildcard after a leading dot): the path may climb. */
function mayClimb(segment: Segment): boolean {
  return (
    segment !== GLOBSTAR &&
    isPattern(segment) &&
    (segmentMatches(segment, "..") || segmentMatches(segment, "."))
  );
}

/**
 * The glob as workspace-relative globs: from the root as written, and with leading `./` `../`
 * steps removed (the shell's directory may be below the root), as plain paths are read. After a
 * segment that may climb, the rest may be anywhere in the workspace.
 */
function rootRelative(glob: string, root: string): string[] {
  const stepped = glob.replace(/^(?:\.{1,2}\/+)+/, "");
  const forms = new Set<string>();
  for (const text of new Set([glob, stepped])) {
    const absolute = nodePath.posix.normalize(
      text.startsWith("/") ? text : `${root.split(nodePath.sep).join("/")}/${text}`,
    );
    for (const form of underRoot(globParts(absolute), root)) forms.add(form);
  }
  return [...forms];
}

/** What remains of an absolute glob once its leading segments have matched the root's. */
function underRoot(parts: string[], root: string): string[] {
  const segments = parts.map(globSegment);
  const climb = segments.findLastIndex(mayClimb);
  if (climb >= 0) return [["**", ...parts.slice(climb + 1)].join("/")];
  let at = closure(new Set([0]), segments);
  // Matched whole before the root's names ran out: it names a directory above the root ("").
  let above = false;
  for (const name of root.split(nodePath.sep).filter(Boolean)) {
    if (at.has(segments.length)) above = true;
    const next = new Set<number>();
    for (const i of at) {
      const segment = segments[i];
      if (segment === GLOBSTAR) next.add(i);
      else if (segment !== undefined && segmentMatches(segment, name)) next.add(i + 1);
    }
    at = closure(next, segments);
  }
  const forms = [...at].map((i) => parts.slice(i).join("/"));
  return above ? [...forms, ""] : forms;
}

/** Positions reachable by letting `**` match no segment. */
function closure(at: Set<number>, segments: Segment[]): Set<number> {
  for (const i of at) if (segments[i] === GLOBSTAR) at.add(i + 1);
  return at;
}

export type Expansion = { paths: string[] } | "too many";

/**
 * The workspace paths a relative glob matches now (case ignored; a wildcard matching a leading
 * dot; a `**` descending any number of directories, links included). Bounded by MAX_ENTRIES.
 */
export async function expandOnDisk(root: string, glob: string): Promise<Expansion> {
  const parts = globParts(glob);
  const segments = parts.map(globSegment);
  const found: string[] = [];
  let entries = 0;
  const pending: { dir: string; at: Set<number> }[] = [
    { dir: "", at: closure(new Set([0]), segments) },
  ];
  while (pending.length > 0) {
    const { dir, at } = pending.pop()!;
    if (at.has(segments.length) && dir !== "") found.push(dir);
    // Only a plain name next: no need to list the directory.
    const plain = [...at].every((i) => {
      const segment = segments[i];
      return i === segments.length || (segment !== undefined && !isPattern(segment));
    });
    if (plain) {
      for (const i of at) {
        const segment = segments[i];
        if (segment === undefined || segment === GLOBSTAR) continue;
        const name = parts[i]!;
        pending.push({
          dir: dir === "" ? name : `${dir}/${name}`,
          at: closure(new Set([i + 1]), segments),
        });
      }
      continue;
    }
    let names: string[];
    try {
      names = await readdir(nodePath.join(root, dir));
    } catch {
      continue;
    }
    entries += names.length;
    if (entries > MAX_ENTRIES) return "too many";
    for (const name of names) {
      const next = new Set<number>();
      for (const i of at) {
        const segment = segments[i];
        if (segment === GLOBSTAR) next.add(i);
        else if (segment !== undefined && segmentMatches(segment, name)) next.add(i + 1);
      }
      if (next.size > 0)
        pending.push({ dir: dir === "" ? name : `${dir}/${name}`, at: closure(next, segments) });
    }
  }
  return { paths: found };
}

export type Covered = { kind: "deny" | "ask"; path: string } | "too many" | undefined;

/**
 * What the files a glob matches now say under the rules: each as itself and where a link leads,
 * and, for a reader that reads directories whole, everything under a matched directory.
 */
export async function globCovered(
  root: string,
  glob: string,
  whole: boolean,
  rules: { denied(relative: string): boolean; asked(relative: string): boolean },
): Promise<Covered> {
  const expansion = await expandOnDisk(root, glob);
  if (expansion === "too many") return "too many";
  let asked: Covered;
  for (const relative of expansion.paths) {
    const found = whole
      ? await walkCovered(root, relative, rules)
      : await linked(root, relative, rules);
    if (found === "too many" || found?.kind === "deny") return found;
    asked ??= found;
  }
  return asked;
}

async function linked(
  root: string,
  relative: string,
  rules: { denied(relative: string): boolean; asked(relative: string): boolean },
): Promise<Covered> {
  const forms = [relative];
  try {
    if ((await lstat(nodePath.join(root, relative))).isSymbolicLink()) {
      const target = lexicalRelative(root, await realpath(nodePath.join(root, relative)));
      if (target !== undefined && target !== "") forms.push(target);
    }
  } catch {
    // Gone since it was listed: nothing to read.
  }
  for (const form of forms) if (rules.denied(form)) return { kind: "deny", path: form };
  const asked = forms.find((form) => rules.asked(form));
  return asked === undefined ? undefined : { kind: "ask", path: asked };
}
