/**
 * The linear matcher of path rules (src/permissions/path-glob.ts) against the `ignore` library
 * as the oracle: a seeded random property test over patterns built from gitignore's syntax and
 * paths built from names those patterns could meet, in both case modes; then the hostile shapes
 * that made the library's single regular expression take minutes, which must answer at once.
 */
import ignore from "ignore";
import { describe, expect, it } from "vitest";
import { compilePathPattern, linearPathMatcher } from "../../src/permissions/path-glob.ts";

const PATTERN_TOKENS = [
  "a",
  "b",
  "A",
  "x",
  ".",
  "-",
  "é",
  "*",
  "?",
  "**",
  "***",
  "/",
  "[ab]",
  "[!a]",
  "[a-c]",
  "[[:alpha:]]",
  "[:alpha:]",
  "\\*",
  "*a",
  "a*",
  " ",
  "\\ ",
  "#",
  "!",
];
const NAMES = [
  "a",
  "b",
  "ab",
  "ba",
  "aa",
  "x",
  "A",
  ".a",
  "a.b",
  "é",
  "*",
  "x y",
  "...",
  "skein-segment",
  "-",
];

/** A small seeded generator (LCG), so a failure names a case that can be rerun. */
function random(seed: number) {
  let state = seed;
  return (n: number) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return Math.floor(state / 65536) % n;
  };
}

function pathOf(pick: (n: number) => number, maxSegments: number): string {
  const parts = Array.from({ length: 1 + pick(maxSegments) }, () => NAMES[pick(NAMES.length)]!);
  return parts.join("/") + (pick(5) === 0 ? "/" : "");
}

describe("path rules match as the ignore library does", () => {
  it("agrees with the library on 60,000 random pattern and path pairs", () => {
    const pick = random(20240611);
    let compared = 0;
    let walked = 0;
    const disagreements: string[] = [];
    for (let i = 0; i < 5_000 && disagreements.length < 5; i += 1) {
      const pattern = Array.from(
        { length: 1 + pick(7) },
        () => PATTERN_TOKENS[pick(PATTERN_TOKENS.length)]!,
      ).join("");
      for (const ignorecase of [true, false]) {
        const oracle = ignore({ ignorecase }).add(pattern);
        const linear = linearPathMatcher(pattern, ignorecase);
        const combined = compilePathPattern(pattern, ignorecase);
        if (linear) walked += 1;
        for (let k = 0; k < 6; k += 1) {
          const path = pathOf(pick, 9);
          const expected = oracle.ignores(path);
          compared += 1;
          for (const [name, matcher] of [
            ["walk", linear],
            ["combined", combined],
          ] as const) {
            if (matcher && matcher(path) !== expected)
              disagreements.push(
                `${name}: ${JSON.stringify(pattern)} vs ${JSON.stringify(path)} (ignorecase ${ignorecase}): library ${expected}`,
              );
          }
        }
      }
    }
    expect(disagreements).toEqual([]);
    expect(compared).toBe(60_000);
    // Most patterns take the linear walk (the rest go to the library whole).
    expect(walked).toBeGreaterThan(7_000);
  });

  it("agrees on deeper paths, where the walk replaces the library", () => {
    const pick = random(7);
    const patterns = ["**/x/**/y", "x/**/a*/**", "**/*.env", "a/**/b/", "**/[ab]/**/x", "/x/**"];
    for (const pattern of patterns) {
      for (const ignorecase of [true, false]) {
        const oracle = ignore({ ignorecase }).add(pattern);
        const combined = compilePathPattern(pattern, ignorecase);
        for (let k = 0; k < 200; k += 1) {
          // 40 to 60 segments: past the shortcut, still quick for the library.
          const names = ["x", "y", "a", "b", "ab", "q.env", "A"];
          const parts = Array.from({ length: 40 + pick(21) }, () => names[pick(names.length)]!);
          const path = parts.join("/");
          expect(combined(path), `${pattern} vs ${path}`).toBe(oracle.ignores(path));
        }
      }
    }
  });

  it("answers at once for the shapes that made the library backtrack for minutes", () => {
    const deep = `${"x/".repeat(50_000)}z`;
    const cases: [string, string, boolean][] = [
      ["**/x/**/x/**/y", deep, false],
      ["**/x/**/x/**/z", deep, true],
      ["x/**/x/**/x/**/y", `${"x/".repeat(2_000)}y`, true],
      ["**/x/**/y/**", deep, false],
      ["**/*.env", `${"a/".repeat(50_000)}b.env`, true],
      ["a*b*c*d*e", "abcd".repeat(25_000), false],
      ["a*b*c*d*e", `${"abcd/".repeat(20_000)}abcde`, true],
      [`${"*a".repeat(12)}*c`, "a".repeat(100_000), false],
    ];
    for (const [pattern, path, expected] of cases)
      for (const ignorecase of [true, false])
        expect(compilePathPattern(pattern, ignorecase)(path), pattern).toBe(expected);
  });
});
