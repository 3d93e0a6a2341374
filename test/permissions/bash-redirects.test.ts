/**
 * Issue 8 section 2, a less noisy recogniser that is no looser: `2>&1`, `>/dev/null`,
 * `2>/dev/null`, `&>/dev/null`, a trailing `;`, comments and `find -exec cmd {} \;` are
 * auto-allowed when the commands are; a redirection into a workspace file is a write checked
 * against the Edit (and Write) rules of its target: denied by a deny rule, asked for by an ask
 * rule, a protected path, a path outside the workspace, or no allow rule covering it.
 */
import { readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { exists, failing, runBash, workspaces } from "./bash-support.ts";

const workspace = workspaces();

describe("admitted without a question when the commands are allowed", () => {
  it("duplications, /dev/null, a trailing ;, comments", async () => {
    const ws = await workspace();
    const commands = [
      "ls 2>&1",
      "ls >/dev/null",
      "ls 2>/dev/null",
      "ls &>/dev/null",
      "ls > /dev/null 2>&1",
      "ls;",
      "ls # a note",
      "ls -la src;  # list",
      "ls >&2",
    ];
    const run = await runBash(ws, { allow: ["Bash(ls *)"] }, commands);
    expect(
      failing(commands, (id) => !run.asked.includes(id) && run.reason(id) === undefined),
    ).toEqual([]);
  });

  it("find -exec runs when find and the command it runs are both allowed", async () => {
    const ws = await workspace();
    const commands = [
      "find src -name '*.ts' -exec grep -l KEY_NAME {} \\;",
      "find src -exec grep -c KEY {} +",
    ];
    const run = await runBash(ws, { allow: ["Bash(find *)", "Bash(grep *)"] }, commands);
    expect(run.asked).toEqual([]);
    expect(run.text("c0")).toContain("src/app.ts");
  });

  it("find -exec asks when only find is allowed, and a redirection to a file asks without an Edit rule", async () => {
    const ws = await workspace();
    const commands = [
      "find src -exec grep -l KEY {} \\;",
      "find src -exec touch made-a \\;",
      "ls > made-b",
      "ls 2> made-c",
      "ls &>> made-d",
      "ls 3> made-e",
      "ls >& made-f",
    ];
    const run = await runBash(ws, { allow: ["Bash(find *)", "Bash(ls *)"] }, commands);
    expect(failing(commands, (id) => run.asked.includes(id))).toEqual([]);
    for (const name of "abcdef") expect(exists(ws, `made-${name}`), name).toBe(false);
  });
});

describe("a redirection into a file is a write under the Edit rules", () => {
  it("runs when an Edit allow rule covers the target", async () => {
    const ws = await workspace();
    const commands = ["echo one > out.txt", "echo two >> out.txt", "ls >> logs.txt 2>&1"];
    const run = await runBash(
      ws,
      { allow: ["Bash(echo *)", "Bash(ls *)", "Edit(*.txt)"] },
      commands,
    );
    expect(run.asked).toEqual([]);
    expect(await readFile(path.join(ws, "out.txt"), "utf8")).toBe("one\ntwo\n");
  });

  it("is denied by an Edit or Write deny rule, even with Bash allowed outright", async () => {
    const ws = await workspace();
    const commands = [
      "echo x > .env",
      "echo x >> .env",
      "ls &> sub/../.env",
      "echo x >| .env; true",
    ];
    const run = await runBash(ws, { allow: ["Bash"], deny: ["Edit(.env)"] }, commands, true);
    expect(failing(commands, (id) => run.reason(id) === "denied")).toEqual([]);
    const write = await runBash(
      ws,
      { allow: ["Bash"], deny: ["Write(.env)"] },
      ["echo x > .env"],
      true,
    );
    expect(write.reason("c0")).toBe("denied");
    expect(await readFile(path.join(ws, ".env"), "utf8")).toMatch(/^API_KEY=/);
  });

  it("a target named only at run time is denied under an Edit deny rule", async () => {
    const ws = await workspace();
    const run = await runBash(
      ws,
      { allow: ["Bash"], deny: ["Edit(.env)"] },
      ['f=.env; echo x > "$f"'],
      true,
    );
    expect(run.reason("c0")).toBe("denied");
  });

  it("asks for an Edit ask rule, a protected path, a link to one, a path outside, the network", async () => {
    const ws = await workspace();
    await symlink(path.join(ws, ".git", "hooks", "pre-commit"), path.join(ws, "hook"));
    const commands = [
      "echo x > notes.md",
      "echo x > .git/hooks/pre-commit",
      "echo x > hook",
      "echo x > ../outside.txt",
      "echo x > /tmp/skein-outside.txt",
      "cd .git/hooks",
      "cat < /dev/tcp/127.0.0.1/9",
      "echo x > /dev/udp/127.0.0.1/9",
    ];
    const permissions = {
      allow: ["Bash(echo *)", "Bash(cd *)", "Bash(cat *)", "Edit"],
      ask: ["Edit(*.md)"],
    };
    const run = await runBash(ws, permissions, commands);
    expect(failing(commands, (id) => run.asked.includes(id))).toEqual([]);
    expect(exists(ws, ".git/hooks/pre-commit")).toBe(false);
    expect(exists(ws, "notes.md")).toBe(false);
  });

  it("Bash allowed outright writes where no Edit rule speaks", async () => {
    const ws = await workspace();
    await writeFile(path.join(ws, "keep.txt"), "");
    const run = await runBash(ws, { allow: ["Bash"] }, ["echo x > made.txt"]);
    expect(run.asked).toEqual([]);
    expect(exists(ws, "made.txt")).toBe(true);
  });
});
