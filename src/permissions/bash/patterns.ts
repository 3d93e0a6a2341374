/**
 * Bash rule patterns (Claude Code's semantics): `P:*` matches P alone, or P followed by a space
 * or ":" and anything; `*` elsewhere matches any characters within one simple command; otherwise
 * the match is exact. A command is compared as its argv joined by single spaces (assignments not
 * included), case-sensitively. `\*` is a literal star, and a pattern whose only `*` is a
 * trailing ` *` also matches the bare command (`git *` matches `git`).
 */
import { HOLE, holesOf, type SimpleCommand } from "./types.ts";

export function matchesBashPattern(pattern: string, command: SimpleCommand): boolean {
  const text = command.argv.join(" ");
  return alternativesOf(pattern).some((tokens) => holeMatch(tokens, text));
}

/**
 * For deny and ask rules: could the pattern match what the command runs? Text known only at run
 * time (a HOLE in `holes`) may be any text, spaces included, so `rm $FLAGS x` can match
 * `rm -rf *`.
 */
export function couldMatchBashPattern(pattern: string, command: SimpleCommand): boolean {
  const text = holesOf(command).join(" ");
  return alternativesOf(pattern).some((tokens) => holeMatch(tokens, text));
}

// No regular expressions here: `git * * * end` as `^git .* .* .* end$` backtracks over every
// split of a long command (cubic); the matcher below is linear in the command's length.
const compiled = new Map<string, PatternToken[][]>();

function alternativesOf(pattern: string): PatternToken[][] {
  let found = compiled.get(pattern);
  if (!found) {
    found = alternatives(pattern);
    if (compiled.size > 1000) compiled.clear();
    compiled.set(pattern, found);
  }
  return found;
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
 * is carried along the text (a HOLE may stand for any stretch of the pattern), so the time is
 * the text's length times the pattern's, whatever the wildcards.
 */
function holeMatch(pattern: PatternToken[], text: string): boolean {
  const size = pattern.length + 1;
  let reach = new Uint8Array(size);
  let next = new Uint8Array(size);
  const close = (set: Uint8Array): void => {
    for (let i = 0; i < pattern.length; i++) if (set[i] && pattern[i] === STAR) set[i + 1] = 1;
  };
  reach[0] = 1;
  close(reach);
  for (let j = 0; j < text.length; j++) {
    const c = text[j]!;
    next.fill(0);
    let any = false;
    for (let i = 0; i < size; i++) {
      if (!reach[i]) continue;
      if (c === HOLE) {
        next.fill(1, i);
        any = true;
        break;
      }
      const token = pattern[i];
      if (token === STAR) next[i] = 1;
      else if (token === c) next[i + 1] = 1;
      else continue;
      any = true;
    }
    if (!any) return false;
    close(next);
    [reach, next] = [next, reach];
  }
  return reach[pattern.length] === 1;
}
