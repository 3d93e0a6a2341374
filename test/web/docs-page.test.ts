// docs/web.md shows the chat page the browser test drives, byte for byte (tsc checks the file
// with examples/web/tsconfig.json in `npm run typecheck`), and its screenshot exists.
import { existsSync } from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import { codeBlocks, ROOT, readRepoFile } from "../readme-blocks.ts";

it("the guide's tsx block is examples/web/chat.tsx, and its screenshot is in docs/", () => {
  const guide = readRepoFile("docs/web.md");
  const blocks = codeBlocks(guide, "docs/web.md").filter((block) => block.lang === "tsx");
  expect(blocks).toHaveLength(1);
  expect(guide.split("\n")[blocks[0]!.line - 2]).toBe("<!-- examples/web/chat.tsx -->");
  expect(blocks[0]!.code).toBe(readRepoFile("examples/web/chat.tsx"));
  // The README promises a useChat page in about twenty lines.
  expect(blocks[0]!.code.trimEnd().split("\n").length).toBeLessThanOrEqual(20);
  expect(readRepoFile("docs/web.md")).toContain("](web-chat.png)");
  expect(existsSync(path.join(ROOT, "docs/web-chat.png"))).toBe(true);
  expect(readRepoFile("test/web/chat-page.browser.test.ts")).toContain("examples/web/main.tsx");
});
