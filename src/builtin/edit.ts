/**
 * Edit: replaces exact text in a file of the workspace.
 *
 * - The target's final component must not be a symbolic link (even one leading inside): Edit
 *   never writes through a link, and says to edit the link's target path directly.
 * - `env.recheck("Edit", file_path, target)` is asked with the canonical workspace-relative target
 *   before the file is read (no "not found"/"occurs N times" answers about a file the rules
 *   refuse) or changed; the write goes through the verified parent directory, so the file
 *   replaced is exactly the one rechecked.
 * - Only text files are edited: content that is not valid UTF-8 (a binary file) is refused, as
 *   its `recordSnapshot` (a string, for undo) and the edit itself could not keep its bytes.
 * - The file must have been read in this run and be unchanged since; the write is atomic.
 */
import { BuiltinToolError, defineBuiltin } from "./define.ts";
import type { BuiltinEnvironment } from "./environment.ts";
import { assertFresh, loadCurrent, recordRead, sha256, textOf } from "./read-records.ts";
import { recheckOpened, resolveWriteTarget } from "./workspace.ts";
import { echo } from "./workspace-errors.ts";
import { writeFileInside } from "./workspace-write.ts";

/** The diff in Edit's result is a courtesy: short, and skipped when slow to compute. */
const MAX_DIFF_CHARS = 4000;
const DIFF_TIMEOUT_MS = 200;

export interface EditInput {
  file_path: string;
  old_string: string;
  new_string: string;
  replace_all?: boolean;
}

export function editTool(env: BuiltinEnvironment) {
  return defineBuiltin<EditInput>({
    name: "Edit",
    description:
      "Replaces exact text in a text file of the workspace (not through a symbolic link: give the link's target path). The file must have been read with Read in this run and not changed since. old_string must match the file exactly (whitespace and indentation included) and be unique, unless replace_all is true. The write is atomic.",
    schema: {
      type: "object",
      properties: {
        file_path: {
          type: "string",
          description:
            "The file to edit: relative to the workspace root, or an absolute path inside it.",
        },
        old_string: { type: "string", description: "The exact text to replace." },
        new_string: {
          type: "string",
          description: "The text to put in its place (must differ from old_string).",
        },
        replace_all: {
          type: "boolean",
          description: "Replace every occurrence of old_string (default false).",
        },
      },
      required: ["file_path", "old_string", "new_string"],
      additionalProperties: false,
    },
    security: { network: "none", filesystem: "workspace", sideEffects: "workspace" },
    concurrencySafe: false,
    permission: { kind: "edit", paths: (input) => [input.file_path] },
    handler: async (input, ctx) => {
      const shown = echo(input.file_path);
      if (input.old_string === "")
        throw new BuiltinToolError(
          "old_string is empty. Give the exact text to replace; use Write to create a file.",
        );
      if (input.old_string === input.new_string)
        throw new BuiltinToolError(
          "old_string and new_string are identical: there is nothing to change.",
        );
      const resolved = await resolveWriteTarget(env.workspace, input.file_path);
      recheckOpened(env, "Edit", input.file_path, resolved);
      const current = await loadCurrent(resolved, input.file_path);
      if (current === null)
        throw new BuiltinToolError(`${shown} does not exist. Use Write to create it.`);
      const text = textOf(current.content, input.file_path);
      await assertFresh(ctx, resolved, current, input.file_path);
      const { from, to, count } = matchOf(text, input.old_string, input.new_string);
      if (count === 0)
        throw new BuiltinToolError(
          `old_string was not found in ${shown}. It must match the file exactly, including whitespace and indentation; Read the file again if unsure.`,
        );
      if (count > 1 && input.replace_all !== true)
        throw new BuiltinToolError(
          `old_string occurs ${count} times in ${shown}. Include more surrounding lines to make it unique, or set replace_all to true to replace every occurrence.`,
        );
      const updated =
        input.replace_all === true ? text.split(from).join(to) : replaceOnce(text, from, to);
      await ctx.recordSnapshot?.({ path: resolved.relative, content: text });
      const stats = await writeFileInside(resolved, updated, input.file_path, current.mode);
      recordRead(ctx, resolved, {
        mtimeMs: stats.mtimeMs,
        size: stats.size,
        sha256: sha256(updated),
      });
      const replaced = input.replace_all === true ? count : 1;
      const summary = `Edited ${resolved.relative}: replaced ${replaced} occurrence${replaced === 1 ? "" : "s"}.`;
      const diff = await shortDiff(resolved.relative, text, updated);
      return diff === undefined ? summary : `${summary}\n\n${diff}`;
    },
  });
}

/**
 * The strings to use: as given, or with "\n" turned into "\r\n" when the file has CRLF line
 * endings (Read shows lines without their CR, so the model writes plain "\n").
 */
function matchOf(text: string, oldString: string, newString: string) {
  const count = occurrences(text, oldString);
  if (count > 0 || !text.includes("\r\n") || !oldString.includes("\n"))
    return { from: oldString, to: newString, count };
  const from = oldString.replace(/\r?\n/g, "\r\n");
  return { from, to: newString.replace(/\r?\n/g, "\r\n"), count: occurrences(text, from) };
}

function occurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length))
    count += 1;
  return count;
}

/** Slices rather than String.replace, which would interpret "$&" and friends in new_string. */
function replaceOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from);
  return text.slice(0, at) + to + text.slice(at + from.length);
}

async function shortDiff(name: string, before: string, after: string): Promise<string | undefined> {
  // Loaded on the first edit: an agent that never edits does not pay for it at import.
  const { createPatch } = await import("diff");
  const patch = createPatch(name, before, after, undefined, undefined, {
    context: 2,
    timeout: DIFF_TIMEOUT_MS,
  });
  if (patch === undefined) return undefined;
  const hunks = patch.slice(Math.max(0, patch.indexOf("@@")));
  return hunks.length <= MAX_DIFF_CHARS ? hunks : `${hunks.slice(0, MAX_DIFF_CHARS)}\n… (diff cut)`;
}
