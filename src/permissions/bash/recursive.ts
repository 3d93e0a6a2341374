/**
 * The directories a recursive reader reads whole: `grep -r PATTERN DIR`, `rg PATTERN` (the
 * current directory), `tar c DIR`, `cp -r DIR DEST`, `rsync -a`, `zip -r`, `diff -r`, `git grep`,
 * and `find DIR -exec cat {} ;`. Only plain operands are returned; the read check treats the
 * others (expansions, globs) on its own.
 */
import { basename, HOLE, holesOf, isOption, list, type SimpleCommand } from "./types.ts";

const GREPS = new Set(list("grep egrep fgrep zgrep"));
const SEARCHERS = new Set(list("rg ag ack ack-grep"));
const COPIERS = new Set(list("cp scp install rsync diff"));
const FIND_EXEC = new Set(list("-exec -execdir -ok -okdir"));
/** Readers a `find -exec` clause may run on every file it finds. */
const EXEC_READERS = new Set(
  list(
    "cat tac nl head tail less more grep egrep fgrep rg sed awk cut sort strings xxd od " +
      "hexdump base64 cp mv ln tar zip gzip bat jq wc md5sum sha256sum sha1sum dd tee file diff",
  ),
);

export function recursiveOperands(form: SimpleCommand): string[] {
  const program = basename(form.argv[0] ?? "");
  const args = form.argv.slice(1);
  const holes = holesOf(form).slice(1);
  const operands = args.filter((a, k) => !isOption(a) && !holes[k]!.includes(HOLE));
  const letters = args
    .filter((a) => isOption(a) && !a.startsWith("--"))
    .map((a) => a.slice(1))
    .join("");
  const long = (...names: string[]) =>
    args.some((a) => names.some((n) => a === n || a.startsWith(`${n}=`)));
  const searched = (given: string[]) => {
    const patternGiven = /[ef]/.test(letters) || long("--regexp", "--file", "--files");
    const paths = patternGiven ? given : given.slice(1);
    return paths.length > 0 ? paths : ["."];
  };
  if (GREPS.has(program)) {
    const recursive =
      /[rR]/.test(letters) ||
      long("--recursive", "--dereference-recursive") ||
      args.includes("--directories=recurse") ||
      args.some((a, k) => a === "-d" && args[k + 1] === "recurse");
    return recursive ? searched(operands) : [];
  }
  if (SEARCHERS.has(program)) return searched(operands);
  if (program === "git") return args[0] === "grep" ? ["."] : [];
  if (program === "tar") return operands;
  if (COPIERS.has(program))
    return /[rRa]/.test(letters) || long("--recursive", "--archive") ? operands : [];
  if (program === "zip") return /r/.test(letters) || long("--recurse-paths") ? operands : [];
  if (program === "7z" || program === "7za") return args[0] === "a" ? operands.slice(1) : [];
  if (program === "find") return findStarts(args);
  return [];
}

/** find's starting points when one of its `-exec` clauses runs a reader; none otherwise. */
function findStarts(args: string[]): string[] {
  const reads = args.some(
    (a, k) => FIND_EXEC.has(a) && EXEC_READERS.has(basename(args[k + 1] ?? "")),
  );
  if (!reads) return [];
  const end = args.findIndex((a) => a.startsWith("-") || a === "(" || a === "!");
  const starts = end < 0 ? args : args.slice(0, end);
  return starts.length > 0 ? starts : ["."];
}
