/**
 * Bash tokens with source positions: words (their quoted, literal and expanded parts),
 * operators, redirections (with here-document bodies) and comments. It reads the whole of
 * bash's word syntax so that what it does not understand is an error (unparseable), never a
 * word read differently from bash (C9). Substitution bodies are kept as text and analysed again.
 */
import { readDollar, readDoubleQuoted, type Scanner } from "./expansions.ts";
import {
  arithmeticEnd,
  LexError,
  type Lexed,
  plainText,
  type Redir,
  type Token,
  type Word,
} from "./tokens.ts";

export {
  type ArithCommand,
  arithmeticEnd,
  type Comment,
  LexError,
  type Lexed,
  type Op,
  type Part,
  plainText,
  type Redir,
  type Token,
  type Word,
} from "./tokens.ts";

/** Deeper nesting of substitutions than this is unparseable. */
const MAX_DEPTH = 12;

const BLANK = new Set([" ", "\t"]);
const OPERATORS = [";;&", ";;", ";&", "&&", "||", "|&", ";", "&", "|"];
const REDIRECTS = ["&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", "<", ">>", ">&", ">|", ">"];
/** Words after which a `((` starts an arithmetic command rather than two subshells. */
const BEFORE_COMMAND = new Set(["then", "do", "else", "elif", "if", "while", "until", "!", "{"]);

export function lex(source: string): Lexed {
  const lexer = new Lexer(source, 0);
  lexer.run(0, false);
  return { tokens: lexer.tokens, continuation: lexer.continuation };
}

/** Lexes `source` from `start` to the `)` closing a `$(` (returned), in a nested lexer. */
export function closingParen(source: string, start: number, depth: number): number {
  if (depth > MAX_DEPTH) throw new LexError("unparseable: nesting too deep");
  const lexer = new Lexer(source, depth);
  return lexer.run(start, true);
}

class Lexer implements Scanner {
  tokens: Token[] = [];
  continuation = false;
  private word: Word | undefined;
  private target: Redir | undefined;
  private heredocs: Redir[] = [];
  private parens = 0;
  private cases = 0;

  constructor(
    readonly src: string,
    readonly depth: number,
  ) {}

  /** Lexes from `at`; returns the index of the closing `)` when `inParen`, else the length. */
  run(at: number, inParen: boolean): number {
    const src = this.src;
    let i = at;
    while (i < src.length) {
      const c = src[i]!;
      if (c === "\\" && src[i + 1] === "\n") {
        this.continuation = true;
        i += 2;
      } else if (BLANK.has(c)) {
        this.endWord();
        i++;
      } else if (c === "\n") {
        this.endWord();
        this.push({ kind: "op", op: "\n", start: i, end: i + 1 });
        i = this.readHeredocs(i + 1);
      } else if (c === "#" && !this.word) {
        const end = src.indexOf("\n", i);
        const stop = end < 0 ? src.length : end;
        this.tokens.push({ kind: "comment", start: i, end: stop });
        i = stop;
      } else if (c === ")") {
        this.endWord();
        if (inParen && this.parens === 0 && this.cases === 0) {
          this.finish();
          return i;
        }
        if (this.parens > 0) this.parens--;
        this.push({ kind: "op", op: ")", start: i, end: i + 1 });
        i++;
      } else if (c === "(") {
        i = this.openParen(i);
      } else if ((c === "<" || c === ">") && src[i + 1] === "(") {
        i = this.processSubstitution(i);
      } else if (c === "<" || c === ">" || (c === "&" && src[i + 1] === ">")) {
        i = this.redirect(i);
      } else if (c === ";" || c === "&" || c === "|") {
        this.endWord();
        const op = OPERATORS.find((o) => src.startsWith(o, i))!;
        this.push({ kind: "op", op, start: i, end: i + op.length });
        i += op.length;
      } else {
        i = this.wordCharacter(i);
      }
      // A word's extent grows with each character or part read into it.
      if (this.word) this.word.end = i;
    }
    if (inParen) throw new LexError("unparseable: unclosed $(");
    this.finish();
    return src.length;
  }

  private finish(): void {
    this.endWord();
    if (this.target) throw new LexError("unparseable: redirection without a target");
  }

  private wordCharacter(i: number): number {
    const src = this.src;
    const c = src[i]!;
    const word = this.current(i);
    if (c === "'") {
      const close = src.indexOf("'", i + 1);
      if (close < 0) throw new LexError("unparseable: unbalanced quote");
      this.text(src.slice(i + 1, close), true);
      return close + 1;
    }
    if (c === '"') {
      const read = readDoubleQuoted(this, i + 1);
      word.parts.push(...read.parts);
      return read.end;
    }
    if (c === "\\") {
      // A backslash ending the text escapes whatever follows it (the wrapper's newline).
      if (i + 1 >= src.length) {
        word.parts.push({ kind: "text", text: "\\", quoted: true, escaped: true });
        return i + 1;
      }
      word.parts.push({ kind: "text", text: src[i + 1]!, quoted: true, escaped: true });
      return i + 2;
    }
    if (c === "$" || c === "`") {
      const read = readDollar(this, i, false);
      if (read) {
        word.parts.push(...read.parts);
        return read.end;
      }
    }
    this.text(c, false);
    return i + 1;
  }

  private openParen(i: number): number {
    const src = this.src;
    const word = this.word;
    const prefix = word && plainText(word);
    if (prefix !== undefined && /^[A-Za-z_][A-Za-z0-9_]*\+?=$/.test(prefix)) {
      // NAME=( ... ): an array assignment; its words are read like a $( ) body.
      const close = closingParen(src, i + 1, this.depth + 1);
      word!.parts.push({
        kind: "array",
        raw: src.slice(i, close + 1),
        body: src.slice(i + 1, close),
      });
      return close + 1;
    }
    this.endWord();
    if (src[i + 1] === "(" && this.atCommandStart()) {
      const end = arithmeticEnd(src, i + 2);
      if (end >= 0) {
        this.push({ kind: "arith", start: i, end: end + 2, body: src.slice(i + 2, end) });
        return end + 2;
      }
    }
    this.parens++;
    this.push({ kind: "op", op: "(", start: i, end: i + 1 });
    return i + 1;
  }

  private processSubstitution(i: number): number {
    const close = closingParen(this.src, i + 2, this.depth + 1);
    this.current(i).parts.push({
      kind: "process",
      raw: this.src.slice(i, close + 1),
      body: this.src.slice(i + 2, close),
    });
    return close + 1;
  }

  private redirect(i: number): number {
    const src = this.src;
    let fd = "";
    let start = i;
    const prefix = this.word && plainText(this.word);
    if (prefix !== undefined && /^(?:\d+|\{[A-Za-z_][A-Za-z0-9_]*\})$/.test(prefix)) {
      fd = prefix;
      start = this.word!.start;
      this.word = undefined;
    }
    this.endWord();
    const op = REDIRECTS.find((o) => src.startsWith(o, i))!;
    const redir: Redir = { kind: "redirect", start, end: i + op.length, fd, op };
    this.push(redir);
    this.target = redir;
    return i + op.length;
  }

  /** The word being read, started at `at` when there is none. */
  private current(at: number): Word {
    this.word ??= { kind: "word", start: at, end: at, parts: [] };
    return this.word;
  }

  private text(text: string, quoted: boolean): void {
    const parts = this.word!.parts;
    const last = parts.at(-1);
    if (last?.kind === "text" && last.quoted === quoted && !last.escaped) last.text += text;
    else parts.push({ kind: "text", text, quoted });
  }

  private endWord(): void {
    const word = this.word;
    if (!word) return;
    this.word = undefined;
    const redir = this.target;
    if (redir) {
      this.target = undefined;
      redir.target = word;
      redir.end = word.end;
      if (redir.op === "<<" || redir.op === "<<-") this.heredocs.push(redir);
      return;
    }
    this.push(word);
  }

  private push(token: Token): void {
    if (this.target && token !== this.target)
      throw new LexError("unparseable: redirection without a target");
    if (token.kind === "word") {
      const text = plainText(token);
      const start = this.atCommandStart();
      if (start && text === "case") this.cases++;
      if (text === "esac" && this.cases > 0) this.cases--;
    }
    this.tokens.push(token);
  }

  private atCommandStart(): boolean {
    const last = this.tokens.findLast((t) => t.kind !== "comment");
    if (!last) return true;
    if (last.kind === "op") return last.op !== ")";
    if (last.kind === "word") {
      const text = plainText(last);
      return text !== undefined && (BEFORE_COMMAND.has(text) || text === "for");
    }
    return false;
  }

  /** Reads the bodies of the here-documents started on the line that just ended. */
  private readHeredocs(at: number): number {
    let i = at;
    for (const redir of this.heredocs.splice(0)) {
      const word = redir.target!;
      const quoted = word.parts.some((p) => p.kind !== "text" || p.quoted);
      const delimiter = word.parts.map((p) => (p.kind === "text" ? p.text : p.raw)).join("");
      const start = i;
      const lines: string[] = [];
      while (i < this.src.length) {
        const newline = this.src.indexOf("\n", i);
        const stop = newline < 0 ? this.src.length : newline;
        const line = this.src.slice(i, stop);
        i = newline < 0 ? stop : stop + 1;
        const compared = redir.op === "<<-" ? line.replace(/^\t+/, "") : line;
        if (compared === delimiter) break;
        lines.push(line);
      }
      redir.heredoc = { body: lines.join("\n"), quoted, start, end: i };
    }
    return i;
  }
}
