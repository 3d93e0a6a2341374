/**
 * Unit level of issue 22 section 5 (reads): whether a shell glob can name a path a rule pattern
 * covers is decided from the two patterns. It must never miss a path both match (else a deny
 * would be skipped): checked here against a brute-force search over every short path, with the
 * rules' own matcher (gitignore semantics, any case) and a plain reading of the glob.
 */
import { describe, expect, it } from "vitest";
import { globMeetsPattern } from "../../src/permissions/glob-meet.ts";
import { pathMatcher } from "../../src/permissions/paths.ts";
import { random } from "./bash-oracle-support.ts";

/** The glob as bash reads it for file names, with `nocaseglob`, `dotglob` and `globstar` on. */
function globRegExp(glob: string): RegExp {
  const segment = (part: string) => {
    let source = "";
    for (let i = 0; i < part.length; i++) {
      const c = part[i]!;
      if (c === "*") source += "[^/]*";
      else if (c === "?") source += "[^/]";
      else if (c === "[") {
        const close = part.indexOf("]", i + 2);
        const body = part.slice(i + 1, close);
        source += body.startsWith("!") ? `[^/${body.slice(1)}]` : `[${body}]`;
        i = close;
      } else source += c === "." ? "\\." : c;
    }
    return source;
  };
  let source = "";
  let first = true;
  let star = false;
  for (const part of glob.split("/").filter((p) => p !== "")) {
    if (part === "**") {
      star = true;
      continue;
    }
    if (star) source += first ? "(?:[^/]+/)*" : "/(?:[^/]+/)*";
    else if (!first) source += "/";
    source += segment(part);
    first = false;
    star = false;
  }
  if (star) source += first ? "(?:[^/]+(?:/[^/]+)*)?" : "(?:/[^/]+)*";
  return new RegExp(`^${source}$`, "i");
}

const NAMES = ["e", "n", ".", "v", "E", ":", " "];
/** Every path of one or two segments, each of one or two characters from NAMES. */
const PATHS = (() => {
  const segments: string[] = [];
  for (const a of NAMES) {
    segments.push(a);
    for (const b of NAMES) segments.push(a + b);
  }
  const paths = [...segments];
  for (const a of segments) for (const b of segments) paths.push(`${a}/${b}`);
  return paths.filter((p) => !p.split("/").some((s) => s === "." || s === ".."));
})();

const GLOB_PIECES = ["e", "n", ".", "v", ":", " ", "*", "?", "[en]", "[!e]", "[.]"];
const RULE_PIECES = ["e", "n", ".", "v", "*", "?", "[en]", "[!e]"];

function segment(next: () => number, pieces: string[]): string {
  const length = 1 + Math.floor(next() * 2);
  let out = "";
  for (let i = 0; i < length; i++) out += pieces[Math.floor(next() * pieces.length)]!;
  return out;
}

function glob(next: () => number): string {
  const depth = 1 + Math.floor(next() * 2);
  const parts: string[] = [];
  for (let i = 0; i < depth; i++) parts.push(next() < 0.15 ? "**" : segment(next, GLOB_PIECES));
  return parts.join("/");
}

function rule(next: () => number): string {
  const depth = 1 + Math.floor(next() * 2);
  const parts: string[] = [];
  for (let i = 0; i < depth; i++) parts.push(next() < 0.15 ? "**" : segment(next, RULE_PIECES));
  const body = parts.join("/");
  const anchor = next() < 0.3 ? "/" : "";
  const trail = next() < 0.2 ? "/" : "";
  return `${anchor}${body}${trail}`;
}

describe("globMeetsPattern", () => {
  it.each([
    [".en[v]", ".env", true],
    [".e*", ".env", true],
    ["*env", ".env", true],
    ["..?env", ".env", false],
    ["*.ts", ".env", false],
    ["src/*", ".env", true],
    ["src/*.ts", ".env", false],
    ["[!.]env", ".env", false],
    [".E[N]V", ".env", true],
    ["conf*/s*", "/config/secret.json", true],
    ["*", "/config/secret.json", false],
    ["b/*", "/a/**", false],
    ["a/b/*", "/a/**", true],
    ["secrets", "secrets/", false],
    ["secrets/*", "secrets/", true],
    ["*.p[a-z]m", "*.pem", true],
    ["[[:alpha:]]env", "xenv", true],
    ["abc", "a\\*c", false],
    ["a?c", "a\\*c", true],
  ])("%j against the rule %j: %s", (g, pattern, expected) => {
    expect(globMeetsPattern(g, pattern)).toBe(expected);
  });

  it("never misses a path both match (1,000 random pairs, every short path)", () => {
    const next = random(22_5);
    const missed: string[] = [];
    for (let n = 0; n < 1000; n++) {
      const g = glob(next);
      const r = rule(next);
      const globMatches = globRegExp(g);
      const covered = pathMatcher(r, "deny");
      const witness = PATHS.find((p) => globMatches.test(p) && covered(p));
      if (witness !== undefined && !globMeetsPattern(g, r))
        missed.push(`${g} vs ${r} (both match ${witness})`);
    }
    expect(missed).toEqual([]);
  });
});
