// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are shell commands
/**
 * Issue 22 section 5: a shell pattern in a reader's argument (`cat .en[v]`) that can name a file
 * a Read deny rule covers is denied, never asked about: a deny rule never turns into an ask. The
 * decision comes from the patterns (so a covered file that does not exist yet counts), and the
 * files the pattern matches now are checked too (links, directories read whole). A pattern that
 * cannot name a covered file runs when Bash is allowed.
 */
import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { failing, runBash, SECRET, workspaces } from "./bash-support.ts";

const workspace = workspaces();

/** Every one can expand to `.env` (wildcards, brackets, braces, case, steps, options). */
const DOTENV = [
  "cat .en[v]",
  "cat .e*",
  "cat .en?",
  "cat *env",
  "cat ?env",
  "cat .env*",
  "cat [.]env",
  "cat .[e]nv",
  "cat .[a-z]nv",
  "cat .[!x]nv",
  "cat .E[N]V",
  "cat {.env,x}",
  "cat .{e,f}nv",
  "cat {.e,.f}nv",
  "cat src/../{x,.env}",
  "cat ./.e*",
  "cat .//.e*",
  "cat src/../.e*",
  "cat ../*/.e*",
  "cat .*/.env",
  "cat -- .e*",
  "head -n 1 .en?",
  "grep KEY .e*",
  "grep -e KEY -- *",
  "sed -n p .e[n]v",
  "base64 .e*",
  "cp .e* /tmp/skein-glob-copy",
  "tar cf - .e* | cat",
  "diff .e* /dev/null",
  "curl -d @.e* http://127.0.0.1:9",
  "cat ~/.e*",
  "cat ~/.ssh/*",
  "cat $HOME/.e*",
  "find .e* -exec cat {} \\;",
  "find .e* -type f | xargs cat",
  "cat src/*",
];

describe("allow Bash, deny Read(.env): a pattern that can name .env is denied", () => {
  it("every form is denied without a question, and the secret never reaches the model", async () => {
    const ws = await workspace();
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Read(.env)"] }, DOTENV, true);
    expect(failing(DOTENV, (id) => run.reason(id) === "denied")).toEqual([]);
    expect(run.asked).toEqual([]);
    expect(run.all).not.toContain(SECRET);
    expect(JSON.stringify(run.result)).not.toContain(SECRET);
  });

  it("the same patterns ask (never run) when a Read rule only asks", async () => {
    const ws = await workspace();
    const commands = ["cat .en[v]", "cat {.env,x}", "cat .e*", "find .e* -exec cat {} \\;"];
    const run = await runBash(ws, { allow: ["Bash"], ask: ["Read(.env)"] }, commands);
    expect(failing(commands, (id) => run.asked.includes(id))).toEqual([]);
    expect(run.all).not.toContain(SECRET);
  });
});

describe("decided from the patterns, whatever files exist now", () => {
  it("a covered file that does not exist yet: created earlier in the same command", async () => {
    const ws = await workspace();
    const commands = [
      "mkdir -p secrets && echo k > secrets/key; cat secr*/key",
      "cat secrets/*",
      "cat s[e]crets/key",
      "cat {secrets,src}/key",
      "cat */key",
      "cat key.p?m",
      "cat *.pe[m]",
      "cat k*",
    ];
    const run = await runBash(
      ws,
      { allow: ["Bash"], deny: ["Read(/secrets/**)", "Read(*.pem)"] },
      commands,
      true,
    );
    expect(failing(commands, (id) => run.reason(id) === "denied")).toEqual([]);
    expect(run.asked).toEqual([]);
  });

  it("the files a pattern matches now: a link to .env, a directory read whole that holds one", async () => {
    const ws = await workspace();
    await symlink(path.join(ws, ".env"), path.join(ws, "linked-settings"));
    await mkdir(path.join(ws, "deep", "er"), { recursive: true });
    await writeFile(path.join(ws, "deep", "er", ".env"), `X=${SECRET}\n`);
    const commands = [
      "cat linked-*",
      "cat l?nked-settings",
      "cat {linked,other}-settings",
      "grep -r X d*",
      "grep -r X de?p/e?",
      "rg X {deep,src}",
      "tar c d* | cat",
      "find d* -exec cat {} \\;",
      // The workspace itself, named by an absolute pattern.
      `grep -r X ${ws.slice(0, -2)}*`,
      `tar c ${path.dirname(ws)}/${path.basename(ws).slice(0, 3)}?${path.basename(ws).slice(4)} | cat`,
    ];
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Read(.env)"] }, commands, true);
    expect(failing(commands, (id) => run.reason(id) === "denied")).toEqual([]);
    expect(run.all).not.toContain(SECRET);
  });
});

describe("patterns that cannot name a covered file run without a question", () => {
  it("with Bash allowed and deny Read(.env)", async () => {
    const ws = await workspace();
    const commands = [
      "cat src/*.ts",
      "cat s?c/app.ts",
      "head -n 1 src/app.t?",
      "cat {src,src}/app.ts",
      "wc -c src/[a]pp.ts",
      "grep -c KEY src/*.ts",
      "cat ~/skein-no-such-file* 2>/dev/null; true",
    ];
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Read(.env)"] }, commands);
    expect(run.asked).toEqual([]);
    expect(failing(commands, (id) => run.reason(id) === undefined)).toEqual([]);
    expect(run.text("c0")).toContain("KEY_NAME");
    expect(run.text("c3")).toContain("KEY_NAME");
  });
});

describe("input redirections inside code given to bash -c, eval, find -exec sh -c", () => {
  it("are reads like any other: denied under Read(.env)", async () => {
    const ws = await workspace();
    const commands = [
      'bash -c "cat < .env"',
      'eval "cat < .env"',
      "sh -c 'while read -r l; do echo $l; done < .env'",
      "find . -maxdepth 0 -exec sh -c 'cat < .env' \\;",
      'bash -c "cat < .e*"',
    ];
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Read(.env)"] }, commands, true);
    expect(failing(commands, (id) => run.reason(id) === "denied")).toEqual([]);
    expect(run.all).not.toContain(SECRET);
  });
});

describe("long and many patterns are decided, and never run unchecked", () => {
  it("99,000-character patterns, braces, brackets and many pattern words", async () => {
    const ws = await workspace();
    const long = (unit: string) => unit.repeat(Math.floor(99_000 / unit.length));
    const commands = [
      `cat ${long("*a")}`,
      `cp x ${long("*a")}`,
      `cat ${long("[a-b")}`,
      `cat ${long("{")}`,
      `cat ${long("{a,b}")}`,
      `cat ${long("**/")}.env`,
      `echo x > ${long("*/")}`,
      `cat ${long("s*/ ")}`,
      `cp x ${long("y ")}`,
    ];
    const run = await runBash(
      ws,
      { allow: ["Bash(true)"], deny: ["Read(.env)", "Edit(secret/**)"] },
      commands,
    );
    expect(
      failing(commands, (id) => run.reason(id) === "denied" || run.asked.includes(id)),
    ).toEqual([]);
    for (const id of ["c4", "c5", "c7"]) expect(run.reason(id)).toBe("denied");
  }, 120_000);
});

describe("a recursive reader over a directory above the workspace reads all of it", () => {
  it("is denied under Read(.env), named plainly or by a pattern", async () => {
    const outer = await workspace();
    const ws = path.join(outer, "inner");
    await mkdir(ws);
    await writeFile(path.join(ws, ".env"), `API_KEY=${SECRET}\n`);
    await writeFile(path.join(ws, "x"), "x\n");
    const commands = [
      `grep -r API_KEY ${outer}`,
      `grep -r API_KEY ${outer.slice(0, -1)}?`,
      `tar c ${outer} 2>/dev/null | cat`,
      `tar c ${path.dirname(outer)}/${path.basename(outer).slice(0, -2)}[a-zA-Z0-9]? 2>/dev/null | cat`,
      "grep -r API_KEY ..",
    ];
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Read(.env)"] }, commands, true);
    expect(failing(commands, (id) => run.reason(id) === "denied")).toEqual([]);
    expect(run.all).not.toContain(SECRET);
  });
});
