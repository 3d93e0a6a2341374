/**
 * Bash permission rules end to end (C7-C11): compound commands, substitutions, parser
 * differentials and environment tricks are never auto-allowed by `Bash(npm run test:*)` (the run
 * pauses for approval and the side effect never happens); deny rules see through wrappers, and
 * what cannot be parsed is denied when a deny rule could match, never downgraded to ask.
 */
import * as fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type Arena,
  approveAll,
  attack,
  type Call,
  exists,
  expectDenied,
  expectPausedForApproval,
  makeArena,
  PRESETS,
  requireBubblewrap,
  turn,
} from "./helpers.ts";

/** Each would create `pwned` in the workspace (or `outside/x`) if it ran. */
const ASKED: [label: string, command: string][] = [
  // C7 compound commands
  ["; separator", "npm run test:x; touch pwned"],
  ["&&", "npm run test:x && touch pwned"],
  ["||", "npm run test:x || touch pwned"],
  ["pipe into sh", "npm run test:x | sh"],
  ["|& into sh", "npm run test:x |& sh"],
  ["background &", "npm run test:x & touch pwned"],
  ["newline", "npm run test:x\ntouch pwned"],
  // C8 substitutions
  ["$(...)", "npm run test:x $(touch pwned)"],
  ["--x=$(...)", "npm run test:x --x=$(touch pwned)"],
  ["backticks", "npm run test:x `touch pwned`"],
  ["<(...)", "npm run test:x <(touch pwned)"],
  [">(...)", "npm run test:x >(touch pwned)"],
  ['"$(...)" in double quotes', 'npm run test:x "$(touch pwned)"'],
  // Redirections
  ["> ../outside/x", "npm run test:x > ../outside/x"],
  [">> pwned", "npm run test:x >> pwned"],
  ["2> pwned", "npm run test:x 2> pwned"],
  // C9 parser differentials
  ["CR separator", "npm run test:x\rtouch pwned"],
  ["line continuation", "npm run test:x \\\n&& touch pwned"],
  ["heredoc with a substitution", "npm run test:x <<EOF\n$(touch pwned)\nEOF"],
  ["heredoc with an embedded delimiter", "npm run test:x <<'EOF'\nEOF\ntouch pwned\nEOF"],
  ["zsh [[ =~ $(...) ]]", "[[ x =~ $(touch pwned) ]] && npm run test:x"],
  ["subshell", "(touch pwned) && npm run test:x"],
  ["brace group", "{ touch pwned; } && npm run test:x"],
  ["ANSI-C quoting", "npm run test:x $'\\n'touch pwned"],
  ["NUL byte", "npm run test:x\u0000; touch pwned"],
  // C11 environment tricks
  ["PATH=.", "PATH=. npm run test:x"],
  ["PATH=./bin:$PATH", "PATH=./bin:$PATH npm run test:x"],
  ["NODE_OPTIONS", "NODE_OPTIONS=--require=./x.js npm run test:x"],
  ["LD_PRELOAD", "LD_PRELOAD=./evil.so npm run test:x"],
  ["export then an allowed command", "export FOO=$(touch pwned); npm run test:x"],
  ["BASH_ENV", "BASH_ENV=./x.sh npm run test:x"],
];

describe.each(PRESETS)("Bash rules ($label)", ({ preset }) => {
  let arena: Arena;
  let pwned: string;
  beforeAll(() => {
    arena = makeArena("commands");
    pwned = path.join(arena.work, "pwned");
    // Side effects for the environment tricks, should anything run them.
    arena.put("npm", "#!/bin/sh\ntouch pwned\n");
    fs.chmodSync(path.join(arena.work, "npm"), 0o755);
    arena.put("bin/npm", "#!/bin/sh\ntouch pwned\n");
    fs.chmodSync(path.join(arena.work, "bin/npm"), 0o755);
    arena.put("x.js", "require('node:fs').writeFileSync('pwned', '');\n");
    arena.put("x.sh", "touch pwned\n");
  });
  afterAll(() => arena.cleanup());
  afterEach(() => fs.rmSync(pwned, { force: true }));

  describe("C7-C9, C11: never auto-allowed by Bash(npm run test:*)", () => {
    it.each(ASKED)("%s", async (_label, command) => {
      const run = await attack(arena, {
        preset,
        permissions: { allow: ["Bash(npm run test:*)"] },
        turns: [turn(["b1", "Bash", { command }])],
      });
      expectPausedForApproval(run, "b1");
      expect(exists(pwned), "the command ran").toBe(false);
    });

    it("60 chained allowed no-ops then a command: over the parser's limit, asks", async () => {
      const run = await attack(arena, {
        preset,
        permissions: { allow: ["Bash(npm run test:*)", "Bash(true)", "Bash(touch pwned)"] },
        turns: [
          turn([
            "b1",
            "Bash",
            { command: `${Array(60).fill("true").join(" && ")} && touch pwned` },
          ]),
        ],
      });
      expectPausedForApproval(run, "b1");
      expect(exists(pwned)).toBe(false);
    });

    it("control: what the rules do allow runs without asking (the marker works)", async () => {
      if (preset) requireBubblewrap();
      const run = await attack(arena, {
        preset,
        permissions: { allow: ["Bash(npm run test:*)", "Bash(true)", "Bash(touch pwned)"] },
        turns: [
          turn([
            "b1",
            "Bash",
            { command: `${Array(10).fill("true").join(" && ")} && touch pwned` },
          ]),
          turn(["b2", "Bash", { command: "npm run test:x" }]),
        ],
      });
      expect(run.result.subtype).toBe("success");
      expect(run.call("b1").isError, run.text("b1")).toBe(false);
      expect(exists(pwned)).toBe(true);
      // It ran (no package.json here, so npm fails), and did not run the workspace's fake npm.
      expect(run.call("b2").isError).toBe(true);
      expect(run.text("b2")).not.toMatch(/approval/i);
    });

    it("a comment is no command: what follows # never runs, so the allowed part runs alone", async () => {
      if (preset) requireBubblewrap();
      const run = await attack(arena, {
        preset,
        permissions: { allow: ["Bash(npm run test:*)"] },
        turns: [turn(["b1", "Bash", { command: "npm run test:x # && touch pwned" }])],
      });
      expect(run.result.subtype).toBe("success");
      expect(run.text("b1")).not.toMatch(/approval/i);
      expect(exists(pwned), "the comment ran").toBe(false);
    });

    it("C10: allow Bash(find *) does not cover -exec, -execdir, -ok or -delete", async () => {
      for (const command of [
        "find . -name x.js -exec touch pwned \\;",
        "find . -name x.js -execdir touch pwned ;",
        "find . -name nothing -delete",
        "find . -ok touch pwned \\;",
        "find . -fprint pwned",
      ]) {
        const run = await attack(arena, {
          preset,
          permissions: { allow: ["Bash(find *)"] },
          turns: [turn(["b1", "Bash", { command }])],
        });
        expectPausedForApproval(run, "b1");
      }
      expect(exists(pwned)).toBe(false);
    });
  });

  describe("C10: deny Bash(rm *) sees through wrappers, with an approval that says yes", () => {
    const DENIED: [label: string, command: string][] = [
      ["plain", "rm x-plain"],
      ["timeout", "timeout 5 rm -rf x-timeout"],
      ["nice", "nice rm x-nice"],
      ["nice -n", "nice -n 5 rm x-nice-n"],
      ["env", "env rm x-env"],
      ["env with an assignment", "env FOO=1 rm x-env-assign"],
      ["sudo", "sudo rm x-sudo"],
      ["sudo -u", "sudo -u root rm x-sudo-u"],
      ["xargs from a pipe", "echo x-xargs | xargs rm"],
      ["xargs with arguments", "xargs rm x-xargs-args"],
      ["/bin/rm", "/bin/rm x-bin"],
      ["./ path", "/usr/bin/../../bin/rm x-dotdot"],
      ["bash -c", "bash -c 'rm x-bash'"],
      ["sh -c", 'sh -c "rm x-sh"'],
      ["assignment prefix", "FOO=1 rm x-assign"],
      ["after an allowed command", "ls && rm x-after"],
      ["quoted program", "'rm' x-quoted"],
      ["escaped program", "r\\m x-escaped"],
      ["nested wrappers", "sudo env nice timeout 5 rm x-nested"],
      ["in a substitution", "echo $(rm x-subst)"],
      ["in a subshell", "(rm x-subshell)"],
      ["find -exec", "find . -name x-find -exec rm {} \\;"],
      ["watch", "watch -n 1 rm x-watch"],
    ];

    it("every form is denied and nothing is removed", async () => {
      const files = DENIED.map(([, command]) => /x-[a-z-]+/.exec(command)![0]);
      for (const file of files) arena.put(file, "keep me\n");
      const run = await attack(arena, {
        preset,
        approval: approveAll,
        permissions: { deny: ["Bash(rm *)"] },
        turns: [turn(...DENIED.map(([label, command]): Call => [label, "Bash", { command }]))],
      });
      const notDenied = DENIED.filter(([label]) => {
        const call = run.calls.get(label);
        return (call?.result.details as { reason?: unknown } | undefined)?.reason !== "denied";
      }).map(([label, command]) => `${label}: ${command}`);
      expect(notDenied, "commands that were not denied").toEqual([]);
      for (const [label] of DENIED) expectDenied(run, label);
      for (const file of files) expect(exists(path.join(arena.work, file)), file).toBe(true);
    });

    it("git log &&& rm -rf / (unparseable) is denied, not asked", async () => {
      // No approval handler: a downgrade to ask would pause the run instead.
      const run = await attack(arena, {
        preset,
        permissions: { deny: ["Bash(rm *)"] },
        turns: [
          turn(["b1", "Bash", { command: "git log &&& rm -rf /" }]),
          turn(["b2", "Bash", { command: "git log; rm -rf ./x-unclosed '" }]),
          turn(["b3", "Bash", { command: "$(rm -rf ./x-top)" }]),
        ],
      });
      expectDenied(run, "b1");
      expectDenied(run, "b2");
      expectDenied(run, "b3");
    });

    it("Bash(npx *) is flagged as allowing anything", async () => {
      const warnings: { name: string; code?: string; message: string }[] = [];
      const listener = (warning: Error & { code?: string }) => warnings.push(warning);
      process.on("warning", listener);
      try {
        await attack(arena, {
          preset,
          permissions: { allow: ["Bash(npx *)"] },
          turns: [],
        });
        await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.off("warning", listener);
      }
      expect(warnings.map((w) => w.code)).toContain("SKEIN_BROAD_ALLOW_RULE");
    });
  });
});
