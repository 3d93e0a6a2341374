/**
 * The shapes the Bash command analysis hands to the permission gate (DESIGN "Permissions and
 * built-ins: the contract"). The analysis is deliberately not a full shell: it recognises a
 * strict subset ("simple") that may be auto-allowed, and reads everything else over-inclusively
 * for deny, ask and read rules (RELIABILITY C7-C11, C14).
 */

/**
 * Stands for text only known when the command runs (an expansion, a substitution, a glob or a
 * brace): in `SimpleCommand.holes` it can match any text, spaces included. NUL can never be in
 * the analysed text itself: a command holding one is unparseable.
 */
export const HOLE = "\u0000";

/** One redirection of a command, as written. */
export interface Redirect {
  /** The operator with its file descriptor as written: `>`, `2>>`, `&>`, `<`, `2>&1`, `<<<`. */
  op: string;
  /**
   * `read` (`<`), `write` (`>`, `>>`, `>|`, `&>`, `&>>`), `readwrite` (`<>`), `duplicate`
   * (`>&N`, `<&N`), `text` (a here-document or here-string: the target is its content).
   */
  kind: "read" | "write" | "readwrite" | "duplicate" | "text";
  /** The target after quote removal (for `text`, the content), expansions as written. */
  target: string;
  /** The target (or the content) holds an expansion: what it names is known only at run time. */
  dynamic?: true;
}

/** One simple command: its words after quote removal. */
export interface SimpleCommand {
  /** NAME=value words before the program, as written (quotes removed). */
  assignments: string[];
  /** Program and arguments, quotes removed; expansions appear as written (`$HOME`). */
  argv: string[];
  /**
   * `argv` with every part known only at run time replaced by HOLE (a whole word for a glob,
   * brace or tilde word, which may become several words). Present only when it differs.
   */
  holes?: string[];
  /** Redirections, in order. Present only when there are some. */
  redirects?: Redirect[];
  /** Its standard input comes from a pipe (`a | this`). */
  piped?: true;
  /**
   * Set on a form found inside another command whose runner adds arguments of its own at run
   * time: `xargs` (words from its input), `find` (`{}` in `-exec`).
   */
  via?: "xargs" | "find";
}

export type CommandAnalysis =
  /**
   * Only static words (plain text and quotes without expansions; globs in arguments), the
   * separators `;` `&&` `||` `|` `|&` newline, a trailing `;`, comments, `2>&1`-style
   * duplications, `> file`, `>> file`, `&> file` and `< file` with a plain target.
   */
  | { kind: "simple"; commands: SimpleCommand[] }
  /**
   * Anything else. `candidates` are the simple commands found at any depth (inside
   * substitutions, groups, loops, functions), for deny, ask and read rules. `opaque` says why
   * some program it runs cannot be named from the text (an expansion as the program, code in a
   * variable, text that cannot be parsed): any Bash deny rule could match it.
   */
  | { kind: "complex"; reason: string; candidates: SimpleCommand[]; opaque?: string };

/** More simple commands than this is complex: a long chain can hide its tail from a reader (C9). */
export const MAX_SIMPLE_COMMANDS = 50;

/** A word list written as one space-separated string. */
export function list(words: string): string[] {
  return words.split(" ").filter(Boolean);
}

/** Bash's `NAME=` / `NAME+=` assignment prefix. */
export const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/;

export function basename(program: string): string {
  const base = program.slice(program.lastIndexOf("/") + 1);
  return base === "" ? program : base;
}

export function isOption(word: string): boolean {
  return word.startsWith("-") && word.length > 1;
}

/** The words of a command where HOLEs stand for run-time text. */
export function holesOf(command: SimpleCommand): string[] {
  return command.holes ?? command.argv;
}
