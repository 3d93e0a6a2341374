import * as fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BuiltinToolError } from "../../src/builtin/define.ts";
import { createWorkspace, resolveWriteTarget } from "../../src/builtin/workspace.ts";
import {
  isPathError,
  type PathErrorCode,
  WorkspacePathError,
} from "../../src/builtin/workspace-errors.ts";
import { openInside } from "../../src/builtin/workspace-open.ts";
import { writeFileInside } from "../../src/builtin/workspace-write.ts";
import { LIVENESS_MS } from "../support/liveness.ts";
import { type Fixture, makeFixture } from "./harness.ts";

let fx: Fixture;
beforeEach(() => {
  fx = makeFixture();
});
afterEach(() => fx.cleanup());

/** The error message of a rejected resolve, or "resolved" when it succeeded. */
async function refusal(input: string): Promise<string> {
  try {
    await fx.env.workspace.resolve(input);
    return "resolved";
  } catch (error) {
    expect(error).toBeInstanceOf(BuiltinToolError);
    return (error as Error).message;
  }
}

describe("createWorkspace", () => {
  it("makes the root canonical", () => {
    const link = path.join(fx.base, "root-link");
    fs.symlinkSync(fx.root, link);
    expect(createWorkspace(link).root).toBe(fx.root);
  });

  it("accepts absolute paths spelled through a symlinked root", async () => {
    const link = path.join(fx.base, "root-link");
    fs.symlinkSync(fx.root, link);
    fx.write("a.txt", "a");
    const resolved = await createWorkspace(link).resolve(path.join(link, "a.txt"));
    expect(resolved).toEqual({ absolute: path.join(fx.root, "a.txt"), relative: "a.txt" });
  });
});

describe("resolve: C1 relative, absolute and climbing paths", () => {
  it.each([["../../etc/passwd"], ["/etc/passwd"], ["a/../../x"], [".."], ["../work"]])(
    "%s is outside, without echoing the host path",
    async (input) => {
      const message = await refusal(input);
      if (input !== "../work") {
        expect(message).toBe(
          `${input} is outside the workspace. Use a path relative to the workspace root, or an absolute path inside it.`,
        );
      }
      expect(message).not.toContain(fx.base);
    },
  );

  it("../work leads back into the workspace and is allowed", async () => {
    expect(await fx.env.workspace.resolve("../work/a")).toEqual({
      absolute: path.join(fx.root, "a"),
      relative: "a",
    });
  });

  it("allows absolute paths inside, a/../b, ., and the empty path as the root", async () => {
    const ws = fx.env.workspace;
    expect(await ws.resolve(path.join(fx.root, "src/a.ts"))).toEqual({
      absolute: path.join(fx.root, "src/a.ts"),
      relative: "src/a.ts",
    });
    expect((await ws.resolve("a/../b")).relative).toBe("b");
    expect((await ws.resolve(".")).relative).toBe("");
    expect((await ws.resolve("")).relative).toBe("");
    expect((await ws.resolve(fx.root)).relative).toBe("");
  });

  it("refuses a NUL byte", async () => {
    expect(await refusal("a\0b")).toMatch(/NUL/);
  });
});

describe("resolve: C2 siblings with a shared prefix", () => {
  it("refuses /srv/work2-style siblings and ../work2", async () => {
    expect(await refusal(path.join(fx.sibling, "x"))).toMatch(/is outside the workspace/);
    expect(await refusal("../work2/x")).toBe(
      "../work2/x is outside the workspace. Use a path relative to the workspace root, or an absolute path inside it.",
    );
    expect(await refusal(`${fx.root}2/x`)).toMatch(/is outside the workspace/);
  });

  it("refuses a symlink into work-evil", async () => {
    fs.symlinkSync(fx.evil, path.join(fx.root, "evil"));
    const message = await refusal("evil/id_rsa");
    expect(message).toBe(
      "evil/id_rsa is outside the workspace (through a symbolic link). Use a path relative to the workspace root, or an absolute path inside it.",
    );
    expect(message).not.toContain(fx.evil);
  });
});

describe("resolve: C3 symlinks", () => {
  it("refuses a live link to a secret outside", async () => {
    fs.symlinkSync(path.join(fx.evil, "id_rsa"), path.join(fx.root, "key"));
    expect(await refusal("key")).toMatch(/outside the workspace \(through a symbolic link\)/);
  });

  it("refuses a dangling link pointing outside (and a relative one)", async () => {
    fs.symlinkSync(path.join(fx.evil, "missing"), path.join(fx.root, "dangling"));
    fs.symlinkSync("../work-evil/missing2", path.join(fx.root, "dangling2"));
    expect(await refusal("dangling")).toMatch(/outside the workspace/);
    expect(await refusal("dangling2")).toMatch(/outside the workspace/);
  });

  it("resolves a dangling link pointing inside to its target", async () => {
    fs.symlinkSync("sub/new.txt", path.join(fx.root, "inside-link"));
    expect(await fx.env.workspace.resolve("inside-link")).toEqual({
      absolute: path.join(fx.root, "sub/new.txt"),
      relative: "sub/new.txt",
    });
  });

  it("refuses paths through a symlinked parent directory pointing outside", async () => {
    fs.symlinkSync(fx.evil, path.join(fx.root, "parent"));
    expect(await refusal("parent/new/file.txt")).toMatch(/outside the workspace/);
  });

  it("reports a loop and a chain over 40 hops as ELOOP, without hanging", async () => {
    fs.symlinkSync("loop-b", path.join(fx.root, "loop-a"));
    fs.symlinkSync("loop-a", path.join(fx.root, "loop-b"));
    expect(await refusal("loop-a")).toMatch(/too many levels of symbolic links/);
    expect(await refusal("loop-a/child")).toMatch(/too many levels of symbolic links/);
    fx.write("target.txt", "t");
    for (let i = 0; i < 41; i += 1)
      fs.symlinkSync(i === 40 ? "target.txt" : `chain${i + 1}`, path.join(fx.root, `chain${i}`));
    expect(await refusal("chain0")).toMatch(/too many levels of symbolic links/);
    // 40 hops is the kernel's limit too: still fine.
    expect((await fx.env.workspace.resolve("chain1")).relative).toBe("target.txt");
  });

  // Linear in the path's length: work quadratic in it took seconds at 20,000 characters and would
  // take minutes at 200,000, past the liveness limit (synchronous work: checked after).
  it(
    "resolves a 200,000-character path in linear time",
    async () => {
      const started = Date.now();
      const resolved = await fx.env.workspace.resolve("a/".repeat(100_000));
      expect(resolved.relative).toBe(Array(100_000).fill("a").join("/"));
      expect(Date.now() - started).toBeLessThan(LIVENESS_MS);
    },
    2 * LIVENESS_MS,
  );

  it("refuses a path through a regular file", async () => {
    fx.write("file.txt", "x");
    expect(await refusal("file.txt/child")).toMatch(/not a directory/);
  });
});

describe("openInside and writeFileInside: a symlink swapped in after resolve", () => {
  it("catches a final component swapped for a link to outside", async () => {
    fx.write("a.txt", "inside");
    const resolved = await fx.env.workspace.resolve("a.txt");
    fs.rmSync(path.join(fx.root, "a.txt"));
    fs.symlinkSync(path.join(fx.evil, "id_rsa"), path.join(fx.root, "a.txt"));
    await expect(openInside(resolved, fs.constants.O_RDONLY, "a.txt")).rejects.toThrow(
      /changed while it was being opened/,
    );
  });

  it("catches a parent directory swapped for a link to outside", async () => {
    fx.write("dir/id_rsa", "inside");
    const resolved = await fx.env.workspace.resolve("dir/id_rsa");
    fs.rmSync(path.join(fx.root, "dir"), { recursive: true });
    fs.symlinkSync(fx.evil, path.join(fx.root, "dir"));
    await expect(openInside(resolved, fs.constants.O_RDONLY, "dir/id_rsa")).rejects.toThrow(
      /changed while it was being opened/,
    );
    const before = fx.outsideState();
    await expect(writeFileInside(resolved, "pwned", "dir/id_rsa")).rejects.toThrow(
      BuiltinToolError,
    );
    expect(fx.outsideState()).toEqual(before);
  });

  it("writes atomically and leaves no temp file behind", async () => {
    const resolved = await fx.env.workspace.resolve("deep/er/file.txt");
    const stats = await writeFileInside(resolved, "hello", "deep/er/file.txt");
    expect(stats.size).toBe(5);
    expect(fs.readFileSync(path.join(fx.root, "deep/er/file.txt"), "utf8")).toBe("hello");
    expect(fs.readdirSync(path.join(fx.root, "deep/er"))).toEqual(["file.txt"]);
  });

  it("replaces a symlink swapped in at the final component instead of writing through it", async () => {
    const resolved = await fx.env.workspace.resolve("b.txt");
    const outsideFile = path.join(fx.evil, "id_rsa");
    const before = fs.readFileSync(outsideFile, "utf8");
    fs.symlinkSync(outsideFile, path.join(fx.root, "b.txt"));
    await writeFileInside(resolved, "mine", "b.txt");
    expect(fs.readFileSync(outsideFile, "utf8")).toBe(before);
    expect(fs.lstatSync(path.join(fx.root, "b.txt")).isFile()).toBe(true);
  });
});

describe("WorkspacePathError: callers test a code, not the message", () => {
  async function codeOf(attempt: Promise<unknown>): Promise<PathErrorCode | "resolved"> {
    try {
      await attempt;
      return "resolved";
    } catch (error) {
      expect(error).toBeInstanceOf(WorkspacePathError);
      expect(error).toBeInstanceOf(BuiltinToolError);
      return (error as WorkspacePathError).code;
    }
  }

  it("gives each refusal its code", async () => {
    const ws = fx.env.workspace;
    fx.write("file.txt", "x");
    fs.symlinkSync(fx.evil, path.join(fx.root, "evil"));
    fs.symlinkSync("loop-b", path.join(fx.root, "loop-a"));
    fs.symlinkSync("loop-a", path.join(fx.root, "loop-b"));
    expect(await codeOf(ws.resolve("../x"))).toBe("outside");
    expect(await codeOf(ws.resolve("evil/id_rsa"))).toBe("outside");
    expect(await codeOf(ws.resolve("a\0b"))).toBe("invalid");
    expect(await codeOf(ws.resolve("loop-a"))).toBe("loop");
    expect(await codeOf(ws.resolve("file.txt/child"))).toBe("not-a-directory");
    const file = await ws.resolve("file.txt");
    const flags = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY;
    expect(await codeOf(openInside(file, flags, "file.txt"))).toBe("not-a-directory");
    expect(await codeOf(openInside(await ws.resolve("gone"), flags, "gone"))).toBe("missing");
    fs.rmSync(path.join(fx.root, "file.txt"));
    fs.symlinkSync("other", path.join(fx.root, "file.txt"));
    expect(await codeOf(openInside(file, fs.constants.O_RDONLY, "file.txt"))).toBe("changed");
    expect(isPathError(new BuiltinToolError("x is outside the workspace"), "outside")).toBe(false);
  });
});

describe("resolveWriteTarget: never a symlink at the final component", () => {
  const target = (input: string) => resolveWriteTarget(fx.env.workspace, input);

  it("refuses a link leading inside, live or dangling, naming the model's path only", async () => {
    fx.write("dir/real.txt", "r");
    fs.symlinkSync("real.txt", path.join(fx.root, "dir/alias.txt"));
    fs.symlinkSync("nowhere/new.txt", path.join(fx.root, "dangling"));
    for (const input of ["dir/alias.txt", "dangling", "dir/alias.txt/", "./dir/../dir/alias.txt"]) {
      const error = await target(input).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(isPathError(error, "symlink"), input).toBe(true);
      expect((error as Error).message).toBe(
        `${input} is a symbolic link. Write and Edit never write through a link: write to its target path directly.`,
      );
    }
  });

  it("keeps the outside refusal for a link leading out", async () => {
    fs.symlinkSync(path.join(fx.evil, "id_rsa"), path.join(fx.root, "key"));
    await expect(target("key")).rejects.toThrow(/outside the workspace/);
  });

  it("resolves a plain or missing file under symlinked parents to its canonical path", async () => {
    fx.write("dir/real.txt", "r");
    fs.symlinkSync("dir", path.join(fx.root, "dir-link"));
    expect(await target("dir-link/real.txt")).toEqual({
      absolute: path.join(fx.root, "dir/real.txt"),
      relative: "dir/real.txt",
    });
    expect(await target("dir-link/new/deeper.txt")).toEqual({
      absolute: path.join(fx.root, "dir/new/deeper.txt"),
      relative: "dir/new/deeper.txt",
    });
    expect((await target("top.txt")).relative).toBe("top.txt");
    expect((await target(".")).relative).toBe("");
  });
});

describe("writeFileInside: missing parents created through verified descriptors", () => {
  it("creates nothing outside when a missing parent's ancestor is swapped for a link", async () => {
    const resolved = await fx.env.workspace.resolve("a/b/c.txt");
    fs.symlinkSync(fx.evil, path.join(fx.root, "a"));
    const before = fx.outsideState();
    const error = await writeFileInside(resolved, "pwned", "a/b/c.txt").then(
      () => undefined,
      (caught: unknown) => caught,
    );
    // The link is met with O_NOFOLLOW | O_DIRECTORY: the kernel says ENOTDIR.
    expect(error).toBeInstanceOf(WorkspacePathError);
    expect(fx.outsideState()).toEqual(before);
    expect(fs.existsSync(path.join(fx.evil, "b"))).toBe(false);
  });
});
