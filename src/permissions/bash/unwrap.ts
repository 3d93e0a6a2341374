/**
 * Stripping wrappers (`sudo env nice timeout 5 rm x`) and paths (`/bin/rm`) off a command, for
 * deny and ask matching. Works on `argv` and `holes` together, so text known only at run time
 * stays marked in every form.
 */
import { basename, HOLE, holesOf, isOption, type SimpleCommand } from "./types.ts";
import { WRAPPERS, type WrapperSpec } from "./wrappers.ts";

/** Bounds wrapper stripping (`sudo env nice timeout ...`). */
const MAX_UNWRAP = 16;

/** Stands in argv for the words xargs reads from its input (a HOLE in `holes`). */
export const XARGS_INPUT = "<xargs input>";

export interface CodeText {
  /** Command text a program runs (`bash -c TEXT`, `script -c TEXT`). */
  text: string;
  /** Built at run time: it could be any command. */
  dynamic: boolean;
}

export interface Unwrapped {
  /** Commands the command may run, the original first. */
  forms: SimpleCommand[];
  /** Command lines given to wrappers as one string (`script -c 'rm x'`). */
  texts: CodeText[];
}

/** The command, then each step of basename reduction and wrapper stripping. */
export function unwrapAll(command: SimpleCommand): Unwrapped {
  const result: Unwrapped = { forms: [command], texts: [] };
  const pending = [command];
  if (command.assignments.length > 0) {
    const bare = sliceCommand(command, 0);
    result.forms.push(bare);
    pending[0] = bare;
  }
  for (let step = 0; step < MAX_UNWRAP && pending.length > 0; step++) {
    let current = pending.shift()!;
    const program = current.argv[0];
    if (program === undefined) continue;
    const base = basename(program);
    if (base !== program && !holesOf(current)[0]!.includes(HOLE)) {
      current = withProgram(current, base);
      result.forms.push(current);
    }
    const inner = stripWrapper(current);
    if (!inner) continue;
    result.texts.push(...inner.texts);
    for (const next of inner.forms) {
      if (next.argv.length === 0) continue;
      result.forms.push(next);
      pending.push(next);
    }
  }
  return result;
}

/** The command from `at` on, as a command of its own. */
export function sliceCommand(command: SimpleCommand, at: number, end?: number): SimpleCommand {
  const form: SimpleCommand = { assignments: [], argv: command.argv.slice(at, end) };
  const holes = command.holes?.slice(at, end);
  if (holes?.some((w) => w.includes(HOLE))) form.holes = holes;
  if (command.via) form.via = command.via;
  return form;
}

function withProgram(command: SimpleCommand, program: string): SimpleCommand {
  const form: SimpleCommand = { assignments: [], argv: [program, ...command.argv.slice(1)] };
  if (command.holes) form.holes = [program, ...command.holes.slice(1)];
  if (command.via) form.via = command.via;
  return form;
}

/** What a wrapper option word does: how many words it takes, and the command text it carries. */
interface OptionWord {
  width: number;
  command?: CodeText;
}

/**
 * Reads the option at `at` for `spec`: `--name=value`, `--name value`, or a cluster of short
 * options where a value option takes the rest of the word or the next word.
 */
function readOption(command: SimpleCommand, at: number, spec: WrapperSpec): OptionWord {
  const { argv } = command;
  const holes = holesOf(command);
  const word = argv[at]!;
  const commandAt = (value: string | undefined, next: number): OptionWord => ({
    width: next - at,
    command: {
      text: [value ?? "", ...argv.slice(next)].join(" ").trim(),
      dynamic: holes.slice(at, next + 1).some((w) => w.includes(HOLE)) || value === undefined,
    },
  });
  if (word.startsWith("--")) {
    const equals = word.indexOf("=");
    const name = equals < 0 ? word : word.slice(0, equals);
    const attached = equals < 0 ? undefined : word.slice(equals + 1);
    if (spec.commandOptions?.includes(name))
      return attached === undefined ? commandAt(argv[at + 1], at + 2) : commandAt(attached, at + 1);
    return { width: attached === undefined && spec.valueOptions?.includes(name) ? 2 : 1 };
  }
  for (let k = 1; k < word.length; k++) {
    const option = `-${word[k]}`;
    const rest = word.slice(k + 1);
    if (spec.commandOptions?.includes(option))
      return rest === "" ? commandAt(argv[at + 1], at + 2) : commandAt(rest, at + 1);
    if (spec.valueOptions?.includes(option)) return { width: rest === "" ? 2 : 1 };
  }
  return { width: 1 };
}

/** The commands a wrapper runs, when the program is one; undefined otherwise. */
function stripWrapper(command: SimpleCommand): Unwrapped | undefined {
  const { argv } = command;
  const name = argv[0] ?? "";
  const spec = WRAPPERS.get(name);
  if (!spec) return undefined;
  const result: Unwrapped = { forms: [], texts: [] };
  let i = 1;
  let replace: string | undefined;
  while (i < argv.length) {
    const word = argv[i]!;
    if (word === "--") {
      i++;
      break;
    }
    if (spec.assignments && /^[A-Za-z_][A-Za-z0-9_]*=/.test(word)) {
      i++;
      continue;
    }
    if (!isOption(word)) break;
    if (name === "xargs") replace = xargsReplace(argv, i) ?? replace;
    const option = readOption(command, i, spec);
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
    const option = readOption(command, at, spec);
    if (option.command !== undefined) result.texts.push(option.command);
  }
  if (spec.commandOnly) return result;
  const inner = sliceCommand(command, i);
  // xargs without a command runs echo.
  if (name === "xargs")
    result.forms.push(
      xargsForm(i < argv.length ? inner : { assignments: [], argv: ["echo"] }, replace),
    );
  else result.forms.push(inner);
  return result;
}

/** xargs adds words from its input: a HOLE at the end, and wherever `-I` text is replaced. */
function xargsForm(inner: SimpleCommand, replace: string | undefined): SimpleCommand {
  const holes = holesOf(inner).map((w) => (replace && w.includes(replace) ? HOLE : w));
  return {
    assignments: [],
    argv: [...inner.argv, XARGS_INPUT],
    holes: [...holes, HOLE],
    via: "xargs",
  };
}

/** The replacement string of `xargs -I R`, `-IR`, `-i` or `--replace[=R]` at `at`. */
function xargsReplace(argv: string[], at: number): string | undefined {
  const word = argv[at]!;
  if (word === "-I") return argv[at + 1];
  if (word.startsWith("-I")) return word.slice(2);
  if (word === "-i" || word === "--replace") return "{}";
  if (word.startsWith("--replace=")) return word.slice("--replace=".length);
  if (word.startsWith("-i")) return word.slice(2);
  return undefined;
}
