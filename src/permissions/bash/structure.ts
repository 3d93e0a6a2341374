/**
 * The simple commands inside any bash token stream, compound syntax included: the commands of
 * `if`/`while`/`for`/`case` bodies, groups, subshells and function bodies, with the words that
 * are not commands (loop lists, case subjects and patterns, `[[ ]]` operands) kept aside for
 * their substitutions. Over-inclusive by design: it feeds deny, ask and read rules, never allow.
 */
import type { ArithCommand, Redir, Token, Word } from "./lexer.ts";
import { plainText } from "./lexer.ts";
import { list } from "./types.ts";
import { isAssignmentWord } from "./words.ts";

export interface Piece {
  assignments: Word[];
  words: Word[];
  redirects: Redir[];
  piped: boolean;
}

export interface Structure {
  pieces: Piece[];
  /** Words that are not commands but whose substitutions run. */
  other: Word[];
  arithmetic: ArithCommand[];
  /** The first compound construct, for the "why not simple" reason. */
  compound?: string;
  /** Why bash would evaluate text from a variable as code (`[[ $a -eq 1 ]]`). */
  risky?: string;
  /** What bash would reject, or what we do not read: then anything could run. */
  unparseable?: string;
}

/** Reserved words (bash, plus a few zsh ones): as a program they start syntax. */
export const KEYWORDS = new Set(
  list(
    "if then else elif fi for while until case esac in do done function select coproc time " +
      "[[ ]] { } ! repeat foreach end nocorrect noglob",
  ),
);

const OPENERS: Record<string, string> = { if: "fi", case: "esac", do: "done", "{": "}", "(": ")" };
const CLOSERS = new Set(Object.values(OPENERS));
const SEPARATORS = new Set([";", "\n", "&", "&&", "||", "|", "|&"]);
const ARITHMETIC_TESTS = /^-(?:eq|ne|lt|le|gt|ge)$/;

export function structure(tokens: Token[]): Structure {
  const out: Structure = { pieces: [], other: [], arithmetic: [] };
  const fail = (reason: string): void => {
    out.unparseable ??= `unparseable: ${reason}`;
  };
  const opened: string[] = [];
  let piece = fresh(false);
  let expect = true; // the next word is in command position
  let content = false; // something since the last separator
  let piped = false;
  let mode:
    | "for-name"
    | "for-in"
    | "for-list"
    | "case-subject"
    | "case-in"
    | "pattern"
    | "cond"
    | "name"
    | undefined;
  const flush = (): void => {
    if (piece.words.length + piece.assignments.length + piece.redirects.length > 0)
      out.pieces.push(piece);
    piece = fresh(piped);
  };
  const tokensLeft = tokens.filter((t) => t.kind !== "comment");
  for (let k = 0; k < tokensLeft.length; k++) {
    const token = tokensLeft[k]!;
    if (token.kind === "arith") {
      out.compound ??= "arithmetic";
      out.arithmetic.push(token);
      content = true;
      expect = false;
      continue;
    }
    if (token.kind === "redirect") {
      if (mode === "cond") {
        if (token.target) out.other.push(token.target);
      } else piece.redirects.push(token);
      content = true;
      continue;
    }
    if (token.kind === "op") {
      const op = token.op;
      if (mode === "cond") {
        if (op === "\n" || op === ";" || op === "&") fail("unclosed [[");
        continue;
      }
      if (mode === "pattern") {
        if (op === ")") {
          mode = undefined;
          expect = true;
          content = false;
        } else if (op !== "|" && op !== "(" && op !== "\n") fail(`"${op}" in a case pattern`);
        continue;
      }
      flush();
      if (SEPARATORS.has(op)) {
        const listEnd = mode?.startsWith("for") && (op === ";" || op === "\n");
        if (op !== "\n" && !content && !listEnd) fail("empty command between separators");
        if (listEnd) mode = undefined;
        piped = op === "|" || op === "|&";
        piece.piped = piped;
        expect = true;
        content = false;
        continue;
      }
      piped = false;
      piece.piped = false;
      if (op === ";;" || op === ";&" || op === ";;&") {
        if (opened.at(-1) !== "esac") fail("empty command between separators");
        mode = "pattern";
        content = false;
        continue;
      }
      if (op === "(") {
        const next = tokensLeft[k + 1];
        const last = out.pieces.at(-1);
        if (!expect && next?.kind === "op" && next.op === ")" && last?.words.length === 1) {
          // `name ()`: a function definition; the name is no command.
          out.pieces.pop();
          out.compound ??= "function definition";
          k++;
          expect = true;
          continue;
        }
        if (!expect) fail('unexpected "("');
        out.compound ??= "subshell";
        opened.push(")");
        continue;
      }
      // ")"
      if (opened.pop() !== ")") fail('unexpected ")"');
      content = true;
      expect = false;
      continue;
    }
    // A word.
    const text = plainText(token);
    switch (mode) {
      case "cond":
        if (text === "]]") {
          mode = undefined;
          content = true;
        } else {
          out.other.push(token);
          if (text !== undefined && ARITHMETIC_TESTS.test(text))
            out.risky ??= `[[ ${text} ]] evaluates variables as arithmetic`;
        }
        continue;
      case "case-subject":
        out.other.push(token);
        mode = "case-in";
        continue;
      case "case-in":
        if (text !== "in") fail('case without "in"');
        mode = "pattern";
        continue;
      case "pattern":
        if (text === "esac") {
          if (opened.pop() !== "esac") fail('unexpected "esac"');
          mode = undefined;
          content = true;
          expect = false;
        } else out.other.push(token);
        continue;
      case "for-name":
        mode = "for-in";
        continue;
      case "for-in":
        if (text === "in") {
          mode = "for-list";
          continue;
        }
        mode = undefined;
        break;
      case "for-list":
        out.other.push(token);
        continue;
      case "name":
        mode = undefined;
        if (isParens(tokensLeft, k + 1)) k += 2;
        expect = true;
        continue;
    }
    if (expect && piece.words.length === 0 && text !== undefined && KEYWORDS.has(text)) {
      out.compound ??= text === "{" || text === "}" ? "brace" : `shell keyword "${text}"`;
      if (CLOSERS.has(text)) {
        if (opened.pop() !== text) fail(`unexpected "${text}"`);
        content = true;
        expect = false;
        continue;
      }
      const closer = OPENERS[text];
      if (closer) opened.push(closer);
      if (text === "case") mode = "case-subject";
      else if (text === "for" || text === "select") mode = "for-name";
      else if (text === "[[") mode = "cond";
      else if (text === "function") mode = "name";
      else if (text === "coproc" && isCoprocName(tokensLeft, k + 1)) k++;
      else if (text === "time" && plainTextOf(tokensLeft[k + 1]) === "-p") k++;
      else if (!list("then do else elif if while until ! { time coproc").includes(text))
        fail(`"${text}" is not supported here`);
      content = mode === "cond";
      expect = mode === undefined;
      continue;
    }
    if (expect && piece.words.length === 0 && isAssignmentWord(token)) {
      piece.assignments.push(token);
      content = true;
      continue;
    }
    piece.words.push(token);
    expect = false;
    content = true;
  }
  flush();
  if (mode !== undefined || opened.length > 0) fail("an unfinished compound command");
  const last = tokensLeft.at(-1);
  if (last?.kind === "op" && ["&&", "||", "|", "|&"].includes(last.op)) fail("trailing separator");
  return out;
}

function fresh(piped: boolean): Piece {
  return { assignments: [], words: [], redirects: [], piped };
}

function plainTextOf(token: Token | undefined): string | undefined {
  return token?.kind === "word" ? plainText(token) : undefined;
}

function isParens(tokens: Token[], at: number): boolean {
  const [open, close] = [tokens[at], tokens[at + 1]];
  return open?.kind === "op" && open.op === "(" && close?.kind === "op" && close.op === ")";
}

/** `coproc NAME { ...; }` or `coproc NAME ( ... )`: NAME names the coprocess, it is no command. */
function isCoprocName(tokens: Token[], at: number): boolean {
  const after = tokens[at + 1];
  if (tokens[at]?.kind !== "word" || !after) return false;
  return (after.kind === "op" && after.op === "(") || plainTextOf(after) === "{";
}
