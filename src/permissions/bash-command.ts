/**
 * Bash command analysis for the permission gate (DESIGN "Permissions and built-ins: the contract").
 *
 * Deliberately not a shell parser. We recognise a small subset of shell syntax (plain words,
 * quotes without expansions, and the separators `;` `&&` `||` `|` `|&` newline) and call everything
 * else "complex". Complex commands are never auto-allowed; for deny rules their text is split
 * over-inclusively, so syntax we did not understand never turns a deny into an ask (C7-C11).
 */

import { escapeRegExp } from "./rules.ts";

/** One simple command: its words after quote removal. */
export interface SimpleCommand {
  /** NAME=value words before the program, as written (quotes removed). */
  assignments: string[];
  /** Program and arguments, quotes removed. */
  argv: string[];
}

export type CommandAnalysis =
  /** Only plain words, single/double quotes without expansions, and the separators ; && || | |& newline. */
  | { kind: "simple"; commands: SimpleCommand[] }
  /** Anything else. `candidates` is an over-inclusive split of the text into command-like word lists, for deny matching. */
  | { kind: "complex"; reason: string; candidates: SimpleCommand[] };

/** More simple commands than this is complex: a long chain can hide its tail from a parser (C9). */
export const MAX_SIMPLE_COMMANDS = 50;

// ---------------------------------------------------------------------------------------------
// Strict recognition of the simple subset
// ---------------------------------------------------------------------------------------------

type Separator = ";" | "&&" | "||" | "|" | "|&" | "&" | "\n";

interface Word {
  kind: "word";
  text: string;
  /** Index in `text` where quoted characters begin (Infinity when none): `"A=1" cmd` is no assignment. */
  quotedFrom: number;
  /** An unquoted `*`, `?` or `[`: bash would expand the word as a pattern. */
  glob: boolean;
}

type Token = Word | { kind: "separator"; op: Separator };

/** Bash's `NAME=` / `NAME+=` assignment prefix. */
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/;

const GLOB_CHARACTERS = new Set(["*", "?", "["]);

const UNBALANCED_QUOTE = "unparseable: unbalanced quote";
const EMPTY_BETWEEN = "unparseable: empty command between separators";

/** Reserved words (bash, plus a few zsh ones): as a program they start syntax we do not parse. */
const KEYWORDS = new Set(
  list(
    "if then else elif fi for while until case esac in do done function select coproc " +
      "[[ ]] { } ! repeat foreach end nocorrect noglob",
  ),
);

/** A word list written as one space-separated string. */
function list(words: string): string[] {
  return words.split(" ").filter(Boolean);
}

export function analyzeCommand(command: string): CommandAnalysis {
  const parsed = parseSimple(command);
  if (typeof parsed === "string")
    return { kind: "complex", reason: parsed, candidates: candidateCommands(command) };
  return { kind: "simple", commands: parsed };
}

/** The simple commands, or the reason the text is outside the simple subset. */
function parseSimple(command: string): SimpleCommand[] | string {
  const control = controlCharacterReason(command);
  if (control) return control;
  const tokens = lex(command);
  if (typeof tokens === "string") return tokens;
  const groups = groupCommands(tokens);
  if (typeof groups === "string") return groups;
  const commands: SimpleCommand[] = [];
  for (const words of groups) {
    const simple = toSimpleCommand(words);
    if (typeof simple === "string") return simple;
    commands.push(simple);
  }
  return commands;
}

/** CR is a separator to some parsers and not to others (C9); other control bytes are just as murky. */
function controlCharacterReason(text: string): string | undefined {
  for (const character of text) {
    const code = character.charCodeAt(0);
    if (code === 0) return "NUL character";
    if (code === 13) return "carriage return";
    if ((code < 32 && code !== 9 && code !== 10) || code === 127) return "control character";
  }
  return undefined;
}

function lex(source: string): Token[] | string {
  const tokens: Token[] = [];
  let word: Word | undefined;
  const currentWord = (): Word => {
    word ??= { kind: "word", text: "", quotedFrom: Number.POSITIVE_INFINITY, glob: false };
    return word;
  };
  const endWord = (): void => {
    if (word) tokens.push(word);
    word = undefined;
  };

  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (c === " " || c === "\t") {
      endWord();
      i++;
      continue;
    }
    const separator = readSeparator(source, i);
    if (separator) {
      endWord();
      tokens.push({ kind: "separator", op: separator });
      i += separator.length;
      continue;
    }
    if (c === "'" || c === '"') {
      const quoted = c === "'" ? readSingleQuoted(source, i) : readDoubleQuoted(source, i);
      if (typeof quoted === "string") return quoted;
      const target = currentWord();
      target.quotedFrom = Math.min(target.quotedFrom, target.text.length);
      target.text += quoted.text;
      i = quoted.end;
      continue;
    }
    // `#` starts a comment only at the start of a word; `a#b` is an ordinary word.
    if (c === "#" && word === undefined) return "comment";
    const problem = unquotedProblem(c, source[i + 1]);
    if (problem) return problem;
    const target = currentWord();
    target.text += c;
    if (GLOB_CHARACTERS.has(c)) target.glob = true;
    i++;
  }
  endWord();
  return tokens;
}

/** `&&`, `||` and `|&` before their one-character prefixes; `;;` lexes as two `;` (an empty command). */
function readSeparator(source: string, at: number): Separator | undefined {
  const two = source.slice(at, at + 2);
  if (two === "&&" || two === "||" || two === "|&") return two;
  const one = source[at];
  if (one === ";" || one === "&" || one === "|" || one === "\n") return one;
  return undefined;
}

interface Quoted {
  text: string;
  /** Index just past the closing quote. */
  end: number;
}

/** Single quotes are fully literal in bash. */
function readSingleQuoted(source: string, at: number): Quoted | string {
  const close = source.indexOf("'", at + 1);
  if (close < 0) return UNBALANCED_QUOTE;
  return { text: source.slice(at + 1, close), end: close + 1 };
}

/** Double quotes are literal only without `$`, backtick or backslash, which still act inside them. */
function readDoubleQuoted(source: string, at: number): Quoted | string {
  for (let i = at + 1; i < source.length; i++) {
    const c = source[i]!;
    if (c === '"') return { text: source.slice(at + 1, i), end: i + 1 };
    if (c === "$") return dollarReason(source[i + 1]);
    if (c === "`") return "command substitution";
    if (c === "\\") return source[i + 1] === "\n" ? "line continuation" : "backslash escape";
  }
  return UNBALANCED_QUOTE;
}

/** Unquoted characters that take us outside the simple subset. */
function unquotedProblem(c: string, next: string | undefined): string | undefined {
  switch (c) {
    case "\\":
      // Any escape, even of an ordinary character: `ls \-exec` must not read differently to us (C9).
      return next === "\n" ? "line continuation" : "backslash escape";
    case "$":
      return dollarReason(next);
    case "`":
      return "command substitution";
    case "<":
      if (next === "<") return "heredoc";
      return next === "(" ? "process substitution" : "redirection";
    case ">":
      return next === "(" ? "process substitution" : "redirection";
    case "(":
    case ")":
      return "subshell";
    case "{":
    case "}":
      return "brace";
    default:
      return undefined;
  }
}

/** Any `$` can hide a program (`$X args`), so every expansion is complex. */
function dollarReason(next: string | undefined): string {
  return next === "(" ? "command substitution" : "variable expansion";
}

/**
 * Splits tokens at separators. Newlines may repeat and may follow another separator (`a &&`
 * newline `b`), as in bash; any other separator needs a command before it and one after it.
 */
function groupCommands(tokens: Token[]): Word[][] | string {
  const commands: Word[][] = [];
  let words: Word[] = [];
  let awaitingCommand = false;
  for (const token of tokens) {
    if (token.kind === "word") {
      words.push(token);
      continue;
    }
    if (words.length === 0) {
      if (token.op === "\n") continue;
      return EMPTY_BETWEEN;
    }
    if (token.op === "&") return "background &";
    commands.push(words);
    if (commands.length > MAX_SIMPLE_COMMANDS) return tooManyCommands();
    words = [];
    awaitingCommand = token.op !== "\n";
  }
  if (words.length > 0) commands.push(words);
  else if (awaitingCommand) return "unparseable: trailing separator";
  if (commands.length > MAX_SIMPLE_COMMANDS) return tooManyCommands();
  if (commands.length === 0) return "empty command";
  return commands;
}

function tooManyCommands(): string {
  return `too many commands (over ${MAX_SIMPLE_COMMANDS})`;
}

function toSimpleCommand(words: Word[]): SimpleCommand | string {
  let programAt = 0;
  while (programAt < words.length && isAssignment(words[programAt]!)) programAt++;
  const program = words[programAt];
  if (program) {
    if (KEYWORDS.has(program.text)) return `shell keyword "${program.text}"`;
    // A pattern in the program word picks the program from the file system.
    if (program.glob) return "glob in program name";
  }
  return {
    assignments: words.slice(0, programAt).map((w) => w.text),
    argv: words.slice(programAt).map((w) => w.text),
  };
}

/** Only an unquoted `NAME=` prefix makes an assignment; `"A=1" cmd` runs a program named `A=1`. */
function isAssignment(word: Word): boolean {
  const match = ASSIGNMENT.exec(word.text);
  return match !== null && match[0].length <= word.quotedFrom;
}

// ---------------------------------------------------------------------------------------------
// Over-inclusive split of complex text, for deny matching only
// ---------------------------------------------------------------------------------------------

/** Every operator-like character ends a piece, quotes notwithstanding: `$(`, `<(` contents become pieces. */
const CANDIDATE_BOUNDARY = /\$\(|[;&|()`<>{}\n\r\0]/;

function candidateCommands(raw: string): SimpleCommand[] {
  return raw
    .split(CANDIDATE_BOUNDARY)
    .map(looseCommand)
    .filter((c) => c.assignments.length > 0 || c.argv.length > 0);
}

function looseCommand(piece: string): SimpleCommand {
  const words = piece.split(/\s+/).map(removeQuoting).filter(Boolean);
  let programAt = 0;
  while (programAt < words.length && ASSIGNMENT.test(words[programAt]!)) programAt++;
  return { assignments: words.slice(0, programAt), argv: words.slice(programAt) };
}

/** Best-effort quote removal: `r''m` and `r\m` both run `rm`. */
function removeQuoting(word: string): string {
  return word.replace(/['"\\]/g, "");
}

// ---------------------------------------------------------------------------------------------
// Rule patterns
// ---------------------------------------------------------------------------------------------

/**
 * Claude Code's Bash rule semantics: `P:*` matches P alone, or P followed by a space or ":" and anything;
 * `*` elsewhere matches any characters within one simple command; otherwise exact match. The command is
 * compared as its argv joined by single spaces (assignments NOT included). Matching is case-sensitive.
 * As in Claude Code, `\*` is a literal star, and a pattern whose only `*` is a trailing ` *` also
 * matches the bare command (`git *` matches `git`).
 */
export function matchesBashPattern(pattern: string, command: SimpleCommand): boolean {
  return patternRegExp(pattern).test(command.argv.join(" "));
}

const ANY = "[\\s\\S]*";

function patternRegExp(pattern: string): RegExp {
  const prefix = /^([\s\S]+):\*$/.exec(pattern);
  if (prefix) return new RegExp(`^${globSource(prefix[1]!).source}(?:[ :]${ANY})?$`);
  const { source, wildcards } = globSource(pattern);
  if (wildcards === 1 && source.endsWith(` ${ANY}`))
    return new RegExp(`^${source.slice(0, -ANY.length - 1)}(?: ${ANY})?$`);
  return new RegExp(`^${source}$`);
}

/** Regex source for a rule pattern: unescaped `*` is a wildcard, `\*` and `\\` are literals. */
function globSource(pattern: string): { source: string; wildcards: number } {
  let source = "";
  let wildcards = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    const next = pattern[i + 1];
    if (c === "\\" && (next === "*" || next === "\\")) {
      source += escapeRegExp(next);
      i++;
    } else if (c === "*") {
      source += ANY;
      wildcards++;
    } else {
      source += escapeRegExp(c);
    }
  }
  return { source, wildcards };
}

// ---------------------------------------------------------------------------------------------
// Wrappers and deny forms
// ---------------------------------------------------------------------------------------------

interface WrapperSpec {
  /**
   * Options whose value is the next word (`timeout -s KILL`). `--opt=value` is one word, and a
   * short one may end a cluster (`timeout -vs KILL`) or carry its value (`nice -n5`).
   */
  valueOptions?: string[];
  /** Operands before the wrapped command: timeout's DURATION, chroot's NEWROOT, flock's FILE. */
  operands?: number;
  /** `NAME=value` words before the command are skipped (env, sudo). */
  assignments?: boolean;
  /**
   * Options whose value is a command line, analysed again as text: the next word (`script -c
   * 'rm x'`, `env -S 'rm x'`), attached (`env -S'rm x'`, `--command=rm x`) or ending a cluster
   * (`script -qc 'rm x'`). Also recognised right after the operands (`flock FILE -c 'rm x'`).
   */
  commandOptions?: string[];
  /** Options may follow operands (GNU getopt permutes): command options are looked for everywhere. */
  permute?: boolean;
  /** The command comes only from a command option (`script -c`); the operands are no command. */
  commandOnly?: boolean;
}

/**
 * Programs that run the command given in their arguments. Stripped (repeatedly) for deny matching,
 * and never auto-allowed. `npx` is not here: it runs a package, and `Bash(npx *)` is flagged by
 * allowsAnything instead. Option lists follow the util-linux, coreutils, strace and systemd help
 * texts; an option missing from a list would make its value look like the wrapped program.
 */
const WRAPPERS = new Map<string, WrapperSpec>([
  ["timeout", { valueOptions: list("-s --signal -k --kill-after"), operands: 1 }],
  [
    "env",
    {
      valueOptions: list("-u --unset -C --chdir"),
      assignments: true,
      commandOptions: list("-S --split-string"),
    },
  ],
  ["nice", { valueOptions: list("-n --adjustment") }],
  ["ionice", { valueOptions: list("-c --class -n --classdata -p --pid -P --pgid") }],
  ["nohup", {}],
  ["time", { valueOptions: list("-f --format -o --output") }],
  [
    "sudo",
    {
      valueOptions: list(
        "-u --user -g --group -h --host -p --prompt -C --close-from -r --role -t --type " +
          "-D --chdir -R --chroot -U --other-user -T --command-timeout",
      ),
      assignments: true,
    },
  ],
  ["doas", { valueOptions: list("-u -C") }],
  [
    "xargs",
    {
      valueOptions: list(
        "-a --arg-file -d --delimiter -E -I -L --max-lines -n --max-args -P --max-procs " +
          "-s --max-chars --process-slot-var",
      ),
    },
  ],
  ["watch", { valueOptions: list("-n --interval -q --equexit") }],
  ["stdbuf", { valueOptions: list("-i --input -o --output -e --error") }],
  ["command", {}],
  ["exec", { valueOptions: list("-a") }],
  ["builtin", {}],
  ["setsid", {}],
  ["chroot", { valueOptions: list("--userspec --groups"), operands: 1 }],
  // flock [options] FILE COMMAND... | flock [options] FILE -c 'COMMAND'
  [
    "flock",
    {
      valueOptions: list("-w --timeout --wait -E --conflict-exit-code"),
      operands: 1,
      commandOptions: list("-c --command"),
    },
  ],
  // taskset [options] MASK COMMAND... (-c is a flag: the mask is a CPU list)
  ["taskset", { operands: 1 }],
  [
    "unshare",
    {
      valueOptions: list(
        "-R --root -w --wd -S --setuid -G --setgid --propagation --setgroups --monotonic " +
          "--boottime --map-user --map-group --map-users --map-groups -l --load-interp",
      ),
    },
  ],
  ["nsenter", { valueOptions: list("-t --target -S --setuid -G --setgid -W --wdns --env") }],
  [
    "chrt",
    { valueOptions: list("-T --sched-runtime -P --sched-period -D --sched-deadline"), operands: 1 },
  ],
  [
    "numactl",
    {
      valueOptions: list(
        "-i --interleave -p --preferred -P --preferred-many -w --weighted-interleave " +
          "-C --physcpubind -N --cpunodebind -m --membind -S --shm -f --file -I --shmid " +
          "-L --length -o --offset -M --shmmode",
      ),
    },
  ],
  [
    "setpriv",
    {
      valueOptions: list(
        "--ambient-caps --inh-caps --bounding-set --ruid --euid --rgid --egid --reuid --regid " +
          "--groups --securebits --pdeathsig --selinux-label --apparmor-profile " +
          "--landlock-access --landlock-rule --seccomp-filter",
      ),
    },
  ],
  ["prlimit", { valueOptions: list("-p --pid -o --output") }],
  [
    "strace",
    {
      valueOptions: list(
        "-a -b -e -E -I -o -O -p -P -s -S -u -U -X --columns --detach-on --env --attach " +
          "--user --interruptible --trace --signal --status --trace-path --abbrev --verbose " +
          "--raw --read --write --quiet --kvm --inject --fault --output --string-limit " +
          "--const-print-style --summary-syscall-overhead --summary-sort-by --summary-columns",
      ),
    },
  ],
  [
    "ltrace",
    {
      valueOptions: list(
        "-a --align -A -D --debug -e -F --config -l --library -n --indent -o --output -p -s " +
          "-u -w --where -x",
      ),
    },
  ],
  // valgrind and firejail take `--option=value` only.
  ["valgrind", {}],
  ["firejail", {}],
  ["catchsegv", {}],
  ["busybox", {}],
  ["toybox", {}],
  ["eatmydata", {}],
  ["nocache", {}],
  ["unbuffer", {}],
  ["dbus-run-session", {}],
  ["fakeroot", { valueOptions: list("-l --lib -f --faked -i -s -b --fd-base") }],
  ["faketime", { valueOptions: list("--date-prog"), operands: 1 }],
  ["torsocks", { valueOptions: list("-u --user -p --pass -a --address -P --port") }],
  ["proxychains", { valueOptions: list("-f") }],
  ["proxychains4", { valueOptions: list("-f") }],
  ["pkexec", { valueOptions: list("--user") }],
  ["cgexec", { valueOptions: list("-g") }],
  [
    "xvfb-run",
    {
      valueOptions: list(
        "-e --error-file -f --auth-file -n --server-num -p --xauth-protocol -s --server-args " +
          "-w --wait",
      ),
    },
  ],
  [
    "systemd-run",
    {
      valueOptions: list(
        "-H --host -M --machine -u --unit -p --property --description --slice --service-type " +
          "--uid --gid --nice --working-directory -E --setenv --path-property --socket-property " +
          "--timer-property --on-active --on-boot --on-startup --on-unit-active " +
          "--on-unit-inactive --on-calendar",
      ),
    },
  ],
  // runuser -u USER COMMAND... | runuser USER -c 'COMMAND' (options anywhere, as in su)
  [
    "runuser",
    {
      valueOptions: list(
        "-u --user -g --group -G --supp-group -w --whitelist-environment -s --shell",
      ),
      commandOptions: list("-c --command --session-command"),
      permute: true,
    },
  ],
  // sg GROUP [-c] 'COMMAND': the command is one string run by /bin/sh.
  ["sg", { operands: 1, commandOptions: list("-c") }],
  // script [options] [FILE]: runs a command only with -c (else an interactive shell).
  [
    "script",
    {
      valueOptions: list(
        "-I --log-in -O --log-out -B --log-io -T --log-timing -m --logging-format -E --echo " +
          "-o --output-limit",
      ),
      commandOptions: list("-c --command"),
      permute: true,
      commandOnly: true,
    },
  ],
  // macOS
  ["caffeinate", { valueOptions: list("-t -w") }],
]);

/** The wrapper names, for callers that document or display them. */
export const BASH_WRAPPERS: readonly string[] = [...WRAPPERS.keys()];

/** Programs that run code handed to them as an argument (`bash -c`, `eval`, `source`). */
const CODE_RUNNERS = new Set(
  list(
    "eval source . sh bash zsh dash ksh mksh ash fish csh tcsh su trap fc let " +
      "mapfile readarray enable compgen",
  ),
);

/**
 * Builtins whose effect is to change what later commands in the same shell do (C11): they set or
 * unset variables (`read`, `getopts`, `unset PATH` makes bash look programs up in the current
 * directory), aliases, the command hash or shell options (`set -k` turns `NAME=value` arguments
 * into environment). `mapfile`/`readarray` assign too; they are code runners (`-C callback`).
 */
const STATE_CHANGERS = new Set(
  list("export declare typeset local readonly alias shopt hash read getopts unset set"),
);

/** Builtins that assign a variable only with an option: `printf -v VAR`, `wait -p VAR`. */
const ASSIGNING_OPTIONS = new Map([
  ["printf", "v"],
  ["wait", "p"],
]);

/**
 * Builtins that evaluate an array subscript given as an argument (`printf -v 'a[$(rm x)]' y`,
 * `read 'a[$(rm x)]'`): bash expands it, command substitutions included. For deny matching, their
 * arguments holding a substitution are analysed again as command text.
 */
const SUBSCRIPT_EVALUATORS = new Set(
  list(
    "printf read wait getopts mapfile readarray declare typeset local export readonly unset " +
      "let test",
  ),
);

/** Code runners whose arguments we re-analyse as command text for deny matching. */
const EVALUATORS = new Set(list("eval sh bash zsh dash ksh mksh ash fish csh tcsh su compgen"));

/** find actions that run programs or write files (C10). */
const FIND_ACTIONS = new Set(
  list("-exec -execdir -ok -okdir -delete -fprint -fprint0 -fprintf -fls"),
);

const FIND_EXEC = new Set(list("-exec -execdir -ok -okdir"));

/** Bounds the re-analysis of `bash -c '...'` inside `bash -c '...'`. */
const MAX_NESTING = 3;

/** Bounds wrapper stripping (`sudo env nice timeout ...`). */
const MAX_UNWRAP = 16;

/**
 * The forms a deny rule is also tried against: the command with its assignments removed, with
 * wrappers stripped (repeatedly; see WRAPPERS), and with a path before the program reduced to its
 * basename (any path, `./rm` included: over-inclusive is the safe side for a deny). Also the
 * commands inside `find -exec ... ;`, and the command text given to a shell, `eval` or a
 * wrapper's command option (`bash -c "rm -rf /"`, `script -c 'rm x'`), analysed again.
 * Returns the original first, then each distinct stripped form.
 */
export function denyForms(command: SimpleCommand): SimpleCommand[] {
  return collectForms(command, 0);
}

function collectForms(command: SimpleCommand, depth: number): SimpleCommand[] {
  const forms = new Map<string, SimpleCommand>();
  const add = (form: SimpleCommand): void => {
    const key = JSON.stringify([form.assignments, form.argv]);
    if (!forms.has(key)) forms.set(key, form);
  };
  add(command);
  const unwrapped = unwrapAll(command.argv);
  for (const argv of unwrapped.argvs) add({ assignments: [], argv });
  if (depth < MAX_NESTING) {
    const inner = unwrapped.texts.flatMap(commandsOf);
    for (const form of [...forms.values()]) inner.push(...innerCommands(form.argv));
    for (const each of inner) for (const nested of collectForms(each, depth + 1)) add(nested);
  }
  return [...forms.values()];
}

interface Unwrapped {
  /** Argument lists the command may run, the original first. */
  argvs: string[][];
  /** Command lines given to wrappers as one string (`script -c 'rm x'`). */
  texts: string[];
}

/** The argv, then each step of basename reduction and wrapper stripping. */
function unwrapAll(argv: string[]): Unwrapped {
  const result: Unwrapped = { argvs: [argv], texts: [] };
  const pending = [argv];
  for (let step = 0; step < MAX_UNWRAP && pending.length > 0; step++) {
    let current = pending.shift()!;
    const program = current[0];
    if (program === undefined) continue;
    const base = basename(program);
    if (base !== program) {
      current = [base, ...current.slice(1)];
      result.argvs.push(current);
    }
    const inner = stripWrapper(current);
    if (!inner) continue;
    result.texts.push(...inner.texts);
    for (const next of inner.argvs) {
      if (next.length === 0) continue;
      result.argvs.push(next);
      pending.push(next);
    }
  }
  return result;
}

function basename(program: string): string {
  const base = program.slice(program.lastIndexOf("/") + 1);
  return base === "" ? program : base;
}

/** What a wrapper option word does: how many words it takes, and the command text it carries. */
interface OptionWord {
  /** Words consumed, the option's own included. */
  width: number;
  /** Set for a command option: its command line, with the words after it. */
  command?: string;
}

/**
 * Reads the option at `argv[at]` for `spec`: `--name=value`, `--name value`, or a cluster of short
 * options where a value option takes the rest of the word or the next word.
 */
function readOption(argv: string[], at: number, spec: WrapperSpec): OptionWord {
  const word = argv[at]!;
  const commandAt = (value: string | undefined, next: number): OptionWord => ({
    width: next - at,
    command: [value ?? "", ...argv.slice(next)].join(" ").trim(),
  });
  if (word.startsWith("--")) {
    const equals = word.indexOf("=");
    const name = equals < 0 ? word : word.slice(0, equals);
    const attached = equals < 0 ? undefined : word.slice(equals + 1);
    if (spec.commandOptions?.includes(name)) {
      return attached === undefined ? commandAt(argv[at + 1], at + 2) : commandAt(attached, at + 1);
    }
    return { width: attached === undefined && spec.valueOptions?.includes(name) ? 2 : 1 };
  }
  for (let k = 1; k < word.length; k++) {
    const option = `-${word[k]}`;
    const rest = word.slice(k + 1);
    if (spec.commandOptions?.includes(option)) {
      return rest === "" ? commandAt(argv[at + 1], at + 2) : commandAt(rest, at + 1);
    }
    if (spec.valueOptions?.includes(option)) return { width: rest === "" ? 2 : 1 };
  }
  return { width: 1 };
}

/** The commands a wrapper runs, when argv[0] is one; undefined otherwise. */
function stripWrapper(argv: string[]): Unwrapped | undefined {
  const spec = WRAPPERS.get(argv[0] ?? "");
  if (!spec) return undefined;
  const result: Unwrapped = { argvs: [], texts: [] };
  let i = 1;
  while (i < argv.length) {
    const word = argv[i]!;
    if (word === "--") {
      i++;
      break;
    }
    if (spec.assignments && ASSIGNMENT.test(word)) {
      i++;
      continue;
    }
    if (!isOption(word)) break;
    const option = readOption(argv, i, spec);
    if (option.command !== undefined) {
      result.texts.push(option.command);
      return result;
    }
    i += option.width;
  }
  i += spec.operands ?? 0;
  // `flock FILE -c 'rm x'`, and options anywhere for wrappers whose getopt permutes.
  for (let at = i; at < argv.length && (at === i || spec.permute); at++) {
    if (!isOption(argv[at]!)) continue;
    if (argv[at] === "--") break;
    const option = readOption(argv, at, spec);
    if (option.command !== undefined) result.texts.push(option.command);
  }
  if (!spec.commandOnly) result.argvs.push(argv.slice(i));
  return result;
}

/** Commands run from inside this one: `find -exec` clauses, and command text given to a shell. */
function innerCommands(argv: string[]): SimpleCommand[] {
  const [program, ...args] = argv;
  if (program === undefined) return [];
  if (program === "find") return findExecCommands(args);
  const texts: string[] = [];
  // A program word with spaces came from a command string (`sg staff 'rm -rf x'`).
  if (/\s/.test(program)) texts.push(argv.join(" "));
  if (EVALUATORS.has(program)) {
    const firstOperand = args.findIndex((a) => !isOption(a));
    if (firstOperand >= 0) texts.push(args.slice(firstOperand).join(" "));
    texts.push(...args.filter((a) => /[\s;&|]/.test(a)));
  }
  if (SUBSCRIPT_EVALUATORS.has(program)) texts.push(...args.filter((a) => /\$\(|`/.test(a)));
  return texts.flatMap(commandsOf);
}

function findExecCommands(args: string[]): SimpleCommand[] {
  const commands: SimpleCommand[] = [];
  args.forEach((arg, at) => {
    if (!FIND_EXEC.has(arg)) return;
    const rest = args.slice(at + 1);
    const end = rest.findIndex((a) => a === ";" || a === "+");
    const argv = end < 0 ? rest : rest.slice(0, end);
    if (argv.length > 0) commands.push({ assignments: [], argv });
  });
  return commands;
}

function commandsOf(text: string): SimpleCommand[] {
  const analysis = analyzeCommand(text);
  return analysis.kind === "simple" ? analysis.commands : analysis.candidates;
}

function isOption(word: string): boolean {
  return word.startsWith("-") && word.length > 1;
}

// ---------------------------------------------------------------------------------------------
// Allow-side checks
// ---------------------------------------------------------------------------------------------

/**
 * True when a simple command (as written) must never be auto-allowed even if an allow rule matches it:
 * any assignment (C11), `find` with an action that runs or writes (C10), a wrapper, a program that
 * runs code given as an argument, or a builtin that changes what later commands do (`export`,
 * `alias`, `hash`, `read`, `unset`, `printf -v`, `wait -p`...). Returns a short reason, or undefined.
 */
export function unsafeToAllow(command: SimpleCommand): string | undefined {
  const [program, ...args] = command.argv;
  if (program === undefined) return "assignment only";
  const assignment = command.assignments[0];
  if (assignment !== undefined) return `environment assignment ${assignmentName(assignment)}`;
  const base = basename(program);
  if (WRAPPERS.has(base)) return `${base} runs another command`;
  if (CODE_RUNNERS.has(base)) return `${base} runs code given as an argument`;
  if (STATE_CHANGERS.has(base)) return `${base} changes later commands`;
  const assigning = ASSIGNING_OPTIONS.get(base);
  if (assigning !== undefined && leadingOptionLetters(args).includes(assigning))
    return `${base} -${assigning} changes later commands`;
  if (base === "find") {
    const action = args.find((a) => FIND_ACTIONS.has(a));
    if (action) return `find ${action}`;
  }
  return undefined;
}

/** The letters of the options before the first operand (`-np` gives "np"; `--` ends them). */
function leadingOptionLetters(args: string[]): string {
  let letters = "";
  for (const arg of args) {
    if (arg === "--" || !isOption(arg)) break;
    letters += arg.slice(1);
  }
  return letters;
}

function assignmentName(assignment: string): string {
  return assignment.slice(0, assignment.indexOf("=")).replace(/\+$/, "");
}

/** Launchers of arbitrary code: followed by only options and a wildcard, a rule allows anything. */
const LAUNCHERS = new Set([
  ...WRAPPERS.keys(),
  ...CODE_RUNNERS,
  ...list("npx bunx pnpx uvx node nodejs deno bun tsx ts-node python pypy perl ruby php lua"),
  ...list("awk gawk mawk nawk pwsh"),
]);

/** Two-word launchers: `npm exec *` is as broad as `npx *`. */
const LAUNCHER_SUBCOMMANDS = new Map<string, string[]>([
  ["npm", ["exec", "x"]],
  ["pnpm", ["exec", "dlx"]],
  ["yarn", ["exec", "dlx"]],
  ["uv", ["run", "tool"]],
  ["pipx", ["run"]],
  ["poetry", ["run"]],
]);

/**
 * True for an allow pattern that in effect allows anything (`npx *`, `bash:*`, `sh *`, `*`,
 * `node *`, `python -c *`, `env *`, `xargs *`, `npm exec *`, `* --version`). Accepts the pattern
 * alone or as `Bash(...)`. The gate warns about these at assembly.
 */
export function allowsAnything(pattern: string): boolean {
  const words = patternWords(pattern);
  const wildcardAt = words.findIndex((w) => w.includes("*"));
  if (words.length === 0 || wildcardAt === 0) return true;
  if (wildcardAt < 0) return false;
  const [first, ...rest] = words.slice(0, wildcardAt);
  const program = launcherName(basename(first!));
  if (LAUNCHERS.has(program)) return rest.every(isOption);
  const [subcommand, ...options] = rest;
  const subcommands = LAUNCHER_SUBCOMMANDS.get(program) ?? [];
  return subcommand !== undefined && subcommands.includes(subcommand) && options.every(isOption);
}

/** `python3.12` -> `python`, `perl5` -> `perl`. */
function launcherName(program: string): string {
  return program.replace(/[\d.]+$/, "") || program;
}

/** The rule's words, with `Bash(...)` unwrapped and `P:*` read as `P *`. */
function patternWords(pattern: string): string[] {
  const body = (/^Bash\(([\s\S]*)\)$/.exec(pattern.trim())?.[1] ?? pattern).trim();
  const spaced = body.endsWith(":*") ? `${body.slice(0, -2)} *` : body;
  return spaced.split(/\s+/).filter(Boolean);
}

// ---------------------------------------------------------------------------------------------
// Deny-side check for complex commands
// ---------------------------------------------------------------------------------------------

/**
 * Could this deny pattern match any part of the command? Over-inclusive: true if any command (simple)
 * or candidate (complex), or one of its denyForms, matches; and, for a complex command only, also
 * when the pattern's leading program word matches a word anywhere in the raw text (after removing
 * quotes and backslashes). Used so a deny is never downgraded to ask.
 */
export function denyCouldMatch(pattern: string, analysis: CommandAnalysis, raw: string): boolean {
  const commands = analysis.kind === "simple" ? analysis.commands : analysis.candidates;
  const matched = commands.some((c) => denyForms(c).some((f) => matchesBashPattern(pattern, f)));
  return matched || (analysis.kind === "complex" && programWordAppears(pattern, raw));
}

function programWordAppears(pattern: string, raw: string): boolean {
  const program = patternWords(pattern)[0];
  if (program === undefined) return true;
  const word = new RegExp(`^${globSource(program).source}$`);
  return looseWords(raw).some((w) => word.test(w) || word.test(basename(w)));
}

function looseWords(raw: string): string[] {
  return removeQuoting(raw)
    .split(/[\s;&|()`<>{}$=]+/)
    .filter(Boolean);
}
