/**
 * Read rules for Bash (RELIABILITY C14): a Bash call whose recognised file readers (`cat`, `grep`,
 * `cp`, `tar`...) or input redirections (`< file`) name a file a `Read(...)` deny rule covers is
 * denied, and one an ask rule covers asks. A recursive reader (`grep -r`, `rg`, `tar c`,
 * `cp -r`) is checked against every file under its directories. Where the gate cannot know what
 * is read (an expansion as a reader's argument or a redirection target, file names from
 * `xargs`, a program named only at run time), a deny rule means deny. An argument the shell
 * expands to names (a glob, a brace, `~`) is judged by its pattern against the rules' patterns,
 * since the files there when the command runs may not be the files there now (read-globs.ts):
 * a pattern that could name a denied file is denied, never asked about. Arbitrary interpreters
 * (`python -c`) are stopped only by the sandbox, which masks the denied files.
 */
import { realpath } from "node:fs/promises";
import nodePath from "node:path";
import { isWithin } from "../../tools/workspace.ts";
import { lexicalRelative } from "../paths.ts";
import { denyView } from "./deny.ts";
import { globCovered, patternForms } from "./read-globs.ts";
import { recursiveOperands } from "./recursive.ts";
import { shellSidePaths } from "./shell-side.ts";
import { basename, type CommandAnalysis, HOLE, holesOf, isOption, list } from "./types.ts";
import { walkCovered } from "./walk.ts";

/** Programs whose arguments name files they read. */
const FILE_READERS = new Set(
  list(
    "cat tac nl head tail less more most view vi vim nvim nano emacs ed ex grep egrep fgrep " +
      "zgrep rg ag ack sed awk gawk mawk cut sort uniq wc strings xxd od hexdump hd base64 " +
      "base32 basenc cp mv ln install rsync scp source . diff diff3 sdiff cmp comm paste join " +
      "file tee dd openssl gpg zip unzip 7z 7za tar gzip gunzip zcat bzip2 bzcat xz xzcat zstd " +
      "zstdcat lz4 bat batcat jq yq iconv split csplit md5sum sha1sum sha224sum sha256sum " +
      "sha384sum sha512sum b2sum cksum sum curl wget fold fmt pr rev column expand unexpand " +
      "look shuf tsort numfmt git sqlite3 python python3 node perl ruby php lua sh bash zsh " +
      "dash ksh",
  ),
);

export type FileReadConcern = { deny: string } | { ask: string } | undefined;

export interface ReadRules {
  denied(relative: string): boolean;
  asked(relative: string): boolean;
  /** Some Read rule denies or asks. */
  any: boolean;
  /** Some Read rule denies. */
  anyDeny: boolean;
  /** Whether a deny rule's pattern could cover a path this workspace-relative shell glob names. */
  globDenied(glob: string): boolean;
  /** Whether an ask rule's pattern could. */
  globAsked(glob: string): boolean;
}

interface PendingGlob {
  glob: string;
  /** Read by a reader that reads directories whole. */
  whole: boolean;
  given: string;
}

/**
 * What Read rules say about the files the command reads. Paths are tried as written from the
 * workspace root and with their leading `./` and `../` steps removed (the shell's working
 * directory may be below the root), so `cat ../.env` from `sub/` is caught. Returns a promise
 * only when a directory must be walked.
 */
export function fileReadConcern(
  analysis: CommandAnalysis,
  root: string,
  rules: ReadRules,
): FileReadConcern | Promise<FileReadConcern> {
  if (!rules.any) return undefined;
  let ask: FileReadConcern;
  const unknown = (what: string): FileReadConcern =>
    rules.anyDeny ? { deny: what } : { ask: `${what}; Read rules restrict some files` };
  const named: string[] = [];
  const path = (given: string): FileReadConcern => {
    // Through the shell's own /proc entry (`/proc/self/cwd/.env`): also what it names there.
    for (const each of [given, ...shellSidePaths(root, given)]) {
      named.push(each);
      for (const relative of pathForms(root, each)) {
        if (rules.denied(relative)) return { deny: given };
        if (rules.asked(relative))
          ask ??= { ask: `it reads ${JSON.stringify(given)}, which a Read rule asks about` };
      }
    }
    return undefined;
  };
  // A word the shell expands to names: judged by the patterns, then by the files it matches now.
  const globs: PendingGlob[] = [];
  const directories: string[] = [];
  let patterns = 0;
  const pattern = (given: string, whole: boolean): FileReadConcern => {
    if (++patterns > MAX_GLOBS)
      return unknown(`it names files by more than ${MAX_GLOBS} patterns, too many to check`);
    const forms = patternForms(given, root);
    if (!forms) return unknown(`${JSON.stringify(given)} expands to too many names to check`);
    for (const literal of forms.literals) {
      if (whole) directories.push(literal);
      const concern = path(literal);
      if (concern && "deny" in concern)
        return literal === given ? concern : { deny: `${given} (which names ${literal})` };
    }
    for (const glob of forms.globs) {
      // The pattern names the workspace root or a directory above it: read whole, it is everything.
      if (glob === "") {
        if (whole) directories.push(".");
        continue;
      }
      if (rules.globDenied(glob))
        return { deny: `${given} (a pattern that can name a file the rule covers)` };
      if (rules.globAsked(glob))
        ask ??= {
          ask: `it reads ${JSON.stringify(given)}, a pattern that can name a file a Read rule asks about`,
        };
      globs.push({ glob, whole, given });
    }
    return undefined;
  };
  const view = denyView(analysis);
  if (view.opaque) {
    const concern = unknown(`a program it runs is named only at run time (${view.opaque})`);
    if (concern && "deny" in concern) return concern;
    ask ??= concern;
  }
  const commands = analysis.kind === "simple" ? analysis.commands : analysis.candidates;
  // The forms too: redirections inside code given to `bash -c`, `eval`, `find -exec sh -c`.
  for (const command of new Set([...commands, ...view.forms])) {
    for (const redirect of command.redirects ?? []) {
      if (redirect.kind !== "read" && redirect.kind !== "readwrite") continue;
      const concern = redirect.dynamic
        ? unknown(`it reads from ${JSON.stringify(redirect.target)}, named only at run time`)
        : path(redirect.target);
      if (concern && "deny" in concern) return concern;
      ask ??= concern;
    }
  }
  for (const form of view.forms) {
    const program = basename(form.argv[0] ?? "");
    if (!FILE_READERS.has(program) && program !== "find") continue;
    const holes = holesOf(form);
    // The operands read whole, pattern words included (their holes masked).
    const wide = new Set(recursiveOperands({ ...form, holes: form.argv }));
    if (program === "find") {
      for (const start of wide) {
        const at = form.argv.indexOf(start, 1);
        if (at < 0 || !holes[at]!.includes(HOLE)) directories.push(start);
        else {
          const concern = /[$`]/.test(start)
            ? unknown(`find reads under ${JSON.stringify(start)}, named only at run time`)
            : pattern(start, true);
          if (concern && "deny" in concern) return concern;
          ask ??= concern;
        }
      }
      continue;
    }
    directories.push(...recursiveOperands(form));
    if (form.via === "xargs") {
      const concern = unknown(`xargs gives ${program} the names of the files it reads`);
      if (concern && "deny" in concern) return concern;
      ask ??= concern;
      continue;
    }
    for (let at = 1; at < form.argv.length; at++) {
      const arg = form.argv[at]!;
      const expands = holes[at]!.includes(HOLE);
      if (expands) {
        if (form.via === "find" && holes[at] === HOLE && arg.includes("{}")) continue;
        if (/[$`]/.test(arg)) {
          const concern = unknown(
            `${program} reads ${JSON.stringify(arg)}, named only at run time`,
          );
          if (concern && "deny" in concern) return concern;
          ask ??= concern;
          continue;
        }
      }
      for (const candidate of argumentPaths(arg)) {
        const concern =
          expands || candidate.startsWith("~")
            ? pattern(candidate, candidate === arg && wide.has(arg))
            : path(candidate);
        if (concern && "deny" in concern) return concern;
        ask ??= concern;
      }
    }
  }
  if (directories.length === 0 && named.length === 0 && globs.length === 0) return ask;
  return (async () => {
    const linked = await throughLinks(named, root, rules);
    if (linked && "deny" in linked) return linked;
    const globbed = await globsOnDisk(globs, root, rules, unknown);
    if (globbed && "deny" in globbed) return globbed;
    const walked = await walkDirectories(directories, root, rules, unknown);
    return walked && "deny" in walked ? walked : (ask ?? linked ?? globbed ?? walked);
  })();
}

/** At most this many named files are followed through symbolic links. */
const MAX_LINKS = 64;

/** A file named through a symbolic link is read where the link leads: the rules see that too. */
async function throughLinks(
  named: string[],
  root: string,
  rules: ReadRules,
): Promise<FileReadConcern> {
  let ask: FileReadConcern;
  for (const given of [...new Set(named)].slice(0, MAX_LINKS)) {
    let target: string | undefined;
    try {
      target = lexicalRelative(root, await realpath(nodePath.resolve(root, given)));
    } catch {
      continue;
    }
    if (target === undefined || target === "") continue;
    if (rules.denied(target)) return { deny: `${given} (a link to ${target})` };
    if (rules.asked(target))
      ask ??= { ask: `it reads ${JSON.stringify(given)}, a link to a file a Read rule asks about` };
  }
  return ask;
}

/** At most this many patterns of one command are read (then expanded against the files). */
const MAX_GLOBS = 64;

/** The files the globs match now: links to covered files, covered files under directories read whole. */
async function globsOnDisk(
  globs: PendingGlob[],
  root: string,
  rules: ReadRules,
  unknown: (what: string) => FileReadConcern,
): Promise<FileReadConcern> {
  let ask: FileReadConcern;
  for (const { glob, whole, given } of globs.slice(0, MAX_GLOBS)) {
    const found = await globCovered(root, glob, whole, rules);
    if (found === "too many") {
      const concern = unknown(`${JSON.stringify(given)} matches too many files to check`);
      if (concern && "deny" in concern) return concern;
      ask ??= concern;
    } else if (found?.kind === "deny") {
      return { deny: `${found.path} (which ${given} names)` };
    } else if (found?.kind === "ask") {
      ask ??= {
        ask: `it reads ${JSON.stringify(given)}, which names "${found.path}", a file a Read rule asks about`,
      };
    }
  }
  return ask;
}

/** The paths an argument may name: itself, the value after `=` or `@`, an attached short value. */
function argumentPaths(arg: string): string[] {
  const candidates = new Set<string>();
  const add = (value: string): void => {
    if (value !== "" && !value.startsWith("-")) candidates.add(value);
  };
  add(arg);
  add(arg.slice(arg.indexOf("=") + 1));
  if (arg.startsWith("@")) add(arg.slice(1));
  if (isOption(arg) && !arg.startsWith("--")) add(arg.slice(2));
  return [...candidates];
}

async function walkDirectories(
  directories: string[],
  root: string,
  rules: ReadRules,
  unknown: (what: string) => FileReadConcern,
): Promise<FileReadConcern> {
  let ask: FileReadConcern;
  for (const directory of new Set(directories)) {
    const named = [directory, ...shellSidePaths(root, directory)];
    const forms = named.flatMap((each) => pathForms(root, each));
    // A directory above the root (`grep -r KEY /`) holds the whole workspace.
    if (named.some((each) => isWithin(nodePath.resolve(root, each), root))) forms.push("");
    for (const relative of new Set(forms)) {
      const found = await walkCovered(root, relative, rules);
      if (found === "too many") {
        const concern = unknown(
          `it reads everything under ${JSON.stringify(directory)}, too many files to check`,
        );
        if (concern && "deny" in concern) return concern;
        ask ??= concern;
      } else if (found?.kind === "deny") {
        return { deny: `${found.path} (under ${JSON.stringify(directory)}, which it reads whole)` };
      } else if (found?.kind === "ask") {
        ask ??= {
          ask: `it reads everything under ${JSON.stringify(directory)}, which holds "${found.path}", a file a Read rule asks about`,
        };
      }
    }
  }
  return ask;
}

/** A path as the rules see it: from the root, and with leading `./` `../` steps removed. */
export function pathForms(root: string, given: string): string[] {
  const forms = new Set<string>();
  const direct = lexicalRelative(root, given);
  if (direct !== undefined) forms.add(direct);
  const stepped = given.replace(/^(?:\.{1,2}\/+)+/, "").replace(/^\.{1,2}$/, "");
  if (stepped !== given) {
    const fromBelow = lexicalRelative(root, stepped === "" ? "." : stepped);
    if (fromBelow !== undefined) forms.add(fromBelow);
  }
  return [...forms];
}
