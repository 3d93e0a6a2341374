/** Skill folders written for a test, and reading what the model got back. */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { SDKResultMessage } from "skein";
import { contentText } from "../support/results.ts";

/** Anthropic's webapp-testing skill, unchanged (see fixtures/anthropic/README.md). */
export const ANTHROPIC_SKILLS = fileURLToPath(new URL("./fixtures/anthropic", import.meta.url));
export const WEBAPP_TESTING = path.join(ANTHROPIC_SKILLS, "webapp-testing");

/** Writes `<parent>/<folder>/SKILL.md` (and any other files) and returns the folder. */
export function writeSkill(
  parent: string,
  folder: string,
  skillMd: string,
  files: Record<string, string> = {},
): string {
  const dir = path.join(parent, folder);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "SKILL.md"), skillMd);
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), content);
  }
  return dir;
}

/** A SKILL.md with this name, description and body. */
export function skillMd(name: string, description: string, body = `# ${name}\n\nDo it.\n`) {
  return `---\nname: ${name}\ndescription: ${description}\n---\n${body}`;
}

/** The text of the result of call `id` in a run's transcript. */
export function resultOf(result: SDKResultMessage, id: string): { text: string; isError: boolean } {
  for (const message of result.messages) {
    if (!Array.isArray(message.content)) continue;
    for (const block of message.content)
      if (block.type === "tool_result" && block.tool_use_id === id)
        return { text: contentText(block.content), isError: block.is_error === true };
  }
  throw new Error(`no result for ${id}`);
}
