/** skein's own MCP example (examples/mcp-filesystem.ts) runs offline against the real filesystem server. */
import { describe, expect, it } from "vitest";
import { main } from "../examples/mcp-filesystem.ts";

describe("examples/mcp-filesystem.ts", () => {
  it("lists, reads (coercing head), asks before writing, and hides the disallowed tool", async () => {
    const lines: string[] = [];
    await main((line) => lines.push(line));
    expect(lines).toEqual([
      "mcp__fs__list_directory -> [FILE] notes.md",
      "mcp__fs__read_text_file -> # Notes",
      "approve mcp__fs__write_file? yes",
      "mcp__fs__write_file -> Successfully wrote to <dir>/todo.md",
      "success: Your notes are about milk and Ana; todo.md now says to call Ana.",
      "offered 13 tools; move_file hidden: true",
      "todo.md: - call Ana",
    ]);
  });
});
