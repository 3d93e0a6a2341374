/**
 * The house rule of ARCHITECTURE.md: no source file is over 400 lines. A file that grows past it
 * splits by concern (as `agent.ts` did into the assembly, the agent object, query and resume).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/helpers.ts";

const LIMIT = 400;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|tsx)$/.test(entry.name) ? [path] : [];
  });
}

describe("source files", () => {
  it(`none under src/ is over ${LIMIT} lines`, () => {
    const files = sourceFiles(join(ROOT, "src"));
    expect(files.length).toBeGreaterThan(100);
    const over = files
      .map((file) => ({
        file: relative(ROOT, file),
        lines: readFileSync(file, "utf8").split("\n").length - 1,
      }))
      .filter(({ lines }) => lines > LIMIT)
      .map(({ file, lines }) => `${file}: ${lines} lines`);
    expect(over).toEqual([]);
  });
});
