/** The `--allow` rule a paused run's message suggests, for the call that waited. */
import { describe, expect, it } from "vitest";
import { suggestedAllowRule } from "../../src/cli/suggest-rule.ts";

describe("suggestedAllowRule", () => {
  it.each([
    [{ name: "Write", input: { file_path: "hello.txt", content: "x" } }, '"Write(hello.txt)"'],
    [{ name: "Edit", input: { file_path: "src/a.ts" } }, '"Edit(src/a.ts)"'],
    [{ name: "Read", input: { file_path: "notes[1].md" } }, "'Read(notes\\[1\\].md)'"],
    [{ name: "Grep", input: { pattern: "x", path: "lib" } }, '"Grep(lib)"'],
    [{ name: "Bash", input: { command: "npm test" } }, '"Bash(npm test)"'],
    [{ name: "Bash", input: { command: "rm -rf build && make" } }, '"Bash(rm:*)"'],
    [{ name: "Bash", input: { command: "$(curl x)" } }, '"Bash"'],
    [{ name: "deploy", input: { target: "prod" } }, '"deploy"'],
    [{ name: "Write", input: { file_path: "it's.txt" } }, '"Write(it\'s.txt)"'],
    [{ name: "Write", input: { file_path: "$HOME.txt" } }, "'Write($HOME.txt)'"],
  ])("%j -> %s", (call, expected) => {
    expect(suggestedAllowRule(call)).toBe(expected);
  });
});
