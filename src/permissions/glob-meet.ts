/**
 * Whether a shell glob (`cat .en[v]`, `cat src/*`) can name a path a gitignore-style rule pattern
 * covers, decided from the two patterns alone: the files that exist when the gate looks are not
 * the files the shell sees when it expands the glob. Both are read over-inclusively, so the
 * answer errs towards "they meet":
 * - case is ignored and a wildcard may match a leading dot (`nocaseglob` and `dotglob` may be on);
 * - a `**` segment in the glob crosses directories (`globstar` may be on);
 * - bracket classes with `[:name:]`, `[=c=]` or `[.c.]` match any character;
 * - the rule covers what is under a path it matches, as the rules do, and a name meets it also
 *   without what some file systems ignore (trailing dots and spaces, a `:stream` suffix).
 * Both sides are cut into path segments (a `**` segment matches any number of them) and each
 * pair of segments is compared as two small automata over characters.
 */

type Token =
  | { kind: "char"; char: string }
  | { kind: "one" }
  | { kind: "star" }
  | { kind: "set"; negated: boolean; ranges: [number, number][]; any: boolean };

/** A path segment's characters, or `**`: any number of whole segments. */
export type Segment = Token[] | typeof GLOBSTAR;

export const GLOBSTAR = Symbol("**");

const CACHE_LIMIT = 1000;
/** No file name is longer (bytes, so characters too): a segment needing more characters names nothing. */
const NAME_MAX = 255;
/** A bracket expression with more ranges than this is read as any character (it bounds the work). */
const MAX_RANGES = 256;
const ruleCache = new Map<string, Segment[]>();

/** Whether the shell glob `glob` (workspace-relative, `/`-separated) can name a path `pattern` covers. */
export function globMeetsPattern(glob: string, pattern: string): boolean {
  let rule = ruleCache.get(pattern);
  if (!rule) {
    rule = ruleSegments(pattern);
    if (ruleCache.size >= CACHE_LIMIT) ruleCache.clear();
    ruleCache.set(pattern, rule);
  }
  let spelled = globCache.get(glob);
  if (!spelled) {
    spelled = globSegments(glob).map(spellings);
    if (globCache.size >= CACHE_LIMIT) globCache.clear();
    globCache.set(glob, spelled);
  }
  return pathsMeet(spelled, rule);
}

// The same glob is compared with every deny and ask pattern and each protected name.
const globCache = new Map<string, Spelled[]>();

/** A shell glob's path segments as written: empty and `.` segments dropped. */
export function globParts(glob: string): string[] {
  const parts = glob
    .normalize("NFC")
    .split("/")
    .filter((part) => part !== "" && part !== ".");
  // `**/**` is `**`: collapsed, so a long run of them costs nothing later.
  return parts.filter((part, k) => !(isGlobstar(part) && k > 0 && isGlobstar(parts[k - 1]!)));
}

function isGlobstar(part: string): boolean {
  return /^\*\*+$/.test(part) || part === "..";
}

/** One part of a shell glob: `**` and `..` (which may climb anywhere) as GLOBSTAR. */
export function globSegment(part: string): Segment {
  return isGlobstar(part) ? GLOBSTAR : tokens(part, false);
}

export function globSegments(glob: string): Segment[] {
  return globParts(glob).map(globSegment);
}

/** Whether the segment can match this one name (a file name, no `/`). */
export function segmentMatches(segment: Segment, name: string): boolean {
  if (segment === GLOBSTAR) return true;
  return segmentsMeet(
    segment,
    [...name.normalize("NFC")].map((char) => ({ kind: "char", char })),
  );
}

/** Whether the segment holds a wildcard (it names files by pattern). */
export function isPattern(segment: Segment): boolean {
  return segment === GLOBSTAR || segment.some((token) => token.kind !== "char");
}

/**
 * A rule pattern (gitignore form, as `workspacePattern` returns it) as segments, with what it
 * covers below a matched path: a pattern without a `/` but a trailing one matches at any depth;
 * a trailing `/` matches directories only, so only what is under them.
 */
function ruleSegments(pattern: string): Segment[] {
  let body = pattern.normalize("NFC").replace(/(?<!\\)\s+$/, "");
  const directoryOnly = body.endsWith("/");
  if (directoryOnly) body = body.slice(0, -1);
  const anchored = body.includes("/");
  if (body.startsWith("/")) body = body.slice(1);
  const segments: Segment[] = anchored ? [] : [GLOBSTAR];
  for (const part of body.split("/")) {
    if (part === "") continue;
    segments.push(/^\*\*+$/.test(part) ? GLOBSTAR : tokens(part, true));
  }
  if (directoryOnly) segments.push([{ kind: "star" }]);
  segments.push(GLOBSTAR);
  return segments;
}

function tokens(text: string, escapes: boolean): Token[] {
  const chars = [...text];
  const out: Token[] = [];
  // A `[` after the last `]` is a plain character: no scan for its end (linear on `[[[[`).
  const lastClose = chars.lastIndexOf("]");
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (escapes && c === "\\" && i + 1 < chars.length) {
      out.push({ kind: "char", char: chars[++i]! });
    } else if (c === "*") {
      if (out.at(-1)?.kind !== "star") out.push({ kind: "star" });
    } else if (c === "?") {
      out.push({ kind: "one" });
    } else if (c === "[" && i < lastClose) {
      const set = bracket(chars, i + 1, escapes);
      if (set) {
        out.push(set.token);
        i = set.end;
      } else out.push({ kind: "char", char: c });
    } else out.push({ kind: "char", char: c });
  }
  return out;
}

/** A bracket expression from just past its `[`; undefined when no `]` closes it (a literal `[`). */
function bracket(
  chars: string[],
  from: number,
  escapes: boolean,
): { token: Token; end: number } | undefined {
  let i = from;
  const negated = chars[i] === "!" || chars[i] === "^";
  if (negated) i++;
  const ranges: [number, number][] = [];
  let any = false;
  let first = true;
  for (; i < chars.length; i++) {
    let c = chars[i]!;
    if (c === "]" && !first) {
      const wide = any || ranges.length > MAX_RANGES;
      return { token: { kind: "set", negated, ranges: wide ? [] : ranges, any: wide }, end: i };
    }
    first = false;
    if (c === "[" && /[:=.]/.test(chars[i + 1] ?? "")) {
      const close = chars.indexOf(`${chars[i + 1]}`, i + 2);
      if (close > 0 && chars[close + 1] === "]") {
        // A character class or collating element: read as any character (over-inclusive).
        any = true;
        i = close + 1;
        continue;
      }
    }
    if (escapes && c === "\\" && i + 1 < chars.length) c = chars[++i]!;
    const low = c.codePointAt(0)!;
    if (chars[i + 1] === "-" && chars[i + 2] !== undefined && chars[i + 2] !== "]") {
      let high = chars[i + 2]!;
      i += 2;
      if (escapes && high === "\\" && i + 1 < chars.length) high = chars[++i]!;
      ranges.push([low, high.codePointAt(0)!]);
    } else ranges.push([low, low]);
  }
  return undefined;
}

/** A glob segment with the lengths of its prefixes that stand for what the rules see of a name. */
type Spelled = { tokens: Token[]; ends: Set<number> } | typeof GLOBSTAR;

/**
 * A glob segment and what the names it matches become once the rules drop what some file systems
 * ignore (paths.ts `pathForms`): cut at a `:`, then trailing dots and spaces gone. Each is a
 * prefix of the segment's tokens (a `*` may hold the cut or the dots), so the lengths say it all.
 */
function spellings(segment: Segment): Spelled {
  if (segment === GLOBSTAR) return GLOBSTAR;
  // A segment too long to be a file name names nothing, however it is spelled.
  if (tooLong(segment)) return { tokens: segment, ends: new Set() };
  const may = (token: Token, c: string) =>
    token.kind !== "char" ? accepts(token, c) : token.char === c;
  const cuts = new Set([segment.length]);
  segment.forEach((token, k) => {
    if (k > 0 && may(token, ":")) cuts.add(token.kind === "star" ? k + 1 : k).add(k);
  });
  const ends = new Set(cuts);
  for (const cut of cuts)
    for (let k = cut - 1; k > 0; k--) {
      const token = segment[k]!;
      if (!may(token, ".") && !may(token, " ")) break;
      if (ends.has(k)) break;
      ends.add(k);
    }
  return { tokens: segment, ends };
}

/** Whether some path both segment lists match (breadth-first over pairs of positions). */
function pathsMeet(a: Spelled[], b: Segment[]): boolean {
  const seen = new Set<number>();
  const width = b.length + 1;
  const queue: [number, number][] = [[0, 0]];
  const push = (i: number, j: number) => {
    const key = i * width + j;
    if (!seen.has(key)) {
      seen.add(key);
      queue.push([i, j]);
    }
  };
  while (queue.length > 0) {
    const [i, j] = queue.pop()!;
    if (i === a.length && j === b.length) return true;
    const x = a[i];
    const y = b[j];
    if (x === GLOBSTAR) {
      push(i + 1, j);
      if (y !== undefined) push(i, j + 1);
    }
    if (y === GLOBSTAR) {
      push(i, j + 1);
      if (x !== undefined) push(i + 1, j);
    }
    if (x !== undefined && y !== undefined && x !== GLOBSTAR && y !== GLOBSTAR)
      if (segmentsMeet(x.tokens, y, x.ends)) push(i + 1, j + 1);
  }
  return false;
}

/** Whether some name both segments match (`a` cut at one of `ends`, when given). */
function segmentsMeet(a: Token[], b: Token[], ends?: Set<number>): boolean {
  if (tooLong(a) || tooLong(b)) return false;
  const seen = new Set<number>();
  const width = b.length + 1;
  const queue: [number, number][] = [[0, 0]];
  const push = (i: number, j: number) => {
    const key = i * width + j;
    if (!seen.has(key)) {
      seen.add(key);
      queue.push([i, j]);
    }
  };
  while (queue.length > 0) {
    const [i, j] = queue.pop()!;
    if (j === b.length && (ends ? ends.has(i) : i === a.length)) return true;
    const x = a[i];
    const y = b[j];
    if (x?.kind === "star") push(i + 1, j);
    if (y?.kind === "star") push(i, j + 1);
    if (x === undefined || y === undefined || (x.kind === "star" && y.kind === "star")) continue;
    if (shareCharacter(x, y)) push(x.kind === "star" ? i : i + 1, y.kind === "star" ? j : j + 1);
  }
  return false;
}

/**
 * Whether one character (never `/`) satisfies both tokens. The accepted sets are unions of
 * ranges (and their other case), so if they meet, they meet at a range's end, just past one, or
 * at a literal: those, in both cases, are the candidates tried.
 */
function shareCharacter(a: Token, b: Token): boolean {
  const candidates = new Set<string>(["a", "\ue000"]);
  for (const token of [a, b]) {
    if (token.kind === "char") for (const v of variants(token.char)) candidates.add(v);
    if (token.kind !== "set") continue;
    for (const [low, high] of token.ranges)
      for (const point of [low - 1, low, high, high + 1])
        if (point >= 0 && point <= 0x10ffff)
          for (const v of variants(String.fromCodePoint(point))) candidates.add(v);
  }
  candidates.delete("/");
  for (const c of candidates) if (accepts(a, c) && accepts(b, c)) return true;
  return false;
}

function accepts(token: Token, c: string): boolean {
  switch (token.kind) {
    case "one":
    case "star":
      return true;
    case "char":
      return fold(token.char) === fold(c);
    case "set": {
      if (token.any) return true;
      const inside = (v: string) =>
        token.ranges.some(([low, high]) => v.codePointAt(0)! >= low && v.codePointAt(0)! <= high);
      // Either case may be the one on disk: a match for any of them counts.
      return variants(c).some((v) => inside(v) !== token.negated);
    }
  }
}

const lengthy = new WeakMap<Token[], boolean>();

/** The segment matches only names longer than any file system allows. */
function tooLong(tokens: Token[]): boolean {
  let answer = lengthy.get(tokens);
  if (answer === undefined) {
    answer = tokens.filter((token) => token.kind !== "star").length > NAME_MAX;
    lengthy.set(tokens, answer);
  }
  return answer;
}

function fold(c: string): string {
  return c.toLowerCase();
}

/** The character and its other cases, each a single code point. */
function variants(c: string): string[] {
  return [...new Set([c, c.toLowerCase(), c.toUpperCase()])].filter((v) => [...v].length === 1);
}
