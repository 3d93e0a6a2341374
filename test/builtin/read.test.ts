import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readTool } from "../../src/builtin/read.ts";
import { readKey } from "../../src/builtin/read-records.ts";
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
} from "./harness.ts";

let fx: Fixture;
beforeEach(() => {
  fx = makeFixture();
});
afterEach(() => fx.cleanup());

const read = (input: Record<string, unknown>, ctx = fx.ctx) => invoke(fx.tools.Read, input, ctx);
const lines = (n: number, from = 1) =>
  Array.from({ length: n }, (_, i) => `line ${i + from}`).join("\n");

describe("Read: text", () => {
  it("numbers lines cat -n style and records the read", async () => {
    fx.write("a.txt", "alpha\nbeta\r\ngamma");
    const result = await read({ file_path: "a.txt" });
    expect(result.isError).toBeFalsy();
    expect(result.text).toBe("     1\talpha\n     2\tbeta\n     3\tgamma");
    const record = fx.ctx.data.get(readKey("a.txt")) as Record<string, unknown>;
    const stats = fs.statSync(path.join(fx.root, "a.txt"));
    expect(record).toEqual({
      mtimeMs: stats.mtimeMs,
      size: stats.size,
      sha256: expect.any(String),
    });
  });

  it("honours offset and limit, and says how to read on", async () => {
    fx.write("n.txt", `${lines(30)}\n`);
    const result = await read({ file_path: "n.txt", offset: 10, limit: 3 });
    expect(result.text).toBe(
      "    10\tline 10\n    11\tline 11\n    12\tline 12\n\n[Showing lines 10-12 of 30. Use offset: 13 to read on.]",
    );
    const tail = await read({ file_path: "n.txt", offset: 29 });
    expect(tail.text).toBe("    29\tline 29\n    30\tline 30");
    const past = await read({ file_path: "n.txt", offset: 31 });
    expect(past.text).toBe("n.txt has 30 lines; offset 31 is past the end.");
  });

  it("shows 2000 lines by default", async () => {
    fx.write("long.txt", lines(2500));
    const result = await read({ file_path: "long.txt" });
    expect(result.text.split("\n").filter((l) => /^\s+\d+\t/.test(l))).toHaveLength(2000);
    expect(result.text).toContain("[Showing lines 1-2000 of 2500. Use offset: 2001 to read on.]");
  });

  it("truncates lines over 2000 characters with a marker, never splitting a surrogate pair", async () => {
    fx.write("wide.txt", `${"x".repeat(1999)}😀tail\nshort`);
    const result = await read({ file_path: "wide.txt" });
    const [first, second] = result.text.split("\n");
    expect(first).toBe(
      `     1\t${"x".repeat(1999)}… [line truncated: longer than 2000 characters]`,
    );
    expect(second).toBe("     2\tshort");
  });

  it("says an empty file is empty", async () => {
    fx.write("empty.txt", "");
    const result = await read({ file_path: "empty.txt" });
    expect(result.isError).toBeFalsy();
    expect(result.text).toBe("empty.txt exists but is empty.");
  });

  it("shows only the head of a file over 256 KiB, and says so", async () => {
    fx.write("big.txt", `${"y".repeat(199)}\n`.repeat(3000));
    const result = await read({ file_path: "big.txt" });
    expect(result.isError).toBeFalsy();
    expect(result.text.length).toBeLessThanOrEqual(256 * 1024 + 500);
    expect(result.text).toMatch(
      /\[big\.txt is 585\.9 KiB, more than the 256 KiB Read shows at once: this is lines 1-\d+ only\. Use offset and limit/,
    );
  });

  it("caps the text of one call at 256 KiB even with offset and limit", async () => {
    fx.write("wide-lines.txt", `${"z".repeat(1500)}\n`.repeat(2000));
    const result = await read({ file_path: "wide-lines.txt", offset: 1, limit: 2000 });
    expect(result.text.length).toBeLessThanOrEqual(256 * 1024 + 500);
    expect(result.text).toMatch(/\(the 256 KiB per-call cap was reached\)\. Use offset: \d+/);
  });
});

describe("Read: huge files with bounded memory (C4)", () => {
  it("a sparse 1 GB file: reads lines by offset/limit without reading it whole", async () => {
    const file = fx.write("huge.log", `${lines(10_000)}\n`);
    fs.truncateSync(file, 1024 ** 3);
    const middle = await read({ file_path: "huge.log", offset: 5000, limit: 2 });
    expect(middle.text).toBe(
      "  5000\tline 5000\n  5001\tline 5001\n\n[Showing lines 5000-5001. Use offset: 5002 to read on.]",
    );
    // Line 10001 is the ~1 GB run of NULs: shown cut, without scanning to its end.
    const giant = await read({ file_path: "huge.log", offset: 10_001, limit: 1 });
    expect(giant.text).toContain("[line truncated: longer than 2000 characters]");
    const head = await read({ file_path: "huge.log" });
    expect(head.text).toMatch(/huge\.log is 1 GiB, more than the 256 KiB Read shows at once/);
  });

  it("a sparse 5 GB file without offset/limit: only the head", async () => {
    const file = fx.write("huge5.log", `${lines(3000)}\n`);
    fs.truncateSync(file, 5 * 1024 ** 3);
    const before = process.memoryUsage().rss;
    const result = await read({ file_path: "huge5.log" });
    expect(result.text).toMatch(/huge5\.log is 5 GiB, .*this is lines 1-2000 only/s);
    expect(process.memoryUsage().rss - before).toBeLessThan(200 * 1024 * 1024);
  });
});

describe("Read: a giant line in a big file", () => {
  // A read that scanned the hole to its end would take minutes: the test's timeout catches it.
  it("fewer lines than a Read shows, then a 1 TiB hole: the read stops at the cut line", async () => {
    const file = fx.write("hole.log", `${lines(1000)}\n`);
    fs.truncateSync(file, 1024 ** 4);
    const result = await read({ file_path: "hole.log" });
    expect(result.text).toMatch(/^ {5}1\tline 1\n/);
    expect(result.text).toContain("  1001\t");
    expect(result.text).toContain("[line truncated: longer than 2000 characters]");
    expect(result.text).toMatch(/this is lines 1-1001 only/);
  });

  it("a file of many long (minified) lines is still read past them", async () => {
    fx.write("min.js", `${"m".repeat(5000)}\n`.repeat(100));
    const result = await read({ file_path: "min.js" });
    expect(result.text).toContain("   100\t");
  });
});

describe("Read: what it refuses (C4)", () => {
  it("a directory, pointing to LS", async () => {
    fs.mkdirSync(path.join(fx.root, "dir"));
    const result = await read({ file_path: "dir" });
    expect(result.isError).toBe(true);
    expect(result.text).toBe("dir is a directory. Use LS to list it, or Glob to find files in it.");
  });

  it("a FIFO, without hanging", async () => {
    execFileSync("mkfifo", [path.join(fx.root, "pipe")]);
    const result = await read({ file_path: "pipe" });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/is not a regular file/);
  });

  it("a socket", async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(path.join(fx.root, "sock"), resolve));
    try {
      const result = await read({ file_path: "sock" });
      expect(result.isError).toBe(true);
      expect(result.text).toMatch(/is not a regular file/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("/dev/zero and /dev/stdin, even with /dev as the workspace", async () => {
    const tool = readTool(makeEnv("/dev"));
    for (const file of ["zero", "/dev/zero", "stdin", "/dev/stdin", "null"]) {
      const result = await invoke(tool, { file_path: file });
      expect(result.isError, file).toBe(true);
      expect(result.text).toMatch(/not a regular file|outside the workspace|does not exist/);
    }
    const outside = await invoke(readTool(fx.env), { file_path: "/dev/zero" });
    expect(outside.text).toMatch(/is outside the workspace/);
  });

  it("binary files", async () => {
    fx.write("blob.bin", Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x00, 0x01, 0x02]));
    const result = await read({ file_path: "blob.bin" });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/looks like a binary file/);
  });

  it("a missing file, and a dangling link pointing inside", async () => {
    fs.symlinkSync("nowhere.txt", path.join(fx.root, "dangling"));
    expect((await read({ file_path: "missing.txt" })).text).toBe("missing.txt does not exist.");
    expect((await read({ file_path: "dangling" })).text).toBe("dangling does not exist.");
  });

  it("invalid input: missing file_path, unknown fields, a negative limit", async () => {
    expect((await read({})).isError).toBe(true);
    expect((await read({ file_path: "a", extra: 1 })).isError).toBe(true);
    expect((await read({ file_path: "a", limit: 0 })).isError).toBe(true);
  });
});

describe("Read: images", () => {
  const png = Buffer.from(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
    "base64",
  );

  it.each([
    ["pic.png", png, "image/png"],
    ["photo.jpg", Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46]), "image/jpeg"],
    ["anim.gif", Buffer.from("GIF89a\x01\x00\x01\x00\x00\x00\x00", "latin1"), "image/gif"],
    ["still.webp", Buffer.from("RIFF\x1a\x00\x00\x00WEBPVP8 ", "latin1"), "image/webp"],
    // The magic bytes decide, not the extension.
    ["misnamed.txt", png, "image/png"],
  ])("%s comes back as an image block", async (name, bytes, mediaType) => {
    fx.write(name, bytes);
    const result = await read({ file_path: name });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([
      {
        type: "image",
        source: { type: "base64", media_type: mediaType, data: bytes.toString("base64") },
      },
    ]);
  });

  it("refuses an image over 5 MB", async () => {
    const file = fx.write("huge.png", png);
    fs.truncateSync(file, 6 * 1024 * 1024);
    const result = await read({ file_path: "huge.png" });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/is an image of 6 MiB; Read shows images up to 5 MiB/);
  });
});

describe("Read: confinement (C1-C3)", () => {
  it("never shows a secret outside, whatever the path", async () => {
    fs.symlinkSync(path.join(fx.evil, "id_rsa"), path.join(fx.root, "key"));
    fs.symlinkSync(fx.evil, path.join(fx.root, "evil"));
    fs.symlinkSync(path.join(fx.evil, "missing"), path.join(fx.root, "dangling-out"));
    const attempts = [
      "../../etc/passwd",
      "/etc/passwd",
      "../work2/x",
      path.join(fx.sibling, "x"),
      `${fx.root}2/x`,
      "../outside.txt",
      "key",
      "evil/id_rsa",
      "dangling-out",
      "work/../../outside.txt",
    ];
    const before = fx.outsideState();
    for (const file_path of attempts) {
      const result = await read({ file_path });
      expect(result.isError, file_path).toBe(true);
      expectNoSecret(fx, result.text);
      if (!path.isAbsolute(file_path)) expectNoHostPath(fx, result.text);
    }
    expect(fx.outsideState()).toEqual(before);
  });

  it("reads inside through an absolute path and a/../b", async () => {
    fx.write("b.txt", "bee");
    expect((await read({ file_path: path.join(fx.root, "b.txt") })).text).toBe("     1\tbee");
    expect((await read({ file_path: "a/../b.txt" })).text).toBe("     1\tbee");
  });

  it("records a read through an inside symlink under the target's path", async () => {
    fx.write("real.txt", "r");
    fs.symlinkSync("real.txt", path.join(fx.root, "alias.txt"));
    const ctx = fakeContext();
    await read({ file_path: "alias.txt" }, ctx);
    expect([...ctx.data.keys()]).toEqual([readKey("real.txt")]);
  });
});

describe("Read: the opened path is rechecked (a symlink swapped in after the gate)", () => {
  beforeEach(() => {
    fx.write("src/notes.txt", "harmless\n");
    fx.write(".git/hooks/pre-commit", "#!/bin/sh\nSECRET-HOOK\n");
    // The gate saw `l/pre-commit` while `l` pointed at src; a background job swapped it since.
    fs.symlinkSync(".git/hooks", path.join(fx.root, "l"));
    fx.recheck.mockImplementation((_kind, given, opened) =>
      opened === ".git/hooks/pre-commit" ? `Permission denied: ${given} was swapped.` : undefined,
    );
  });

  it("returns the recheck's refusal, no content and no read record", async () => {
    const result = await read({ file_path: "l/pre-commit" });
    expect(result.isError).toBe(true);
    expect(result.text).toBe("Permission denied: l/pre-commit was swapped.");
    expect(result.text).not.toContain("SECRET-HOOK");
    expect(fx.ctx.data.size).toBe(0);
    // With offset/limit too.
    const part = await read({ file_path: "l/pre-commit", offset: 2, limit: 1 });
    expect(part.text).toBe("Permission denied: l/pre-commit was swapped.");
  });

  it("passes the tool, the path as given and the canonical path of the file opened", async () => {
    await read({ file_path: "l/pre-commit" });
    expect(fx.recheck).toHaveBeenLastCalledWith("Read", "l/pre-commit", ".git/hooks/pre-commit");
    const ok = await read({ file_path: path.join(fx.root, "src/../src/notes.txt") });
    expect(ok.text).toBe("     1\tharmless");
    expect(fx.recheck).toHaveBeenLastCalledWith(
      "Read",
      path.join(fx.root, "src/../src/notes.txt"),
      "src/notes.txt",
    );
  });

  it("rechecks images and empty files too; not directories, refused before", async () => {
    fx.write("l/empty", "");
    fx.write(".git/hooks/pic.gif", Buffer.from("GIF89a\x01\x00\x01\x00\x00\x00\x00", "latin1"));
    fx.recheck.mockImplementation((_kind, given, opened) =>
      opened.startsWith(".git/") ? `Refused: ${given}.` : undefined,
    );
    expect((await read({ file_path: "l/empty" })).text).toBe("Refused: l/empty.");
    expect((await read({ file_path: "l/pic.gif" })).text).toBe("Refused: l/pic.gif.");
    fx.recheck.mockClear();
    expect((await read({ file_path: "l" })).text).toMatch(/is a directory/);
    expect(fx.recheck).not.toHaveBeenCalled();
  });
});

describe("Read: definition", () => {
  it("has the contract's name, security, concurrency and permission", () => {
    const tool = fx.tools.Read;
    expect(tool.name).toBe("Read");
    expect(tool.security).toEqual({
      network: "none",
      filesystem: "workspace",
      sideEffects: "none",
    });
    expect(runtimeOf(tool).isConcurrencySafe?.({})).toBe(true);
    const permission = builtinInfo(tool)?.permission;
    expect(permission?.kind).toBe("read");
    if (permission?.kind === "read")
      expect(permission.paths({ file_path: "x/y" })).toEqual(["x/y"]);
    expect(tool.inputSchema).toMatchObject({
      required: ["file_path"],
      additionalProperties: false,
    });
  });
});
