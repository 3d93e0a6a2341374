/**
 * `analyzeCommand`: a command is "simple" when it lies in a strict subset of bash that the
 * permission gate may auto-allow; anything else is "complex", never auto-allowed, and read over
 * its whole structure (substitutions, loops, groups, functions) for deny, ask and read rules.
 */

import { expansionsIn } from "./expansions.ts";
import {
  LexError,
  type Lexed,
  lex,
  type Part,
  plainText,
  type Redir,
  type Token,
  type Word,
} from "./lexer.ts";
import { simpleReason } from "./simple.ts";
import { type Piece, structure } from "./structure.ts";
import { ASSIGNMENT, type CommandAnalysis, type Redirect, type SimpleCommand } from "./types.ts";
import { isStatic, wordInfo } from "./words.ts";

/** Longer commands are not read (unparseable): reading must stay cheap. */
const MAX_LENGTH = 100_000;

/** Substitutions nested deeper than this are not read: anything could run there. */
const MAX_DEPTH = 8;

export function analyzeCommand(command: string): CommandAnalysis {
  return analyzeAt(command, 0);
}

export function analyzeAt(command: string, depth: number): CommandAnalysis {
  const unreadable =
    controlCharacterReason(command) ??
    (command.length > MAX_LENGTH
      ? `unparseable: longer than ${MAX_LENGTH} characters`
      : undefined) ??
    (depth > MAX_DEPTH ? "unparseable: substitutions nested too deep" : undefined);
  if (unreadable) return unparseable(unreadable, command);
  let lexed: Lexed;
  try {
    lexed = lex(command);
  } catch (error) {
    if (error instanceof LexError) return unparseable(error.message, command);
    throw error;
  }
  const reason = simpleReason(lexed);
  const parsed = structure(lexed.tokens);
  if (reason === undefined && parsed.unparseable === undefined)
    return { kind: "simple", commands: parsed.pieces.map(toSimpleCommand) };
  const facts = new Facts(depth);
  facts.take(
    parsed.pieces,
    parsed.other,
    parsed.arithmetic.map((a) => a.body),
  );
  const opaque = parsed.unparseable ?? parsed.risky ?? facts.opaque;
  return {
    kind: "complex",
    reason: reason ?? parsed.unparseable!,
    candidates: facts.commands,
    ...(opaque ? { opaque } : {}),
  };
}

function unparseable(reason: string, command: string): CommandAnalysis {
  return { kind: "complex", reason, candidates: candidateCommands(command), opaque: reason };
}

/** The commands and the first reason anything could run, gathered over nested substitutions. */
class Facts {
  commands: SimpleCommand[] = [];
  opaque: string | undefined;

  constructor(private readonly depth: number) {}

  take(pieces: Piece[], other: Word[], arithmetic: string[]): void {
    for (const piece of pieces) {
      const command = toSimpleCommand(piece);
      this.commands.push(command);
      const program = piece.words[0];
      if (program && !isStatic(wordInfo(program)))
        this.opaque ??= `the program ${JSON.stringify(command.argv[0])} is not a plain word`;
      for (const word of [...piece.assignments, ...piece.words]) this.word(word);
      for (const redir of piece.redirects) {
        if (redir.target) this.word(redir.target);
        if (redir.heredoc && !redir.heredoc.quoted) this.scan(redir.heredoc.body);
      }
    }
    for (const word of other) this.word(word);
    for (const body of arithmetic) this.arithmetic(body);
  }

  private word(word: Word): void {
    this.parts(word.parts);
  }

  private parts(parts: Part[]): void {
    for (const part of parts) {
      switch (part.kind) {
        case "command":
        case "process":
          this.nested(part.body);
          break;
        case "arith":
          this.arithmetic(part.body);
          break;
        case "param":
          if (part.risky) this.opaque ??= part.risky;
          for (const text of part.nested) this.scan(text);
          break;
        case "array":
          this.arrayWords(part.body);
          break;
        default:
          break;
      }
    }
  }

  /** The expansions in text read as if double-quoted; text that does not lex could run anything. */
  private scan(text: string): void {
    try {
      this.parts(expansionsIn(text, this.depth));
    } catch (error) {
      if (!(error instanceof LexError)) throw error;
      this.opaque ??= error.message;
    }
  }

  private arithmetic(body: string): void {
    if (/[A-Za-z_]/.test(body)) this.opaque ??= "arithmetic evaluates variables as code";
    this.scan(body);
  }

  private arrayWords(body: string): void {
    let tokens: Token[];
    try {
      tokens = lex(body).tokens;
    } catch {
      this.opaque ??= "unparseable: array assignment";
      return;
    }
    for (const token of tokens) if (token.kind === "word") this.word(token);
  }

  private nested(body: string): void {
    const inner = analyzeAt(body, this.depth + 1);
    if (inner.kind === "simple") this.commands.push(...inner.commands);
    else {
      this.commands.push(...inner.candidates);
      if (inner.opaque) this.opaque ??= inner.opaque;
    }
  }
}

export function toSimpleCommand(piece: Piece): SimpleCommand {
  const infos = piece.words.map(wordInfo);
  const command: SimpleCommand = {
    assignments: piece.assignments.map((w) => wordInfo(w).text),
    argv: infos.map((i) => i.text),
  };
  if (infos.some((i) => i.holes !== i.text)) command.holes = infos.map((i) => i.holes);
  if (piece.redirects.length > 0) command.redirects = piece.redirects.map(toRedirect);
  if (piece.piped) command.piped = true;
  return command;
}

function toRedirect(redir: Redir): Redirect {
  const op = `${redir.fd}${redir.op}`;
  if (redir.heredoc) {
    const dynamic = !redir.heredoc.quoted && /[$`]/.test(redir.heredoc.body);
    return { op, kind: "text", target: redir.heredoc.body, ...(dynamic ? { dynamic } : {}) };
  }
  const info = wordInfo(redir.target!);
  const dynamic = !isStatic(info);
  const base = { op, target: info.text, ...(dynamic ? { dynamic } : {}) } as const;
  if (redir.op === "<<<") return { ...base, kind: "text" };
  if (redir.op === "<") return { ...base, kind: "read" };
  if (redir.op === "<>") return { ...base, kind: "readwrite" };
  if (
    (redir.op === ">&" || redir.op === "<&") &&
    /^(?:\d+|-)$/.test(plainText(redir.target!) ?? "")
  )
    return { ...base, kind: "duplicate" };
  return { ...base, kind: redir.op === "<&" ? "read" : "write" };
}

/** CR is a separator to some parsers and not to others (C9); other control bytes are as murky. */
function controlCharacterReason(text: string): string | undefined {
  for (const character of text) {
    const code = character.charCodeAt(0);
    if (code === 0) return "NUL character";
    if (code === 13) return "carriage return";
    if ((code < 32 && code !== 9 && code !== 10) || code === 127) return "control character";
  }
  return undefined;
}

// Text that could not be read at all is split over-inclusively: every operator-like character
// ends a piece, quotes notwithstanding, so `$(`, `<(` contents become pieces of their own.
const CANDIDATE_BOUNDARY = /\$\(|[;&|()`<>{}\n\r\0]/;

function candidateCommands(raw: string): SimpleCommand[] {
  return raw
    .split(CANDIDATE_BOUNDARY)
    .map(looseCommand)
    .filter((c) => c.assignments.length > 0 || c.argv.length > 0);
}

function looseCommand(piece: string): SimpleCommand {
  // Best-effort quote removal: `r''m` and `r\m` both run `rm`.
  const words = piece
    .split(/\s+/)
    .map((word) => word.replace(/['"\\]/g, ""))
    .filter(Boolean);
  let programAt = 0;
  while (programAt < words.length && ASSIGNMENT.test(words[programAt]!)) programAt++;
  return { assignments: words.slice(0, programAt), argv: words.slice(programAt) };
}
