// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are shell commands
/**
 * The Bash recogniser against real bash parsers (issue 8 section 2): thousands of seeded random
 * commands mixing words, quotes, separators, redirections, expansions, escapes and comments.
 * For every command the recogniser accepts as simple, the argument lists, assignments and
 * redirections must equal those of `unbash` (a maintained bash parser), every non-blank
 * character must belong to a word, separator, redirection or comment (nothing silently
 * ignored), and for a sample, bash itself must run exactly those argument lists. Nothing,
 * accepted or not, makes the analysis throw.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parse } from "unbash";
import { describe, expect, it } from "vitest";
import { analyzeCommand, denyView, type SimpleCommand } from "../../src/permissions/bash/index.ts";
import { lex } from "../../src/permissions/bash/lexer.ts";
import { useTempDir } from "../support/temp.ts";
import { commandsOf, generateCommand, PROGRAMS, random } from "./bash-oracle-support.ts";

const COUNT = 4000;
const BASH_SAMPLE = 200;
/** The program the bash sample runs between two commands. */
const MARK = "next-command";

describe("the recogniser agrees with bash parsers on what it accepts", () => {
  const next = random(0x5eed_0008);
  const commands = Array.from({ length: COUNT }, () => generateCommand(next));
  const accepted = commands.flatMap((command) => {
    const analysis = analyzeCommand(command);
    return analysis.kind === "simple" ? [{ command, simple: analysis.commands }] : [];
  });

  it("accepts a fair share of the generated commands and rejects the rest", () => {
    expect(accepted.length).toBeGreaterThan(COUNT / 5);
    expect(accepted.length).toBeLessThan(COUNT * 0.8);
  });

  it("reads every command, accepted or not, and random bytes of shell syntax, without throwing", () => {
    const garbage = random(99);
    const alphabet = "a $(){}[]'\"`\\;&|<>#\n*?!~=-09@%^";
    const noise = Array.from({ length: 3000 }, () =>
      Array.from({ length: Math.floor(garbage() * 30) }, () =>
        alphabet.charAt(Math.floor(garbage() * alphabet.length)),
      ).join(""),
    );
    const thrown = [...commands, ...noise].flatMap((command) => {
      try {
        denyView(analyzeCommand(command));
        return [];
      } catch (error) {
        return [{ command, error: String(error) }];
      }
    });
    expect(thrown.slice(0, 5)).toEqual([]);
  });

  it("reads the same words, assignments and redirections as unbash", () => {
    const mismatches = accepted.flatMap(({ command, simple }) => {
      const oracle = commandsOf(parse(command));
      const ours = simple.map(shape);
      return JSON.stringify(oracle) === JSON.stringify(ours) ? [] : [{ command, ours, oracle }];
    });
    expect(mismatches.slice(0, 5)).toEqual([]);
  });

  it("leaves no non-blank character of an accepted command outside a token", () => {
    const uncovered = accepted.flatMap(({ command }) => {
      const covered = new Uint8Array(command.length);
      for (const token of lex(command).tokens) {
        covered.fill(1, token.start, token.end);
        if (token.kind === "redirect" && token.heredoc)
          covered.fill(1, token.heredoc.start, token.heredoc.end);
      }
      const at = [...command].findIndex((c, i) => !covered[i] && c !== " " && c !== "\t");
      return at < 0 ? [] : [{ command, at, character: command[at] }];
    });
    expect(uncovered.slice(0, 5)).toEqual([]);
  });

  describe("bash runs exactly the argument lists the recogniser read", () => {
    const dir = useTempDir("skein-oracle-");

    it(`for a sample of ${BASH_SAMPLE} accepted commands`, () => {
      const bin = path.join(dir, "bin");
      const work = path.join(dir, "work");
      spawnSync("mkdir", ["-p", bin, work]);
      writeFileSync(path.join(work, "in.txt"), "input\n");
      // Every program appends its name and arguments, each ended by \x1f, then \x1e, in one
      // printf (one write), so the two sides of a pipe never interleave their records.
      for (const name of [...PROGRAMS, MARK]) {
        const file = path.join(bin, name);
        writeFileSync(
          file,
          '#!/bin/sh\nR=$(printf \'\\036\')\nprintf \'%s\\037\' "${0##*/}" "$@" "$R" >> "$DUMP"\n',
        );
        chmodSync(file, 0o755);
      }
      const dump = path.join(dir, "dump");
      writeFileSync(dump, "");
      const runnable = accepted.filter(
        ({ command, simple }) =>
          !/\|\||~/.test(command) && simple.every((c) => PROGRAMS.includes(c.argv[0] ?? "")),
      );
      const sample = runnable.slice(0, BASH_SAMPLE);
      expect(sample.length).toBeGreaterThan(BASH_SAMPLE / 2);
      // One bash for the whole sample: each command in a subshell, then a marker program.
      const script = sample.map(({ command }) => `(\n${command}\n)\n${MARK}\n`).join("");
      spawnSync("bash", ["-c", script], {
        cwd: work,
        env: { PATH: `${bin}:/usr/bin:/bin`, DUMP: dump, HOME: dir },
        stdio: "ignore",
        timeout: 60_000,
      });
      const runs: string[][][] = [[]];
      for (const record of readFileSync(dump, "utf8").split("\x1e\x1f").filter(Boolean)) {
        const argv = record.split("\x1f").slice(0, -1);
        if (argv[0] === MARK) runs.push([]);
        else runs.at(-1)!.push(argv);
      }
      const mismatches = sample.flatMap(({ command, simple }, i) => {
        const ran = runs[i] ?? [];
        // Globs in the sample match no file, so bash passes them as written, like argv.
        const expected = simple.map((c) => c.argv);
        const same = JSON.stringify(sorted(ran)) === JSON.stringify(sorted(expected));
        return same ? [] : [{ command, ran, expected }];
      });
      expect(mismatches.slice(0, 5)).toEqual([]);
    });
  });
});

/** What the recogniser read, in the shape `commandsOf` gives for unbash's tree. */
function shape(command: SimpleCommand) {
  return {
    assignments: command.assignments,
    argv: command.argv,
    redirects: (command.redirects ?? []).map((r) => [r.op, r.target]),
  };
}

function sorted(lists: string[][]): string[] {
  return lists.map((list) => JSON.stringify(list)).sort();
}
