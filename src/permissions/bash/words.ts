/**
 * What one lexed word means: its text after quote removal, and which of it bash only knows when
 * the command runs (expansions, substitutions, and unquoted globs, braces and tildes, which may
 * turn one word into any number of words).
 */
import type { Part, Word } from "./lexer.ts";
import { HOLE } from "./types.ts";

export interface WordInfo {
  /** Quote-removed text; expansions as written. */
  text: string;
  /** `text` with every run-time part a HOLE; the whole word one HOLE for a glob, brace or tilde. */
  holes: string;
  /** Holds an expansion, a substitution or `$'...'`. */
  dynamic: boolean;
  /** Unquoted `*`, `?`, or `[` with a `]` after it: a pattern bash expands to file names. */
  glob: boolean;
  /** An unquoted brace expansion such as `{a,b}` or `{1..3}`. */
  brace: boolean;
  /** An unquoted leading `~`. */
  tilde: boolean;
}

export function wordInfo(word: Word): WordInfo {
  let text = "";
  let holes = "";
  let mask = "";
  let dynamic = false;
  for (const part of word.parts) {
    if (part.kind === "text") {
      text += part.text;
      holes += part.text;
      // Quoted characters are inert: mask them so only unquoted syntax is seen below.
      mask += part.quoted ? "_".repeat(part.text.length) : part.text;
    } else {
      dynamic = true;
      text += part.raw;
      holes += HOLE;
      mask += "_";
    }
  }
  // A `[` with a `]` after it; by index, as `/\[[\s\S]*\]/` scans to the end from every `[`.
  const open = mask.indexOf("[");
  const glob = /[*?]/.test(mask) || (open >= 0 && mask.lastIndexOf("]") > open);
  const brace = /\{[^{}]*(?:,|\.\.)[^{}]*\}/.test(mask);
  const tilde = mask.startsWith("~");
  return { text, holes: glob || brace || tilde ? HOLE : holes, dynamic, glob, brace, tilde };
}

/** A plain word: nothing in it is known only at run time. */
export function isStatic(info: WordInfo): boolean {
  return !info.dynamic && !info.glob && !info.brace && !info.tilde;
}

/** The substitution-like parts of a word, nested ones included by the caller. */
export function expansionParts(word: Word): Exclude<Part, { kind: "text" }>[] {
  return word.parts.filter((p): p is Exclude<Part, { kind: "text" }> => p.kind !== "text");
}

/** Only an unquoted `NAME=` prefix makes an assignment; `"A=1" cmd` runs a program named `A=1`. */
export function isAssignmentWord(word: Word): boolean {
  const first = word.parts[0];
  return first?.kind === "text" && !first.quoted && /^[A-Za-z_][A-Za-z0-9_]*\+?=/.test(first.text);
}
