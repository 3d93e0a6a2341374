/**
 * C12: credentials in the host environment never reach a Bash command's output, preset or not.
 * C14: a `Read(.env)` deny rule holds for Read, for recognised file commands in Bash (even with
 * an approval handler that says yes), for Grep, Glob and LS. (That the sandbox masks the file
 * from an arbitrary interpreter under the hardened preset is in sandbox.test.ts.)
 */
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { useEnv } from "../support/env.ts";
import {
  type Arena,
  approveAll,
  attack,
  type Call,
  expectDenied,
  expectError,
  expectOk,
  makeArena,
  PRESETS,
  requireBubblewrap,
  token,
  turn,
} from "./helpers.ts";

const CREDENTIALS = [
  "ANTHROPIC_API_KEY",
  "OPENAI_API_KEY",
  "DEEPSEEK_API_KEY",
  "GITHUB_TOKEN",
  "MY_SECRET",
  "ANTHROPIC_AUTH_TOKEN",
  "OPENAI_ORG_SECRET",
  "AWS_SECRET_ACCESS_KEY",
] as const;

describe.each(PRESETS)("C12: credentials in the environment ($label)", ({ preset }) => {
  let arena: Arena;
  const values = new Map<string, string>();
  const setEnv = useEnv();
  beforeAll(() => {
    arena = makeArena("env");
  });
  afterAll(() => arena.cleanup());
  beforeEach(() => {
    if (preset) requireBubblewrap();
    for (const name of CREDENTIALS) {
      const value = token(`CRED-${name}`);
      values.set(name, value);
      setEnv(name, value);
    }
  });

  it("env, printenv, /proc/self/environ and echo $VAR show no credential", async () => {
    const run = await attack(arena, {
      preset,
      approval: approveAll,
      secrets: [...values.values()],
      turns: [
        turn(["env", "Bash", { command: "env" }]),
        turn(["printenv", "Bash", { command: "printenv" }]),
        turn(["environ", "Bash", { command: "cat /proc/self/environ | tr '\\0' '\\n'" }]),
        turn([
          "echo",
          "Bash",
          { command: "echo $ANTHROPIC_API_KEY $OPENAI_API_KEY $DEEPSEEK_API_KEY x" },
        ]),
        turn(["echo2", "Bash", { command: 'echo "$GITHUB_TOKEN$MY_SECRET" y' }]),
        turn(["parent", "Bash", { command: "cat /proc/$PPID/environ | tr '\\0' '\\n'; true" }]),
        turn(["bg", "Bash", { command: "env", run_in_background: true }]),
        turn(["bgout", "BashOutput", { bash_id: "bash_1" }]),
      ],
    });
    // The commands ran (the check is not passing because nothing ran).
    expectOk(run, "env", /PATH=/);
    expectOk(run, "printenv", /PATH=/);
    expectOk(run, "environ", /PATH=/);
    expectOk(run, "echo", /x/);
    expectOk(run, "echo2", /y/);
    expect(run.text("env")).not.toMatch(
      /^(ANTHROPIC_API_KEY|OPENAI_API_KEY|DEEPSEEK_API_KEY|GITHUB_TOKEN|MY_SECRET)=/m,
    );
    // The secrets checked by attack() include every value set above.
  });
});

describe.each(PRESETS)("C14: deny Read(.env) ($label)", ({ preset }) => {
  let arena: Arena;
  let secret: string;
  let nested: string;
  beforeAll(() => {
    arena = makeArena("dotenv");
    secret = token("ENV-SECRET");
    nested = token("NESTED-ENV-SECRET");
    arena.put(".env", `API_KEY=${secret}\nOTHER_KEY=${secret}\n`);
    arena.put("services/api/.env", `DB_KEY=${nested}\n`);
    arena.put("config.txt", "PUBLIC_KEY=visible\n");
    arena.secrets.push(secret, nested);
  });
  afterAll(() => arena.cleanup());

  const permissions = { deny: ["Read(.env)"] };

  it("Read of .env (any spelling) is denied", async () => {
    const run = await attack(arena, {
      preset,
      permissions,
      turns: [
        turn(
          ["r1", "Read", { file_path: ".env" }],
          ["r2", "Read", { file_path: "./.env" }],
          ["r3", "Read", { file_path: "services/api/.env" }],
          ["r4", "Read", { file_path: path.join(arena.work, ".env") }],
          ["r5", "Read", { file_path: "src/../.env" }],
          ["r6", "Read", { file_path: ".ENV" }],
        ),
      ],
    });
    for (const id of ["r1", "r2", "r3", "r4", "r5"]) expectDenied(run, id);
    expectError(run, "r6");
  });

  it("a symlink to .env does not dodge the rule", async () => {
    arena.link(`innocent-${preset ?? "none"}.txt`, ".env");
    const run = await attack(arena, {
      preset,
      permissions,
      turns: [turn(["r1", "Read", { file_path: `innocent-${preset ?? "none"}.txt` }])],
    });
    expectDenied(run, "r1");
  });

  it("Bash cat .env and other file commands are denied, even with an approval that says yes", async () => {
    const commands = [
      "cat .env",
      "cat ./.env",
      "head -n 5 services/api/.env",
      "grep KEY .env",
      "cp .env leaked.txt",
      "base64 .env",
      "cat config.txt .env",
      "sed -n p .env",
    ];
    const run = await attack(arena, {
      preset,
      permissions,
      approval: approveAll,
      turns: [turn(...commands.map((command, i): Call => [`b${i}`, "Bash", { command }]))],
    });
    for (let i = 0; i < commands.length; i++) expectDenied(run, `b${i}`);
  });

  it("Grep, Glob and LS never show .env or its content", async () => {
    const run = await attack(arena, {
      preset,
      permissions,
      turns: [
        turn(
          ["g1", "Grep", { pattern: "KEY", path: ".", output_mode: "content" }],
          ["g2", "Grep", { pattern: "KEY", path: "." }],
          ["g3", "Grep", { pattern: "KEY", output_mode: "count" }],
          ["g4", "Grep", { pattern: "ENV-SECRET", "-i": true, output_mode: "content" }],
          ["g5", "Grep", { pattern: "KEY", path: "services", output_mode: "content" }],
          ["g6", "Grep", { pattern: "KEY", glob: ".env", output_mode: "content" }],
          ["g7", "Grep", { pattern: "KEY", path: ".env", output_mode: "content" }],
          ["gl1", "Glob", { pattern: "**/.env" }],
          ["gl2", "Glob", { pattern: "**/*" }],
          ["gl3", "Glob", { pattern: ".env*" }],
          ["l1", "LS", { path: "." }],
          ["l2", "LS", { path: "services/api" }],
        ),
      ],
    });
    expectOk(run, "g1", /config\.txt/);
    expectOk(run, "g2", /config\.txt/);
    for (const id of ["g1", "g2", "g3", "g4", "g5", "g6", "gl1", "gl2", "gl3", "l1", "l2"]) {
      expect(run.text(id), id).not.toMatch(/(^|\/|\s)\.env\b/m);
    }
    expectDenied(run, "g7");
  });
});
