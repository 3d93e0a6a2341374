/**
 * The allow side: a command is auto-allowed only when it is simple, every simple command in it
 * (and every command `find -exec` runs) matches an allow rule, and none is unsafe to allow
 * whatever the rules say (assignments, wrappers, code runners, builtins that change later
 * commands, `find` actions that write, a `cd` into a protected directory).
 */
import { isProtectedPath } from "../protected.ts";
import { codeTexts, optionLetters } from "./code.ts";
import { denyView } from "./deny.ts";
import { basename, type CommandAnalysis, isOption, list, type SimpleCommand } from "./types.ts";
import { WRAPPERS } from "./wrappers.ts";

/** Programs that run code handed to them as an argument (`bash -c`, `eval`, `source`). */
export const CODE_RUNNERS = new Set(
  list(
    "eval source . sh bash zsh dash ksh mksh ash fish csh tcsh rbash su trap fc let mapfile " +
      "readarray enable compgen complete bind coproc",
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

/** find actions that write files (C10); `-exec` and kin are checked as commands of their own. */
const FIND_WRITES = new Set(list("-delete -fprint -fprint0 -fprintf -fls"));
const FIND_EXEC = new Set(list("-exec -execdir -ok -okdir"));

/** Builtins that change the working directory later commands (and later calls) run in. */
const DIRECTORY_CHANGERS = new Set(list("cd pushd popd"));

/**
 * True when a simple command (as written) must never be auto-allowed even if an allow rule
 * matches it. Returns a short reason, or undefined.
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
  if (assigning !== undefined && optionLetters(command.argv).includes(assigning))
    return `${base} -${assigning} changes later commands`;
  if (base === "find") return findReason(args);
  if (DIRECTORY_CHANGERS.has(base)) return directoryReason(base, command);
  // Any other code it would run (`test -v 'a[$(cmd)]'` evaluates the subscript).
  const code = codeTexts(command, command);
  if (typeof code === "string") return code;
  if (code.length > 0) return `${base} runs code given in its arguments`;
  return undefined;
}

function findReason(args: string[]): string | undefined {
  const write = args.find((a) => FIND_WRITES.has(a));
  if (write) return `find ${write}`;
  for (const clause of findClauses(args)) {
    if (!clause.terminated) return `find ${clause.action} without ";" or "+"`;
    if (clause.argv.length === 0) return `find ${clause.action} without a command`;
    if (clause.argv[0]!.includes("{}")) return `find ${clause.action} runs the files it finds`;
  }
  return undefined;
}

/** A `cd` whose destination is unknown or protected would make later redirections land there. */
function directoryReason(base: string, command: SimpleCommand): string | undefined {
  const operands = command.argv.slice(1).filter((a) => !isOption(a));
  const target = operands[0];
  if (target === undefined) return undefined;
  if (target === "-" || command.holes) return `${base} to a directory known only at run time`;
  if (isProtectedPath(target.replace(/^\/+/, "")))
    return `${base} into ${JSON.stringify(target)}, a protected directory`;
  return undefined;
}

interface FindClause {
  action: string;
  argv: string[];
  terminated: boolean;
}

function findClauses(args: string[]): FindClause[] {
  const clauses: FindClause[] = [];
  for (let at = 0; at < args.length; at++) {
    const action = args[at]!;
    if (!FIND_EXEC.has(action)) continue;
    const rest = args.slice(at + 1);
    const end = rest.findIndex((a) => a === ";" || a === "+");
    clauses.push({ action, argv: end < 0 ? rest : rest.slice(0, end), terminated: end >= 0 });
    at += end < 0 ? rest.length : end + 1;
  }
  return clauses;
}

/** The commands `find -exec` runs, each checked against the allow rules like any other. */
export function findCommands(command: SimpleCommand): SimpleCommand[] {
  if (basename(command.argv[0] ?? "") !== "find") return [];
  return findClauses(command.argv.slice(1)).map((c) => ({ assignments: [], argv: c.argv }));
}

function assignmentName(assignment: string): string {
  return assignment.slice(0, assignment.indexOf("=")).replace(/\+$/, "");
}

/**
 * The allow decision for a command: true, or why it is not auto-allowed. `matches` says whether
 * some allow rule matches one simple command.
 */
export function allowVerdict(
  analysis: CommandAnalysis,
  matches: (command: SimpleCommand) => boolean,
): true | string {
  if (analysis.kind === "complex")
    return `the command uses ${analysis.reason}, which is never allowed without approval`;
  const opaque = denyView(analysis).opaque;
  if (opaque) return `${opaque}, which is never allowed without approval`;
  const check = (command: SimpleCommand, depth: number): true | string => {
    const unsafe = unsafeToAllow(command);
    if (unsafe) return `${describeCommand(command)}: ${unsafe}`;
    if (!matches(command)) return `no allow rule matches ${describeCommand(command)}`;
    if (depth > 3) return `${describeCommand(command)}: find -exec nested too deep`;
    for (const inner of findCommands(command)) {
      const verdict = check(inner, depth + 1);
      if (verdict !== true) return verdict;
    }
    return true;
  };
  for (const command of analysis.commands) {
    const verdict = check(command, 0);
    if (verdict !== true) return verdict;
  }
  return analysis.commands.length > 0 ? true : "the command is empty";
}

export function describeCommand(command: SimpleCommand): string {
  return JSON.stringify([...command.assignments, ...command.argv].join(" "));
}
