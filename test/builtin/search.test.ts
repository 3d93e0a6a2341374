import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { grepTool } from "../../src/builtin/grep.ts";
import { builtinInfo } from "../../src/tools/builtin-mark.ts";
import { runtimeOf } from "../../src/tools/definition.ts";
import {
  expectNoHostPath,
  expectNoSecret,
  type Fixture,
  fakeContext,
  invoke,
  makeEnv,
  makeFixture,
  toolsOf,
} from "./harness.ts";

let fx: Fixture;
beforeEach(() => {
  fx = makeFixture();
});
afterEach(() => fx.cleanup());

/** Sets mtimes so "newest first" is checkable: later in the list = newer. */
function age(files: string[]): void {
  files.forEach((file, i) => {
    const when = new Date(Date.UTC(2024, 0, 1, 0, 0, i));
    fs.utimesSync(path.join(fx.root, file), when, when);
  });
}

/** Symlinks inside the workspace that lead out: to a directory and to a file with secrets. */
function plantOutsideLinks(): void {
  fs.symlinkSync(fx.evil, path.join(fx.root, "evil-dir"));
  fs.symlinkSync(path.join(fx.sibling, "x"), path.join(fx.root, "evil-file.txt"));
  fs.symlinkSync("../work2", path.join(fx.root, "sib"));
}

describe("LS", () => {
  it("lists one directory sorted, directories with a slash, links marked", async () => {
    fx.write("b.txt", "");
    fx.write("a/inner.txt", "");
    fx.write(".hidden", "");
    fs.symlinkSync("b.txt", path.join(fx.root, "c-link"));
    const result = await invoke(fx.tools.LS, { path: "." });
    expect(result.text).toBe(".hidden\na/\nb.txt\nc-link (symlink)");
    expect((await invoke(fx.tools.LS, { path: "a" })).text).toBe("inner.txt");
    expect((await invoke(fx.tools.LS, { path: path.join(fx.root, "a") })).text).toBe("inner.txt");
  });

  it("leaves out ignore patterns, and entries permission rules hide (counted, never named)", async () => {
    fx.write("keep.ts", "");
    fx.write("drop.log", "");
    fx.write(".env", "KEY=1");
    fx.write("node_modules/x.js", "");
    const tools = toolsOf(
      makeFixtureEnv((relative) => relative === ".env" || relative.startsWith("secret")),
    );
    fx.write("secret/a", "");
    const result = await invoke(tools.LS, { path: ".", ignore: ["*.log", "node_modules"] });
    expect(result.text).toBe(
      "keep.ts\n\n[2 entries hidden by permission rules; read them with Read, which asks or refuses.]",
    );
    expect((await invoke(tools.LS, { path: "secret" })).text).toBe(
      "secret has no entries to show.\n\n[1 entry hidden by permission rules; read it with Read, which asks or refuses.]",
    );
    // Only entries the ignore patterns leave are counted.
    expect((await invoke(tools.LS, { path: ".", ignore: [".env", "secret"] })).text).toBe(
      "drop.log\nkeep.ts\nnode_modules/",
    );
  });

  it("caps at 1000 entries and says how many were left out", async () => {
    for (let i = 0; i < 1500; i += 1) fx.write(`many/f${String(i).padStart(4, "0")}`, "");
    const result = await invoke(fx.tools.LS, { path: "many" });
    const shown = result.text.split("\n").filter((line) => line.startsWith("f"));
    expect(shown).toHaveLength(1000);
    expect(shown[0]).toBe("f0000");
    expect(result.text).toContain("[500 more entries not shown (1000 of 1500).");
  });

  it("refuses files, missing paths, and paths outside (C1, C2, C3)", async () => {
    fx.write("file.txt", "x");
    plantOutsideLinks();
    expect((await invoke(fx.tools.LS, { path: "file.txt" })).text).toBe(
      "file.txt is not a directory. Use Read to read a file.",
    );
    expect((await invoke(fx.tools.LS, { path: "nope" })).text).toBe("nope does not exist.");
    const before = fx.outsideState();
    for (const input of ["..", "../work2", fx.sibling, "/etc", "evil-dir", "sib", "a/../../"]) {
      const result = await invoke(fx.tools.LS, { path: input });
      expect(result.isError, input).toBe(true);
      expect(result.text).toMatch(/is outside the workspace/);
      expect(result.text).not.toContain("id_rsa");
      if (!path.isAbsolute(input)) expectNoHostPath(fx, result.text);
    }
    expect(fx.outsideState()).toEqual(before);
  });

  it("says an empty directory is empty", async () => {
    fs.mkdirSync(path.join(fx.root, "empty"));
    expect((await invoke(fx.tools.LS, { path: "empty" })).text).toBe("empty is empty.");
  });
});

function makeFixtureEnv(hiddenFromSearch: (relative: string) => boolean) {
  return { ...fx.env, hiddenFromSearch };
}

const hiddenNote = (count: number) =>
  count === 1
    ? "[1 file hidden by permission rules; read it with Read, which asks or refuses.]"
    : `[${count} files hidden by permission rules; read them with Read, which asks or refuses.]`;

describe("Glob", () => {
  it("lists matches newest first, relative to the workspace root", async () => {
    for (const file of ["src/a.ts", "src/b.ts", "src/deep/c.ts", "d.ts", "e.js"])
      fx.write(file, "");
    age(["src/b.ts", "d.ts", "src/deep/c.ts", "src/a.ts", "e.js"]);
    const result = await invoke(fx.tools.Glob, { pattern: "**/*.ts" });
    expect(result.text).toBe("src/a.ts\nsrc/deep/c.ts\nd.ts\nsrc/b.ts");
    const scoped = await invoke(fx.tools.Glob, { pattern: "*.ts", path: "src" });
    expect(scoped.text).toBe("src/a.ts\nsrc/b.ts");
    const literal = await invoke(fx.tools.Glob, { pattern: "src/deep/c.ts" });
    expect(literal.text).toBe("src/deep/c.ts");
    const absolute = await invoke(fx.tools.Glob, { pattern: `${fx.root}/src/*.ts` });
    expect(absolute.text).toBe("src/a.ts\nsrc/b.ts");
    expect((await invoke(fx.tools.Glob, { pattern: "**/*.rs" })).text).toBe("No files found");
  });

  it("honours .gitignore files (nested, with negation), always skips .git, keeps node_modules unless ignored", async () => {
    fx.write(".gitignore", "*.log\nbuild/\n");
    fx.write("sub/.gitignore", "!keep.log\n");
    for (const file of ["a.log", "sub/keep.log", "sub/x.log", "build/out.js", "src/app.js"])
      fx.write(file, "");
    fx.write(".git/config", "");
    fx.write(".git/hooks/pre-commit.js", "");
    fx.write("node_modules/pkg/index.js", "");
    const all = await invoke(fx.tools.Glob, { pattern: "**/*" });
    expect(all.text.split("\n").sort()).toEqual([
      ".gitignore",
      "node_modules/pkg/index.js",
      "src/app.js",
      "sub/.gitignore",
      "sub/keep.log",
    ]);
    fx.write(".gitignore", "*.log\nbuild/\nnode_modules/\n");
    const js = await invoke(fx.tools.Glob, { pattern: "**/*.js" });
    expect(js.text).toBe("src/app.js");
    // Searching below an ignored directory's parent still applies the root's rules.
    expect((await invoke(fx.tools.Glob, { pattern: "**/*", path: "build" })).text).toBe(
      "No files found",
    );
  });

  it("drops files permission rules hide, and says how many without naming them", async () => {
    fx.write(".env", "KEY=1");
    fx.write("config/.env", "KEY=2");
    fx.write("app.ts", "");
    const tools = toolsOf(makeFixtureEnv((relative) => path.posix.basename(relative) === ".env"));
    expect((await invoke(tools.Glob, { pattern: "**/.env" })).text).toBe(
      `No files found\n\n${hiddenNote(2)}`,
    );
    expect((await invoke(tools.Glob, { pattern: "**/*" })).text).toBe(`app.ts\n\n${hiddenNote(2)}`);
    expect((await invoke(tools.Glob, { pattern: "*.ts" })).text).toBe("app.ts");
  });

  it("refuses patterns that leave the workspace (C5)", async () => {
    const before = fx.outsideState();
    const cases: [string, string | undefined][] = [
      ["../**", undefined],
      ["{..,src}/**", undefined],
      ["src/{a,..}/*", undefined],
      ["/etc/*", undefined],
      [`${fx.sibling}/*`, undefined],
      ["**/*", ".."],
      ["**/*", "../work2"],
      ["../work2/*", undefined],
    ];
    for (const [pattern, where] of cases) {
      const result = await invoke(
        fx.tools.Glob,
        where === undefined ? { pattern } : { pattern, path: where },
      );
      expect(result.isError, `${pattern} in ${where}`).toBe(true);
      expect(result.text).toMatch(/outside the workspace|"\.\." is not allowed/);
      expectNoSecret(fx, result.text);
      expect(result.text).not.toContain("id_rsa");
    }
    expect((await invoke(fx.tools.Glob, { pattern: "/etc/*" })).text).toBe(
      "/etc/* is outside the workspace. Glob searches inside the workspace only: use a pattern relative to it (or to path).",
    );
    expect(fx.outsideState()).toEqual(before);
  });

  it("never lists through symlinks that lead out, even with tricky braces", async () => {
    fx.write("inside.txt", "");
    plantOutsideLinks();
    for (const pattern of ["**/*", "**", "evil-dir/*", "sib/*", ".{.,}/**", "**/id_rsa", "*"]) {
      const result = await invoke(fx.tools.Glob, { pattern });
      expect(result.text, pattern).not.toMatch(/id_rsa|work2|\bx\b|evil-file/);
      expectNoSecret(fx, result.text);
    }
  });
});

describe("Grep", () => {
  const grep = (input: Record<string, unknown>, ctx = fx.ctx) => invoke(fx.tools.Grep, input, ctx);

  beforeEach(() => {
    fx.write("src/a.ts", "const alpha = 1;\nconst beta = 2;\nexport { alpha };\n");
    fx.write("src/b.ts", "// Alpha in a comment\n");
    fx.write("docs/readme.md", "alpha and omega\n");
  });

  it("a failure while reading ripgrep's output is an error result, not an uncaught exception", async () => {
    const env = makeEnv(fx.root, {
      hiddenFromSearch: () => {
        throw new Error("rules exploded");
      },
    });
    const result = await invoke(grepTool(env), { pattern: "alpha" });
    expect(result.isError).toBe(true);
    expect(result.text).toContain("rules exploded");
  });

  it("lists files with matches by default, sorted, relative to the root", async () => {
    expect((await grep({ pattern: "alpha" })).text).toBe("docs/readme.md\nsrc/a.ts");
    expect((await grep({ pattern: "alpha", "-i": true })).text).toBe(
      "docs/readme.md\nsrc/a.ts\nsrc/b.ts",
    );
    expect((await grep({ pattern: "alpha", path: "src" })).text).toBe("src/a.ts");
    expect((await grep({ pattern: "alpha", glob: "*.md" })).text).toBe("docs/readme.md");
    expect((await grep({ pattern: "alpha", type: "ts" })).text).toBe("src/a.ts");
    expect((await grep({ pattern: "nothing-like-this" })).text).toBe("No files found");
  });

  it("content mode with line numbers and context; count mode", async () => {
    expect((await grep({ pattern: "beta", output_mode: "content" })).text).toBe(
      "src/a.ts:2:const beta = 2;",
    );
    expect((await grep({ pattern: "beta", output_mode: "content", "-n": false })).text).toBe(
      "src/a.ts:const beta = 2;",
    );
    expect((await grep({ pattern: "beta", output_mode: "content", "-C": 1 })).text).toBe(
      "src/a.ts-1-const alpha = 1;\nsrc/a.ts:2:const beta = 2;\nsrc/a.ts-3-export { alpha };",
    );
    expect((await grep({ pattern: "alpha", output_mode: "count" })).text).toBe(
      "docs/readme.md:1\nsrc/a.ts:2",
    );
  });

  it("multiline, a pattern starting with a dash, and a file path", async () => {
    fx.write("flags.txt", "--force\n");
    expect((await grep({ pattern: "--force" })).text).toBe("flags.txt");
    expect(
      (await grep({ pattern: "alpha = 1;.const beta", multiline: true, output_mode: "count" }))
        .text,
    ).toBe("src/a.ts:1");
    expect((await grep({ pattern: "alpha", path: "src/a.ts", output_mode: "count" })).text).toBe(
      "src/a.ts:2",
    );
  });

  it("applies head_limit and says more results exist", async () => {
    for (let i = 0; i < 20; i += 1) fx.write(`many/f${String(i).padStart(2, "0")}.txt`, "hit\n");
    const result = await grep({ pattern: "hit", head_limit: 5 });
    expect(result.text).toBe(
      "many/f00.txt\nmany/f01.txt\nmany/f02.txt\nmany/f03.txt\nmany/f04.txt\n\n[Showing the first 5 results: more exist. Raise head_limit or narrow the search.]",
    );
  });

  it("caps the output size and cuts very long lines", async () => {
    fx.write("wide.txt", `${"needle ".repeat(2000)}\n`.repeat(300));
    const result = await grep({ pattern: "needle", output_mode: "content" });
    expect(result.text.length).toBeLessThan(60_000);
    expect(result.text).toMatch(/more results exist|omitted/);
    expect(result.text.split("\n")[0]!.length).toBeLessThan(700);
  });

  it("reports a bad regex clearly", async () => {
    const result = await grep({ pattern: "(unclosed" });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^Invalid regular expression .*unclosed group/s);
    const type = await grep({ pattern: "x", type: "no-such-type" });
    expect(type.isError).toBe(true);
    expect(type.text).toMatch(/no-such-type/);
  });

  // No line of a's then "b" matches, and a backtracking engine would take forever to say so:
  // the test's timeout catches that.
  it("a catastrophically backtracking pattern finishes", async () => {
    fx.write("evil.txt", `${"a".repeat(100_000)}b\n${"a".repeat(50)}\n`);
    const result = await grep({ pattern: "(a+)+$", path: "evil.txt", output_mode: "count" });
    expect(result.isError).toBeFalsy();
    expect(result.text).toBe("evil.txt:1");
  });

  it("refuses a FIFO or device as the path, rather than blocking on it", async () => {
    execFileSync("mkfifo", [path.join(fx.root, "pipe")]);
    const result = await grep({ pattern: "x", path: "pipe" });
    expect(result.isError).toBe(true);
    expect(result.text).toBe("pipe is not a regular file or directory (a FIFO, socket or device).");
    // In a walk, rg skips it: the search of the root does not hang.
    expect((await grep({ pattern: "alpha" })).text).toBe("docs/readme.md\nsrc/a.ts");
  });

  it("kills rg at the time cap and says the output may be partial", async () => {
    // 40 MB for a slow-ish pattern: far more than the 1 ms cap, even on a loaded machine.
    fx.write("big.txt", `${"word ".repeat(20)}\n`.repeat(400_000));
    const quick = grepTool(fx.env, { timeoutMs: 1 });
    const result = await invoke(quick, { pattern: "\\w+\\s+\\w+ZZZ", "-i": true });
    expect(result.isError).toBeFalsy();
    expect(result.text).toMatch(/took over 0\.001 s and was stopped: the output may be partial/);
  });

  it("stops at once when the call is aborted", async () => {
    const ctx = fakeContext();
    ctx.controller.abort();
    const result = await grep({ pattern: "alpha" }, ctx);
    expect(result.isError).toBe(true);
    expect(result.text).toBe("Grep was cancelled.");
  });

  it("drops files permission rules hide (counted, never named) and skips .git", async () => {
    fx.write(".env", "API_KEY=alpha\nOTHER_KEY=alpha\n");
    fx.write(".git/config", "alpha\n");
    fx.write(".github/workflow.yml", "alpha\n");
    const tools = toolsOf(makeFixtureEnv((relative) => relative === ".env"));
    const files = await invoke(tools.Grep, { pattern: "alpha" });
    expect(files.text).toBe(`.github/workflow.yml\ndocs/readme.md\nsrc/a.ts\n\n${hiddenNote(1)}`);
    // Two matching lines, one file.
    const content = await invoke(tools.Grep, { pattern: "KEY", output_mode: "content" });
    expect(content.text).toBe(`No matches found\n\n${hiddenNote(1)}`);
    const count = await invoke(tools.Grep, { pattern: "KEY", output_mode: "count" });
    expect(count.text).toBe(`No files found\n\n${hiddenNote(1)}`);
    expect((await invoke(tools.Grep, { pattern: "alpha", path: "src" })).text).toBe("src/a.ts");
  });

  it("stays inside the workspace (C5)", async () => {
    plantOutsideLinks();
    const before = fx.outsideState();
    for (const where of [
      "../",
      "..",
      "../work2",
      fx.sibling,
      "/etc",
      "evil-dir",
      "sib",
      "evil-file.txt",
    ]) {
      const result = await grep({ pattern: "SECRET", path: where, output_mode: "content" });
      expect(result.isError, where).toBe(true);
      expect(result.text).toMatch(/is outside the workspace/);
      expectNoSecret(fx, result.text);
    }
    for (const input of [
      { pattern: "SECRET", output_mode: "content" },
      { pattern: "SECRET", glob: "../**", output_mode: "content" },
      { pattern: "SECRET", output_mode: "count", "-i": true },
      { pattern: "SECRET" },
    ]) {
      const result = await grep(input);
      expectNoSecret(fx, result.text);
      expect(result.text).not.toMatch(/evil|sib|work2/);
    }
    expect(fx.outsideState()).toEqual(before);
  });
});

describe("LS, Glob and Grep: definitions", () => {
  it("are read-only, concurrency-safe, read-permission tools on their search path", () => {
    for (const name of ["LS", "Glob", "Grep"] as const) {
      const tool = fx.tools[name];
      expect(tool.name).toBe(name);
      expect(tool.security).toEqual({
        network: "none",
        filesystem: "workspace",
        sideEffects: "none",
      });
      expect(runtimeOf(tool).isConcurrencySafe?.({})).toBe(true);
      const permission = builtinInfo(tool)?.permission;
      expect(permission?.kind).toBe("read");
      if (permission?.kind === "read") {
        expect(permission.paths({ pattern: "*", path: "src" })).toEqual(["src"]);
        if (name !== "LS") expect(permission.paths({ pattern: "*" })).toEqual(["."]);
      }
    }
  });
});
