/**
 * The tokens of the Bash lexer: words made of parts, operators, redirections and comments, each
 * with its source positions; and small helpers that read them.
 */

export type Part =
  /** Literal characters; `quoted` ones (quotes, backslash) are never globbed, braced or split. */
  | { kind: "text"; text: string; quoted: boolean; escaped?: true }
  /** `$x`, `${...}`. `risky`: bash may evaluate text from a variable as code here. */
  | { kind: "param"; raw: string; risky?: string; nested: string[] }
  /** `$(...)` or backticks: `body` is the command text. */
  | { kind: "command"; raw: string; body: string }
  /** `$((...))`, `$[...]`. */
  | { kind: "arith"; raw: string; body: string }
  /** `<(...)`, `>(...)`. */
  | { kind: "process"; raw: string; body: string }
  /** `$'...'` or `$"..."`: text decoded or translated at run time. */
  | { kind: "ansi"; raw: string }
  /** `NAME=( ... )`: the words inside, as text. */
  | { kind: "array"; raw: string; body: string };

export interface Word {
  kind: "word";
  start: number;
  end: number;
  parts: Part[];
}

export interface Op {
  kind: "op";
  op: string;
  start: number;
  end: number;
}

export interface Redir {
  kind: "redirect";
  start: number;
  end: number;
  /** The file descriptor as written (`2`, `{fd}`), or "" for the operator's default. */
  fd: string;
  op: string;
  target?: Word;
  /** A here-document: its body (and where it lies in the source). */
  heredoc?: { body: string; quoted: boolean; start: number; end: number };
}

export interface Comment {
  kind: "comment";
  start: number;
  end: number;
}

/** `(( ... ))` as a command. */
export interface ArithCommand {
  kind: "arith";
  start: number;
  end: number;
  body: string;
}

export type Token = Word | Op | Redir | Comment | ArithCommand;

export interface Lexed {
  tokens: Token[];
  /** A backslash-newline (line continuation) occurs outside single quotes. */
  continuation: boolean;
}

export class LexError extends Error {}

/** The word's text when it is only unquoted literal text, else undefined. */
export function plainText(word: Word): string | undefined {
  let text = "";
  for (const part of word.parts) {
    if (part.kind !== "text" || part.quoted) return undefined;
    text += part.text;
  }
  return text;
}

/** Index of the first `)` of the `))` closing an arithmetic `((` opened before `from`, or -1. */
export function arithmeticEnd(src: string, from: number): number {
  let depth = 0;
  for (let j = from; j < src.length; j++) {
    const c = src[j];
    if (c === "(") depth++;
    else if (c === ")") {
      if (depth > 0) depth--;
      else return src[j + 1] === ")" ? j : -1;
    }
  }
  return -1;
}
