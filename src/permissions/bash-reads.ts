import { type CommandAnalysis, denyForms } from "./bash-command.ts";
import { lexicalRelative } from "./paths.ts";

/**
 * Programs whose plain arguments are files they read. A Bash call that names a file a `Read(...)`
 * deny rule covers is denied, and one that names a file an ask rule covers asks (RELIABILITY C14:
 * recognised file commands honour Read rules; arbitrary interpreters are stopped only by the
 * sandbox, which masks the denied files).
 */
const FILE_READERS = new Set(
  (
    "cat tac nl head tail less more most view vi vim nano grep egrep fgrep rg ag sed awk gawk " +
    "cut sort uniq wc strings xxd od hexdump base64 base32 cp mv ln rsync scp source . diff cmp " +
    "comm paste join file tee dd openssl gpg zip tar gzip zcat bat jq yq iconv split md5sum " +
    "sha256sum sha1sum curl wget"
  ).split(" "),
);

/** Characters with which an argument names files by pattern: it could name a covered file. */
const GLOB = /[*?[\]{}]/;

export type FileReadConcern = { deny: string } | { ask: string } | undefined;

/**
 * What Read rules say about the files a command's file-reading programs name. Arguments are
 * tried as written from the workspace root and with their leading `./` and `../` steps removed
 * (the shell's working directory may be below the root), so `cat ../.env` from `sub/` is caught.
 * A glob among them asks when any Read rule restricts reading, since it could name a covered file.
 */
export function fileReadConcern(
  analysis: CommandAnalysis,
  root: string,
  rules: { denied(relative: string): boolean; asked(relative: string): boolean; any: boolean },
): FileReadConcern {
  if (!rules.any) return undefined;
  let concern: FileReadConcern;
  const commands = analysis.kind === "simple" ? analysis.commands : analysis.candidates;
  for (const command of commands) {
    for (const form of denyForms(command)) {
      const [program, ...args] = form.argv;
      if (program === undefined || !FILE_READERS.has(program.split("/").at(-1)!)) continue;
      for (const arg of args) {
        for (const candidate of new Set([arg, arg.slice(arg.indexOf("=") + 1)])) {
          if (candidate === "" || candidate.startsWith("-")) continue;
          if (GLOB.test(candidate)) {
            concern ??= {
              ask: `${JSON.stringify(candidate)} names files by pattern, and Read rules restrict some files`,
            };
            continue;
          }
          for (const relative of pathForms(root, candidate)) {
            if (rules.denied(relative)) return { deny: candidate };
            if (rules.asked(relative))
              concern ??= {
                ask: `it reads ${JSON.stringify(candidate)}, which a Read rule asks about`,
              };
          }
        }
      }
    }
  }
  return concern;
}

function pathForms(root: string, given: string): string[] {
  const forms = new Set<string>();
  const direct = lexicalRelative(root, given);
  if (direct) forms.add(direct);
  const stepped = given.replace(/^(?:\.{1,2}\/+)+/, "");
  const fromBelow = stepped !== given ? lexicalRelative(root, stepped) : undefined;
  if (fromBelow) forms.add(fromBelow);
  return [...forms];
}
