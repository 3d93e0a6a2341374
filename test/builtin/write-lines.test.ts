/**
 * The line count in Write's answer ("Created hello.txt (1 line, 12 bytes)") counts lines as an
 * editor shows them: newline-terminated lines, plus a last line without its newline.
 */
import { execFileSync } from "node:child_process";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { countLines } from "../../src/builtin/write.ts";
import { type Fixture, invoke, makeFixture } from "./harness.ts";

describe("countLines", () => {
  it.each([
    ["", 0],
    ["hello world\n", 1],
    ["hello world", 1],
    ["a\nb", 2],
    ["a\nb\n", 2],
    ["\n", 1],
    ["\n\n", 2],
    ["a\r\nb\r\n", 2],
  ])("%j has %i line(s)", (text, expected) => {
    expect(countLines(text)).toBe(expected);
  });

  it("agrees with wc -l wherever the text ends with a newline", () => {
    for (const text of ["hello world\n", "a\nb\n", "\n\n\n", "x\n\ny\n"]) {
      const counted = Number(execFileSync("wc", ["-l"], { input: text, encoding: "utf8" }).trim());
      expect(countLines(text), JSON.stringify(text)).toBe(counted);
    }
  });
});

describe("Write's answer", () => {
  let fx: Fixture;
  beforeEach(() => {
    fx = makeFixture();
  });
  afterEach(() => fx.cleanup());

  it('says "1 line, 12 bytes" for "hello world\\n"', async () => {
    const result = await invoke(fx.tools.Write, {
      file_path: "hello.txt",
      content: "hello world\n",
    });
    expect(result.text).toBe("Created hello.txt (1 line, 12 bytes).");
  });

  it("counts a last line without its newline, and an empty file as 0 lines", async () => {
    const two = await invoke(fx.tools.Write, { file_path: "two.txt", content: "a\nb" });
    expect(two.text).toBe("Created two.txt (2 lines, 3 bytes).");
    const empty = await invoke(fx.tools.Write, { file_path: "empty.txt", content: "" });
    expect(empty.text).toBe("Created empty.txt (0 lines, 0 bytes).");
  });
});
