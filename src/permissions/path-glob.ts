import { createRequire } from "node:module";
import type { Ignore } from "ignore";

type IgnoreFactory = typeof import("ignore");
let ignoreFactory: IgnoreFactory | undefined;

/**
 * The `ignore` library, required by the first pattern compiled rather than by `import("skein")`
 * (an agent without path rules never needs it), and through require: the package's ESM build
 * costs several MB more than its CommonJS one.
 */
const ignore: IgnoreFactory = ((options) => {
  ignoreFactory ??= createRequire(import.meta.url)("ignore") as IgnoreFactory;
  return ignoreFactory(options);
}) as IgnoreFactory;

/**
 * One gitignore pattern, matched against workspace-relative paths in time linear in the path's
 * segments. The `ignore` library compiles a whole pattern to one regular expression, and a
 * pattern with several `**` (`**\/x/**\/y/**`) backtracks over every way to split a deep path
 * among them: a 1,000-character path of `x/` segments took it 20 s, a 4,000-character one
 * longer than anyone waits, and that on the event loop, in the permission gate.
 *
 * So the pattern is cut at its `**` segments into chunks of plain segments, and the path is
 * walked once, chunk after chunk, keeping the set of positions each prefix of the pattern can
 * reach (the `**` between chunks make that a set, never a search). Whether a chunk matches the
 * segments at one position is still the library's answer (an anchored pattern of its own, tested
 * against just those segments), so `*`, `?`, brackets, escapes and case folding keep exactly its
 * meaning; a chunk has no `**`, and the library matches those in linear time. A pattern that
 * cannot be cut safely (a `/` inside brackets or escaped, empty segments, a comment, trailing
 * spaces, since the library trims them) goes to the library whole, as before.
 *
 * Gitignore semantics, as the library's: a pattern with no `/` (other than a trailing one) matches
 * at any depth; a trailing `/` matches directories only (the parents of a path); a trailing `/**`
 * matches what is inside, not the directory itself; a pattern covers everything under a
 * directory it matches.
 */
export function compilePathPattern(
  pattern: string,
  ignorecase: boolean,
): (path: string) => boolean {
  const whole = ignore({ ignorecase }).add(pattern);
  const plan = cut(pattern);
  const linear = plan && walker(plan, ignorecase);
  if (!plan || !linear) return (path) => whole.ignores(path);
  // With at most one `**` after the first part, the library's own expression backtracks over
  // at most (segments)^3 splits: on a short path that is less work than the walk.
  const inner = plan.parts.filter((part, i) => part === GLOBSTAR && i > 0).length;
  return (path) =>
    inner <= 1 && path.length <= SHORT_PATH && segmentCount(path) <= SHORT_SEGMENTS
      ? whole.ignores(path)
      : linear(path);
}

/** The walk alone, for any path (undefined for a pattern that cannot be cut); tests compare it. */
export function linearPathMatcher(
  pattern: string,
  ignorecase: boolean,
): ((path: string) => boolean) | undefined {
  const plan = cut(pattern);
  return plan && walker(plan, ignorecase);
}

function walker(plan: Plan, ignorecase: boolean): (path: string) => boolean {
  const parts = plan.parts.map((part) =>
    part === GLOBSTAR ? part : chunkMatcher(part, ignorecase),
  );
  return (path) => {
    const isDirectory = path.endsWith("/");
    const segments = (isDirectory ? path.slice(0, -1) : path).split("/");
    const n = segments.length;
    // Where the pattern so far can end: exactly after these many segments, or (after a `**`)
    // after any number from `from` on.
    let at: number[] = [0];
    let from = -1;
    for (let p = 0; p < parts.length; p += 1) {
      const part = parts[p]!;
      if (part === GLOBSTAR) {
        // Zero or more whole segments; a final `**` one or more (`a/**` is not `a` itself).
        const first = from >= 0 ? from : at[0];
        if (first === undefined) return false;
        from = first + (p === parts.length - 1 ? 1 : 0);
        at = [];
        continue;
      }
      const next: number[] = [];
      const test = (i: number) => {
        if (i + part.size <= n && part.matches(segments, i)) next.push(i + part.size);
      };
      if (from >= 0) for (let i = from; i + part.size <= n; i += 1) test(i);
      else for (const i of at) test(i);
      at = next;
      from = -1;
    }
    // The path itself, or a directory above it (always a directory).
    const fits = (j: number) => j >= 1 && j <= n && (j < n || !plan.directoryOnly || isDirectory);
    if (from >= 0) return fits(Math.max(from, 1));
    return at.some(fits);
  };
}

const GLOBSTAR = Symbol("**");
/** Paths this short go to the library whole (see above). */
const SHORT_PATH = 1024;
const SHORT_SEGMENTS = 32;

function segmentCount(path: string): number {
  let count = 1;
  for (let at = path.indexOf("/"); at !== -1; at = path.indexOf("/", at + 1)) count += 1;
  return count;
}
/** A segment name no pattern part is tested against: it only makes the tested path relative. */
const LEAD = "skein-segment";
/** Answers a chunk keeps before its caches are renewed (the library's never shrinks). */
const CACHE_LIMIT = 10_000;

interface Chunk {
  size: number;
  matches(segments: string[], at: number): boolean;
}

/**
 * Whether the chunk's segments match `size` segments from `at`: an anchored pattern of its own,
 * behind a segment name the pattern does not test, so the tested path is always a relative one
 * (`...` alone would not be). Answers are cached by the segments tested (a tree's paths share
 * most of them); the cache, and the library's own, is renewed when it grows large.
 */
function chunkMatcher(segments: string[], ignorecase: boolean): Chunk {
  const source = `/${LEAD}/${segments.join("/")}`;
  const size = segments.length;
  let rules: Ignore = ignore({ ignorecase }).add(source);
  let cache = new Map<string, boolean>();
  return {
    size,
    matches(path, at) {
      const tested = size === 1 ? path[at]! : path.slice(at, at + size).join("/");
      let answer = cache.get(tested);
      if (answer === undefined) {
        if (cache.size >= CACHE_LIMIT) {
          cache = new Map();
          rules = ignore({ ignorecase }).add(source);
        }
        answer = rules.ignores(`${LEAD}/${tested}`);
        cache.set(tested, answer);
      }
      return answer;
    },
  };
}

/**
 * The pattern as chunks of plain segments and `**`, or undefined when it must be matched whole.
 * A `/` at the start or in the middle anchors it at the root; otherwise it matches at any depth.
 */
interface Plan {
  parts: (string[] | typeof GLOBSTAR)[];
  directoryOnly: boolean;
}

function cut(pattern: string): Plan | undefined {
  if (
    pattern === "" ||
    /^[#\\!]/.test(pattern) ||
    /\s(?:\/|$)/.test(pattern) ||
    pattern.includes("\\/") ||
    /\[[^\]]*\//.test(pattern)
  )
    return undefined;
  const directoryOnly = pattern.endsWith("/");
  let body = directoryOnly ? pattern.slice(0, -1) : pattern;
  const anchored = body.includes("/");
  if (body.startsWith("/")) body = body.slice(1);
  const segments = body.split("/");
  if (segments.some((segment) => segment === "" || segment === "." || segment === ".."))
    return undefined;
  const parts: (string[] | typeof GLOBSTAR)[] = anchored ? [] : [GLOBSTAR];
  for (const segment of segments) {
    const last = parts.at(-1);
    if (/^\*{2,}$/.test(segment)) {
      if (last !== GLOBSTAR) parts.push(GLOBSTAR);
    } else if (Array.isArray(last)) last.push(segment);
    else parts.push([segment]);
  }
  return { parts, directoryOnly };
}
