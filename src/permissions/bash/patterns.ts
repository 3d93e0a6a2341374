/**
 * Bash rule patterns (Claude Code's semantics): `P:*` matches P alone, or P followed by a space
 * or ":" and anything; `*` elsewhere matches any characters within one simple command; otherwise
 * the match is exact. A command is compared as its argv joined by single spaces (assignments not
 * included), case-sensitively. `\*` is a literal star, and a pattern whose only `*` is a
 * trailing ` *` also matches the bare command (`git *` matches `git`).
 */
import { escapeRegExp } from "../rules.ts";
import { HOLE, holesOf, type SimpleCommand } from "./types.ts";

export function matchesBashPattern(pattern: string, command: SimpleCommand): boolean {
  return patternRegExp(pattern).test(command.argv.join(" "));
}

/**
 * For deny and ask rules: could the pattern match what the command runs? Text known only at run
 * time (a HOLE in `holes`) may be any text, spaces included, so `rm $FLAGS x` can match
 * `rm -rf *`.
 */
export function couldMatchBashPattern(pattern: string, command: SimpleCommand): boolean {
  const words = holesOf(command);
  const text = words.join(" ");
  if (!text.includes(HOLE)) return patternRegExp(pattern).test(text);
  return alternatives(pattern).some((tokens) => holeMatch(tokens, text));
}

const ANY = "[\\s\\S]*";

const compiled = new Map<string, RegExp>();

function patternRegExp(pattern: string): RegExp {
  let regexp = compiled.get(pattern);
  if (!regexp) {
    regexp = buildRegExp(pattern);
    if (compiled.size > 1000) compiled.clear();
    compiled.set(pattern, regexp);
  }
  return regexp;
}

function buildRegExp(pattern: string): RegExp {
  const prefix = /^([\s\S]+):\*$/.exec(pattern);
  if (prefix) return new RegExp(`^${globSource(prefix[1]!).source}(?:[ :]${ANY})?$`);
  const { source, wildcards } = globSource(pattern);
  if (wildcards === 1 && source.endsWith(` ${ANY}`))
    return new RegExp(`^${source.slice(0, -ANY.length - 1)}(?: ${ANY})?$`);
  return new RegExp(`^${source}$`);
}

/** Regex source for a rule pattern: unescaped `*` is a wildcard, `\*` and `\\` are literals. */
export function globSource(pattern: string): { source: string; wildcards: number } {
  let source = "";
  let wildcards = 0;
  for (const token of tokens(pattern)) {
    if (token === STAR) {
      source += ANY;
      wildcards++;
    } else source += escapeRegExp(token);
  }
  return { source, wildcards };
}

/** A pattern's wildcard, distinct from every character. */
const STAR = Symbol("*");
type PatternToken = string | typeof STAR;

function tokens(pattern: string): PatternToken[] {
  const out: PatternToken[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    const next = pattern[i + 1];
    if (c === "\\" && (next === "*" || next === "\\")) {
      out.push(next);
      i++;
    } else out.push(c === "*" ? STAR : c);
  }
  return out;
}

/** The pattern's meaning as plain wildcard patterns, one of which must match. */
function alternatives(pattern: string): PatternToken[][] {
  const prefix = /^([\s\S]+):\*$/.exec(pattern);
  if (prefix) {
    const base = tokens(prefix[1]!);
    return [base, [...base, " ", STAR], [...base, ":", STAR]];
  }
  const all = tokens(pattern);
  const stars = all.filter((t) => t === STAR).length;
  if (stars === 1 && all.at(-1) === STAR && all.at(-2) === " ") return [all.slice(0, -2), all];
  return [all];
}

/**
 * Whether some text for each HOLE makes the pattern match: a set of reachable pattern positions
 * is carried along the text (a HOLE may stand for any stretch of the pattern).
 */
function holeMatch(pattern: PatternToken[], text: string): boolean {
  const size = pattern.length + 1;
  let reach = new Uint8Array(size);
  reach[0] = 1;
  const close = (set: Uint8Array): void => {
    for (let i = 0; i < pattern.length; i++) if (set[i] && pattern[i] === STAR) set[i + 1] = 1;
  };
  close(reach);
  for (let j = 0; j < text.length; j++) {
    const c = text[j]!;
    const next = new Uint8Array(size);
    for (let i = 0; i < size; i++) {
      if (!reach[i]) continue;
      if (c === HOLE) {
        next.fill(1, i);
        break;
      }
      const token = pattern[i];
      if (token === STAR) next[i] = 1;
      else if (token === c) next[i + 1] = 1;
    }
    close(next);
    reach = next;
  }
  return reach[pattern.length] === 1;
}
