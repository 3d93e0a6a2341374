/**
 * Programs and builtins that run text as code, now or later: shells (`bash -c`, or their
 * input), `eval`, `source`, `trap`, `alias`, `bind -x`, `complete -C`/`compgen -C`/`-W`,
 * `mapfile -C`, and assignments to PS0-PS4, PROMPT_COMMAND, BASH_ENV and ENV, whose values bash
 * expands (substitutions included) or runs. Their code is analysed as a command like any other;
 * code built at run time could be anything. `fc`, `hash -p`, `enable -f` and arithmetic on
 * variables (`let`, `declare -i`, subscripts) are treated as able to run anything.
 */

import { ASSIGNMENT, HOLE, holesOf, isOption, list, type SimpleCommand } from "./types.ts";
import type { CodeText } from "./unwrap.ts";

const SHELLS = new Set(list("sh bash zsh dash ksh mksh ash fish csh tcsh rbash"));
const STDIN = new Set(list("- /dev/stdin /dev/fd/0 /proc/self/fd/0"));
const CODE_VARIABLES = /^(?:PS[0-4]|PROMPT_COMMAND|BASH_ENV|ENV)\+?=/;
const DECLARERS = new Set(list("declare typeset local readonly export"));
/** Builtins that evaluate an array subscript given as an argument (`read 'a[$(rm x)]'`). */
const SUBSCRIPT_EVALUATORS = new Set(
  list(
    "printf read wait getopts mapfile readarray declare typeset local export readonly unset let test [",
  ),
);
/** Appended to code that is called with arguments (an alias, a completion command). */
const WITH_ARGUMENTS = ' "$@"';

/** The code `form` runs, or the reason it could run anything. `original` has its redirections. */
export function codeTexts(form: SimpleCommand, original: SimpleCommand): CodeText[] | string {
  const { argv } = form;
  const holes = holesOf(form);
  const program = argv[0];
  if (program === undefined) return assignmentCode(form === original ? original.assignments : []);
  const code = (at: number, suffix = ""): CodeText => ({
    text: (argv[at] ?? "") + suffix,
    dynamic: at >= argv.length || holes[at]!.includes(HOLE),
  });
  const texts: CodeText[] = form === original ? assignmentCode(original.assignments) : [];
  // A program word with spaces came from a command string (`sg staff 'rm -rf x'`).
  if (/\s/.test(program))
    texts.push({ text: argv.join(" "), dynamic: holes.some((w) => w.includes(HOLE)) });
  if (SUBSCRIPT_EVALUATORS.has(program)) {
    const risky = subscripts(form, texts);
    if (risky) return risky;
  }
  if (SHELLS.has(program)) {
    const shell = shellCode(form, original);
    if (typeof shell === "string") return shell;
    // Over-inclusive: any argument that reads like a command line is tried as one too.
    const lines = argv
      .slice(1)
      .filter((a, k) => /[\s;&|]/.test(a) && !holes[k + 1]!.includes(HOLE));
    return [...texts, ...shell, ...lines.map((text) => ({ text, dynamic: false }))];
  }
  switch (program) {
    case "su":
      return [...texts, ...valuesOf(form, ["-c", "--command", "--session-command"], code)];
    case "eval":
      return [
        ...texts,
        { text: argv.slice(1).join(" "), dynamic: holes.slice(1).some((w) => w.includes(HOLE)) },
      ];
    case "trap": {
      const at = firstOperand(argv, 1);
      return at < argv.length && argv[at] !== "-" ? [...texts, code(at)] : texts;
    }
    case "source":
    case ".": {
      const at = firstOperand(argv, 1);
      if (at >= argv.length) return texts;
      if (holes[at]!.includes(HOLE)) return `${program} runs a file named only at run time`;
      if (!STDIN.has(argv[at]!)) return texts;
      const input = stdinCode(original, program);
      return typeof input === "string" ? input : [...texts, ...input];
    }
    case "alias":
      return [
        ...texts,
        ...argv.slice(1).flatMap((arg, k) => {
          const equals = arg.indexOf("=");
          if (equals < 0) return [];
          const text = arg.slice(equals + 1) + WITH_ARGUMENTS;
          return [{ text, dynamic: holes[k + 1]!.includes(HOLE) }];
        }),
      ];
    case "bind":
      return [...texts, ...valuesOf(form, ["-x"], code).map(bindCommand)];
    case "complete":
    case "compgen":
      return [
        ...texts,
        ...valuesOf(form, ["-C"], (at) => code(at, WITH_ARGUMENTS)),
        ...valuesOf(form, ["-W"], (at) => code(at)),
      ];
    case "mapfile":
    case "readarray":
      return [...texts, ...valuesOf(form, ["-C"], (at) => code(at, WITH_ARGUMENTS))];
    case "fc":
      return "fc runs commands from the history";
    case "hash":
      return optionLetters(argv).includes("p") ? "hash -p makes a name run another program" : texts;
    case "enable":
      return optionLetters(argv).includes("f") ? "enable -f loads code from a file" : texts;
    case "let":
      return argv.slice(1).some((a) => /[A-Za-z_]/.test(a))
        ? "let evaluates variables as code"
        : texts;
    default:
      break;
  }
  if (DECLARERS.has(program) || program === "env" || program === "sudo") {
    if (
      DECLARERS.has(program) &&
      optionLetters(argv).includes("i") &&
      argv.some((a) => /=.*[A-Za-z_]/.test(a))
    )
      return `${program} -i evaluates values as arithmetic`;
    return [...texts, ...assignmentCode(argv.slice(1).filter((a) => ASSIGNMENT.test(a)))];
  }
  return texts;
}

/**
 * Values of variables whose text bash runs (PROMPT_COMMAND) or expands later, substitutions
 * included (the prompts, and BASH_ENV and ENV before sourcing the file they name). A value with
 * an expansion in it is code known only at run time.
 */
function assignmentCode(assignments: string[]): CodeText[] {
  return assignments
    .filter((a) => CODE_VARIABLES.test(a))
    .map((a) => {
      const value = a.slice(a.indexOf("=") + 1);
      const text = a.startsWith("PROMPT_COMMAND") ? value : `: ${value}`;
      return { text, dynamic: /[$`]|[<>]\(/.test(value) };
    });
}

/** `bash -c CODE`, `bash` reading its input, or `bash FILE` (a script: the sandbox's job). */
function shellCode(form: SimpleCommand, original: SimpleCommand): CodeText[] | string {
  const { argv } = form;
  const holes = holesOf(form);
  let at = 1;
  let command = false;
  while (at < argv.length && /^[-+]/.test(argv[at]!) && argv[at]!.length > 1) {
    const word = argv[at]!;
    if (word === "--") {
      at++;
      break;
    }
    if (!word.startsWith("--") && word.slice(1).includes("c")) command = true;
    at += /^(?:[-+][oO]|--rcfile|--init-file)$/.test(word) ? 2 : 1;
  }
  if (command) {
    if (at >= argv.length || holes[at]!.includes(HOLE))
      return `${argv[0]} -c runs code built at run time`;
    return [{ text: argv[at]!, dynamic: false }];
  }
  if (at < argv.length && holes[at]!.includes(HOLE))
    return `${argv[0]} runs a script named only at run time`;
  if (at < argv.length && !STDIN.has(argv[at]!)) return [];
  return stdinCode(original, argv[0]!);
}

/** Code a shell or `source` reads from its input: a here-document or here-string, or a pipe. */
function stdinCode(original: SimpleCommand, program: string): CodeText[] | string {
  const texts: CodeText[] = [];
  for (const redirect of original.redirects ?? []) {
    if (redirect.kind !== "text") continue;
    if (redirect.dynamic) return `${program} runs code built at run time`;
    texts.push({ text: redirect.target, dynamic: false });
  }
  if (texts.length === 0 && original.piped) return `${program} runs commands from a pipe`;
  return texts;
}

/** The values of these options: the next word, or the rest of a short cluster or `--opt=`. */
function valuesOf(
  form: SimpleCommand,
  options: string[],
  code: (at: number, suffix?: string) => CodeText,
): CodeText[] {
  const texts: CodeText[] = [];
  form.argv.forEach((word, at) => {
    if (at === 0 || !isOption(word)) return;
    for (const option of options) {
      if (word === option) texts.push(code(at + 1));
      else if (option.startsWith("--") && word.startsWith(`${option}=`))
        texts.push({ ...code(at), text: word.slice(option.length + 1) });
      else if (!option.startsWith("--") && !word.startsWith("--") && word.includes(option[1]!)) {
        const rest = word.slice(word.indexOf(option[1]!) + 1);
        texts.push(rest === "" ? code(at + 1) : { ...code(at), text: rest });
      }
    }
  });
  return texts;
}

/** `bind -x '"\C-x": command'`: the command after the key sequence. */
function bindCommand(text: CodeText): CodeText {
  const colon = text.text.indexOf(":");
  return colon < 0 ? text : { ...text, text: text.text.slice(colon + 1) };
}

function firstOperand(argv: string[], from: number): number {
  let at = from;
  while (at < argv.length && isOption(argv[at]!)) {
    if (argv[at] === "--") return at + 1;
    at++;
  }
  return at;
}

/** The letters of the options before the first operand (`-np` gives "np"; `--` ends them). */
export function optionLetters(argv: string[]): string {
  let letters = "";
  for (const arg of argv.slice(1)) {
    if (arg === "--" || !isOption(arg) || arg.startsWith("--")) break;
    letters += arg.slice(1);
  }
  return letters;
}

/**
 * Substitutions in arguments these builtins evaluate as array subscripts run (`printf -v
 * 'a[$(rm x)]' y`); a subscript naming a variable is arithmetic on its value, which may be code.
 */
function subscripts(form: SimpleCommand, texts: CodeText[]): string | undefined {
  const { argv } = form;
  for (const arg of argv.slice(1)) {
    if (/\$\(|`/.test(arg)) texts.push({ text: `: ${arg}`, dynamic: false });
  }
  const program = argv[0]!;
  const flag =
    program === "printf"
      ? "v"
      : program === "wait"
        ? "p"
        : program === "test" || program === "["
          ? "v"
          : "";
  const candidates =
    flag === "" ? argv.slice(1).filter((a) => !isOption(a)) : flagValues(argv, flag);
  const risky = candidates.find((a) => /\[[^\]]*[A-Za-z_][^\]]*\]/.test(a));
  return risky === undefined
    ? undefined
    : `${program} evaluates the subscript of ${JSON.stringify(risky)} as arithmetic`;
}

function flagValues(argv: string[], flag: string): string[] {
  const values: string[] = [];
  argv.forEach((word, at) => {
    if (word === `-${flag}`) values.push(argv[at + 1] ?? "");
    else if (word.startsWith(`-${flag}`)) values.push(word.slice(2));
  });
  return values;
}
