// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are shell commands
/**
 * Issue 8 section 2, reads (RELIABILITY C14): with `deny: ["Read(.env)"]` and Bash allowed, no
 * recognised way of reading `.env` prints it when no sandbox masks it (no preset). Where the gate
 * cannot know what a known reader reads, the deny rule means deny; a recursive reader is judged
 * by the files under its directory; an input redirection is a read of its target. Interpreters
 * (`python -c`) stay the sandbox's job: test/attacks/sandbox.test.ts covers them.
 */
import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { failing, runBash, SECRET, workspaces } from "./bash-support.ts";

const workspace = workspaces();

const READS = [
  "cat ${PWD}/.env",
  "cat `echo .env`",
  'cat "$(echo .env)"',
  "cat < .env",
  "cat <.env",
  'while read -r l; do echo "$l"; done < .env',
  "exec 3< .env; cat <&3",
  "grep -r KEY .",
  "grep -R KEY .",
  "grep -rn KEY",
  "grep --recursive KEY .",
  "rg KEY",
  "tar c . | cat",
  "tar cf - . | tar xOf -",
  "cp -r . ../copied && cat ../copied/.env",
  "find . -name '.e*' -exec cat {} \\;",
  "find . -type f | xargs cat",
  "ls -A | xargs cat",
  "c=cat; $c .env",
  "cat .e''nv",
  "cat ./src/../.env",
  "head -c 100 .env",
  "sed -n p .env",
  "awk 1 .env",
  "base64 .env",
  "grep -f .env src/app.ts; cat -- .env",
  "zip -r - . | cat",
  "cat $(ls -A)",
  "source .env; echo $API_KEY",
  "git grep KEY",
];

describe("allow Bash, deny Read(.env): reading .env through Bash is denied", () => {
  it("every form is denied without a question and the secret never reaches the model", async () => {
    const ws = await workspace();
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Read(.env)"] }, READS, true);
    expect(failing(READS, (id) => run.reason(id) === "denied")).toEqual([]);
    expect(run.asked).toEqual([]);
    expect(run.all).not.toContain(SECRET);
    expect(JSON.stringify(run.result)).not.toContain(SECRET);
  });

  it("a recursive reader over a directory holding a denied file, and a link to one", async () => {
    const ws = await workspace();
    await mkdir(path.join(ws, "deep", "er"), { recursive: true });
    await writeFile(path.join(ws, "deep", "er", ".env"), `X=${SECRET}\n`);
    await mkdir(path.join(ws, "linked"));
    await symlink(path.join(ws, ".env"), path.join(ws, "linked", "settings"));
    const commands = [
      "grep -r X deep",
      "rg X linked",
      "cp -a linked /tmp/skein-out-x",
      "diff -r deep src",
      "cat linked/settings",
      "cat < linked/settings",
    ];
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Read(.env)"] }, commands, true);
    expect(failing(commands, (id) => run.reason(id) === "denied")).toEqual([]);
    expect(run.all).not.toContain(SECRET);
  });

  it("readers of other files, and recursive readers of directories without one, still run", async () => {
    const ws = await workspace();
    const commands = [
      "grep -r KEY_NAME src",
      "cat src/app.ts",
      "cat < src/app.ts",
      "echo ${PWD}/.env",
    ];
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Read(.env)"] }, commands);
    expect(failing(commands, (id) => run.reason(id) === undefined)).toEqual([]);
    expect(run.text("c0")).toContain("KEY_NAME");
    expect(run.text("c2")).toContain("KEY_NAME");
  });
});

describe("allow Bash, ask Read(.env): unknown reads ask", () => {
  it("asks, and the secret stays out when the answer is no", async () => {
    const ws = await workspace();
    const commands = ["cat ${PWD}/.env", "cat < .env", "grep -r KEY .", "ls | xargs cat"];
    const run = await runBash(ws, { allow: ["Bash"], ask: ["Read(.env)"] }, commands);
    expect(failing(commands, (id) => run.asked.includes(id))).toEqual([]);
    expect(run.all).not.toContain(SECRET);
  });
});
