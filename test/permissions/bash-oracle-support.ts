// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are shell commands
/**
 * The random command generator of the Bash oracle test, and what unbash's tree says the simple
 * commands of a script are. Deterministic: the same seed gives the same commands.
 */
import type { ParsedScript, SyntaxNode } from "unbash";

/** Program names the generator uses (and the bash sample provides as programs). */
export const PROGRAMS = ["prog", "tool-a", "run2", "zz"];

/** A seeded generator of numbers in [0, 1) (mulberry32). */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Next = () => number;

const pick = <T>(next: Next, items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
const chance = (next: Next, p: number): boolean => next() < p;

function text(next: Next, alphabet: string, min: number, max: number): string {
  const length = min + Math.floor(next() * (max - min + 1));
  let out = "";
  for (let i = 0; i < length; i++) out += pick(next, [...alphabet]);
  return out;
}

const PLAIN = "abcxyz019._-/=+,:@%^";
const IN_SINGLE = 'ab $;&|"\\#*?{}()<>`!~\t=';
const IN_DOUBLE = "ab ;&|'#*?{}()<>!~=";

/** One piece of a word. */
function piece(next: Next): string {
  const kind = next();
  if (kind < 0.3) return text(next, PLAIN, 1, 5);
  if (kind < 0.42) return `'${text(next, IN_SINGLE, 0, 6)}'`;
  if (kind < 0.52) return `"${text(next, IN_DOUBLE, 0, 6)}"`;
  if (kind < 0.57) return `\\${pick(next, [...";a-$ \"'#*|&{}"])}`;
  if (kind < 0.67)
    return pick(next, [
      "$x",
      "${x}",
      '"$x"',
      "$(prog a)",
      "`prog b`",
      "$((1+2))",
      "$'\\x41'",
      '"a\\"b"',
      '$"t"',
      "${x:-d}",
    ]);
  if (kind < 0.77)
    return pick(next, ["*.ts", "a?", "[ab]c", "{a,b}", "{}", "a{b}c", "~/x", "a#b", "#"]);
  return text(next, PLAIN, 1, 3);
}

function word(next: Next): string {
  let out = piece(next);
  while (chance(next, 0.25)) out += piece(next);
  return out;
}

function redirection(next: Next): string {
  return pick(next, [
    "> out",
    ">>out",
    "2>&1",
    ">&2",
    "<in.txt",
    "< in.txt",
    "&>/dev/null",
    "2>/dev/null",
    "> 'o t'",
    "&>> log.txt",
    "2> log.txt",
    "3> x",
    "<<< w",
    "<> in.txt",
    "> $x",
    ">& out",
    "0<in.txt",
    "1>out",
    ">|out",
    "2>&3",
    "<&0",
  ]);
}

function simpleCommand(next: Next): string {
  const parts: string[] = [];
  while (chance(next, 0.15)) parts.push(pick(next, ["A=1", "B='x y'", 'C="z"', "D+=q", "E=$x"]));
  const program = next();
  if (program < 0.75) parts.push(pick(next, PROGRAMS));
  else if (program < 0.85) parts.push(`'${pick(next, PROGRAMS)}'`);
  else if (program < 0.92) parts.push(pick(next, ["if", "{", "!", "[[", "(prog)", "time", "for"]));
  else parts.push(word(next));
  const args = Math.floor(next() * 5);
  for (let i = 0; i < args; i++) parts.push(chance(next, 0.12) ? redirection(next) : word(next));
  if (chance(next, 0.2)) parts.push(redirection(next));
  const blank = () => pick(next, [" ", " ", " ", "  ", "\t"]);
  return parts.map((p, i) => (i === 0 ? p : blank() + p)).join("");
}

const SEPARATORS = ["; ", " && ", " || ", " | ", " |& ", "\n", ";", " & ", " ;; ", " &&\n", "|"];

export function generateCommand(next: Next): string {
  const count = 1 + Math.floor(next() * 4);
  let out = "";
  for (let i = 0; i < count; i++) {
    if (i > 0) out += pick(next, SEPARATORS);
    out += simpleCommand(next);
  }
  if (chance(next, 0.15)) out += pick(next, [";", " ;", "; "]);
  if (chance(next, 0.15)) out += pick(next, [" # note", " #x $(y)", "# z", "\t# a;b"]);
  if (chance(next, 0.05)) out += "\n";
  return out;
}

/** The simple commands of a script per unbash, or a marker when it holds anything else. */
export function commandsOf(script: ParsedScript): unknown[] {
  if (script.errors && script.errors.length > 0) return ["unbash reported errors"];
  const out: unknown[] = [];
  for (const statement of script.commands) {
    if (statement.background) return ["background"];
    flatten(statement.command, out);
  }
  return out;
}

function flatten(node: SyntaxNode, out: unknown[]): void {
  const anyNode = node as { type: string; commands?: SyntaxNode[]; prefixes?: unknown[] };
  if (anyNode.type === "AndOr" || anyNode.type === "Pipeline") {
    if (anyNode.prefixes && anyNode.prefixes.length > 0) out.push("pipeline prefix");
    for (const inner of anyNode.commands ?? []) flatten(inner, out);
    return;
  }
  if (anyNode.type !== "Command") {
    out.push(`compound ${anyNode.type}`);
    return;
  }
  const command = node as unknown as UnbashCommand;
  const assignments: string[] = [];
  const argv: string[] = [];
  const redirects: string[][] = [];
  if (command.name) argv.push(command.name.value);
  for (const item of [...command.prefix, ...command.suffix]) {
    if (item.type === "Assignment") {
      const value = item.value.type === "Word" ? item.value.value : "(array)";
      const text = `${item.name}${item.append ? "+=" : "="}${value}`;
      if (command.prefix.includes(item)) assignments.push(text);
      else argv.push(text);
    } else if (item.type === "Word") argv.push(item.value);
    else
      redirects.push([`${item.descriptor?.value ?? ""}${item.operator}`, item.target?.value ?? ""]);
  }
  out.push({ assignments, argv, redirects });
}

interface UnbashWord {
  type: "Word";
  value: string;
}
type UnbashItem =
  | UnbashWord
  | {
      type: "Assignment";
      name: string;
      append?: boolean;
      value: UnbashWord | { type: "ArrayValue" };
    }
  | {
      type: "Redirect" | "HereString" | "HereDoc";
      operator: string;
      descriptor?: { value: number | string };
      target?: UnbashWord;
    };
interface UnbashCommand {
  name?: UnbashWord;
  prefix: UnbashItem[];
  suffix: UnbashItem[];
}
