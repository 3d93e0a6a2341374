// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are shell commands
/**
 * Issue 22 section 5: with `allow: ["Bash"]` the gate does not ask about Bash commands on its own
 * account: a redirection outside the workspace runs as `cp` to the same place does. Deny rules
 * still deny, for redirections and recognised writers alike (`cp`, `tee`, `dd of=`...); ask rules
 * the user wrote and writes into protected paths still ask, whichever of the two writes. Under a
 * narrower allow (`Bash(echo:*)`) a redirection is a write the rule does not grant, so it asks.
 */
import { readFile, realpath, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../support/temp.ts";
import { exists, failing, runBash, workspaces } from "./bash-support.ts";

const workspace = workspaces();
const outsideDir = useTempDirs("skein-perm-outside-");

/** A workspace, a directory outside it, and the commands with `$OUT` standing for that directory. */
async function setup(commands: string[]) {
  const ws = await workspace();
  const out = await realpath(await outsideDir());
  await writeFile(path.join(ws, "x"), "data\n");
  return { ws, out, commands: commands.map((c) => c.replaceAll("$OUT", out)) };
}

/** Ran without a question and was not denied (it may still fail as a command). */
const ranFreely = (run: Awaited<ReturnType<typeof runBash>>) => (id: string) =>
  !run.asked.includes(id) && run.reason(id) !== "denied";

describe('allow: ["Bash"]: the gate does not ask where the rules are silent', () => {
  it("writes outside the workspace run, by redirection and by writers alike", async () => {
    const { ws, out, commands } = await setup([
      "echo x > $OUT/redirect",
      "cp x $OUT/copy",
      "echo x | tee $OUT/tee",
      "echo x >> $OUT/append",
      "echo x 2> $OUT/stderr",
      "echo x &> $OUT/both",
      "dd if=x of=$OUT/dd 2>/dev/null",
      "echo x > ../skein-outright-sibling-$RANDOM; rm -f ../skein-outright-sibling-*",
      'f=$OUT/dynamic; echo x > "$f"',
      "echo x > $OUT/glob*",
      "mv $OUT/copy $OUT/moved",
      "install -m 644 x $OUT/installed",
    ]);
    const run = await runBash(ws, { allow: ["Bash"] }, commands);
    expect(run.asked).toEqual([]);
    expect(failing(commands, (id) => run.reason(id) === undefined)).toEqual([]);
    for (const name of ["redirect", "tee", "append", "stderr", "both", "dd", "dynamic", "moved"])
      expect(exists(out, name), name).toBe(true);
  });

  it("a link out of the workspace and /dev/tcp run too (the sandbox confines them)", async () => {
    const { ws, out, commands } = await setup([
      "echo x > out-link/through",
      "cat < /dev/tcp/127.0.0.1/9 || true",
    ]);
    await symlink(out, path.join(ws, "out-link"));
    const run = await runBash(ws, { allow: ["Bash"] }, commands);
    expect(run.asked).toEqual([]);
    expect(exists(out, "through")).toBe(true);
  });
});

describe('allow: ["Bash"]: deny rules for the files a command writes still deny', () => {
  it("Edit(.env): redirections, recognised writers, patterns, wrappers, names known only at run time", async () => {
    const { ws, commands } = await setup([
      "echo x > .env",
      "cp x .env",
      "cp x ./sub/../.env",
      "cp -t . src/.env",
      "cp --target-dir=. src/.env",
      "mv x .env",
      "ln -sf x .env",
      "install x .env",
      "echo x | tee .env",
      "echo x | tee -a $OUT/ok .env",
      "dd if=x of=.env",
      "touch .env",
      "truncate -s 0 .env",
      "sed -i s/A/B/ .env",
      "sed -ie s/A/B/ .env",
      "sort -o .env x",
      "curl -s -o .env http://127.0.0.1:9/",
      "curl -sO http://127.0.0.1:9/.env",
      "wget -q http://127.0.0.1:9/.env",
      "cp x .en[v]",
      "echo x > .e*",
      "cp x {y,.env}",
      "timeout 5 cp x .env",
      "env cp x .env",
      'bash -c "cp x .env"',
      'f=.env; cp x "$f"',
      "echo .env | xargs touch",
      "find . -maxdepth 1 -name x -exec cp {} .env \\;",
      "c=cp; $c x .env",
      "echo x > ../.env",
      'bash -c "echo x > .env"',
      'eval "echo x >> .env"',
      "find . -maxdepth 0 -exec sh -c 'echo x > .env' \\;",
    ]);
    const before = await readFile(path.join(ws, ".env"), "utf8");
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Edit(.env)"] }, commands, true);
    expect(failing(commands, (id) => run.reason(id) === "denied")).toEqual([]);
    expect(run.asked).toEqual([]);
    expect(await readFile(path.join(ws, ".env"), "utf8")).toBe(before);
  });

  it("a Write deny rule too; other files still run", async () => {
    const { ws, commands } = await setup(["cp x .env", "echo x | tee .env", "cp x y", "tee z < x"]);
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Write(.env)"] }, commands, true);
    expect(run.reason("c0")).toBe("denied");
    expect(run.reason("c1")).toBe("denied");
    expect(run.reason("c2")).toBeUndefined();
    expect(run.reason("c3")).toBeUndefined();
    expect(exists(ws, "y") && exists(ws, "z")).toBe(true);
  });
});

describe('allow: ["Bash"]: ask rules and protected paths still ask, whichever writes', () => {
  it("writes into protected paths ask (and do not run without an approval)", async () => {
    const { ws, commands } = await setup([
      "echo x > .git/hooks/pre-commit",
      "cp x .git/hooks/pre-commit",
      "cp x .git/hooks/",
      "mv x .git/hooks/pre-push",
      "ln -s ../../x .git/hooks/post-merge",
      "echo x | tee .mcp.json",
      "echo x | tee -a .bashrc",
      "dd if=x of=.GIT/hooks/pre-commit",
      "install x .vscode/tasks.json",
      "touch .skein/settings.json",
      "cp x .g?t/hooks/pre-commit",
      "echo x > .g?t/hooks/pre-commit",
      "cp x sub/../.git/config",
      "cp x hooks-link/pre-commit",
      "echo x > hooks-link/pre-commit",
      'bash -c "echo x > .git/hooks/pre-commit"',
      "echo x > ../.git/hooks/pre-commit",
    ]);
    await symlink(path.join(ws, ".git", "hooks"), path.join(ws, "hooks-link"));
    const run = await runBash(ws, { allow: ["Bash"] }, commands);
    expect(failing(commands, (id) => run.asked.includes(id))).toEqual([]);
    for (const file of ["pre-commit", "pre-push", "post-merge", "x"])
      expect(exists(ws, `.git/hooks/${file}`), file).toBe(false);
    for (const file of [".mcp.json", ".bashrc", ".vscode/tasks.json", ".skein/settings.json"])
      expect(exists(ws, file), file).toBe(false);
  });

  it("an Edit ask rule asks for a redirection and for a writer", async () => {
    const { ws, commands } = await setup([
      "echo x > notes.md",
      "cp x notes.md",
      "echo x | tee docs.md",
      "cp x *.md",
    ]);
    const run = await runBash(ws, { allow: ["Bash"], ask: ["Edit(*.md)"] }, commands);
    expect(failing(commands, (id) => run.asked.includes(id))).toEqual([]);
    expect(exists(ws, "notes.md") || exists(ws, "docs.md")).toBe(false);
  });

  it("control: ordinary writes inside the workspace run", async () => {
    const { ws, commands } = await setup(["echo x > made.txt", "cp x copied", "echo x | tee teed"]);
    const run = await runBash(ws, { allow: ["Bash"] }, commands);
    expect(failing(commands, ranFreely(run))).toEqual([]);
    for (const name of ["made.txt", "copied", "teed"]) expect(exists(ws, name), name).toBe(true);
  });
});

describe("a narrower allow: the rule grants the program, not the shell's redirections", () => {
  const permissions = {
    allow: ["Bash(echo:*)", "Bash(cp:*)", "Bash(tee:*)", "Bash(dd:*)"],
  };

  it("a redirection outside the workspace, or not covered by an Edit allow rule, asks", async () => {
    const { ws, out, commands } = await setup([
      "echo x > $OUT/redirect",
      "echo x >> $OUT/append",
      "echo x 2> $OUT/stderr",
      "echo x > made.txt",
    ]);
    const run = await runBash(ws, permissions, commands);
    expect(failing(commands, (id) => run.asked.includes(id))).toEqual([]);
    expect(exists(out, "redirect") || exists(ws, "made.txt")).toBe(false);
  });

  it("a cd into a protected directory asks, in any spelling", async () => {
    const { ws, commands } = await setup([
      "cd ./.git",
      "cd .git/",
      "cd sub/../.git/hooks",
      "cd .GIT",
    ]);
    const run = await runBash(ws, { allow: ["Bash(cd:*)"] }, commands);
    expect(failing(commands, (id) => run.asked.includes(id))).toEqual([]);
  });

  it("the allowed writers' own destinations run; protected and denied ones do not", async () => {
    const { ws, out, commands } = await setup([
      "cp x $OUT/copy",
      "echo x | tee $OUT/tee",
      "dd if=x of=$OUT/dd",
      "cp x .git/hooks/pre-commit",
      "dd if=x of=.env",
    ]);
    const run = await runBash(ws, { ...permissions, deny: ["Edit(.env)"] }, commands);
    expect(failing(commands.slice(0, 3), (id) => run.reason(id) === undefined)).toEqual([]);
    expect(exists(out, "copy") && exists(out, "tee") && exists(out, "dd")).toBe(true);
    expect(run.asked).toEqual(["c3"]);
    expect(run.reason("c4")).toBe("denied");
    expect(exists(ws, ".git/hooks/pre-commit")).toBe(false);
  });
});
