/**
 * Write: creates or replaces a whole file of the workspace.
 *
 * - The target's final component must not be a symbolic link (even one leading inside): Write
 *   never writes through a link, and says to write to the link's target path directly.
 * - `env.recheck("Write", file_path, target)` is asked with the canonical workspace-relative target
 *   before anything is read or changed: the gate checked the path as it resolved then, and a
 *   symlink swapped in since (`l -> .git/hooks`) would lead elsewhere. The write then goes through
 *   the verified parent directory, so the file replaced is exactly the one rechecked.
 * - Only text files are replaced: a previous content that is not valid UTF-8 (a binary file) is
 *   refused, since its `recordSnapshot` (a string, for undo) could not hold its bytes.
 * - An existing file must have been read in this run and be unchanged since; the write is atomic.
 */
import { defineBuiltin } from "./define.ts";
import type { BuiltinEnvironment } from "./environment.ts";
import { assertFresh, loadCurrent, recordRead, sha256, textOf } from "./read-records.ts";
import { recheckOpened, resolveWriteTarget } from "./workspace.ts";
import { writeFileInside } from "./workspace-write.ts";

export interface WriteInput {
  file_path: string;
  content: string;
}

export function writeTool(env: BuiltinEnvironment) {
  return defineBuiltin<WriteInput>({
    name: "Write",
    description:
      "Writes a text file of the workspace, creating it and its parent directories, or replacing it whole. An existing file must have been read with Read in this run and not changed since; binary files are not replaced. The path must not be a symbolic link: give the link's target path. The write is atomic. Prefer Edit for changing part of a file.",
    schema: {
      type: "object",
      properties: {
        file_path: {
          type: "string",
          description:
            "The file to write: relative to the workspace root, or an absolute path inside it.",
        },
        content: { type: "string", description: "The whole new content of the file." },
      },
      required: ["file_path", "content"],
      additionalProperties: false,
    },
    security: { network: "none", filesystem: "workspace", sideEffects: "workspace" },
    concurrencySafe: false,
    permission: { kind: "edit", paths: (input) => [input.file_path] },
    handler: async (input, ctx) => {
      const resolved = await resolveWriteTarget(env.workspace, input.file_path);
      recheckOpened(env, "Write", input.file_path, resolved);
      const previous = await loadCurrent(resolved, input.file_path);
      const before = previous === null ? null : textOf(previous.content, input.file_path);
      if (previous !== null) await assertFresh(ctx, resolved, previous, input.file_path);
      await ctx.recordSnapshot?.({ path: resolved.relative, content: before });
      const stats = await writeFileInside(
        resolved,
        input.content,
        input.file_path,
        previous?.mode ?? 0o666,
      );
      // What was just written counts as read: a following Edit needs no Read.
      recordRead(ctx, resolved, {
        mtimeMs: stats.mtimeMs,
        size: stats.size,
        sha256: sha256(input.content),
      });
      const lines = countLines(input.content);
      return `${previous === null ? "Created" : "Updated"} ${resolved.relative} (${counted(lines, "line")}, ${counted(stats.size, "byte")}).`;
    },
  });
}

/**
 * Lines as an editor shows them: every newline-terminated line, plus a last one without its
 * newline. "hello\n" is 1 line (as `wc -l` counts it), "a\nb" is 2 (`wc -l` says 1), "" is 0.
 */
export function countLines(text: string): number {
  if (text === "") return 0;
  let newlines = 0;
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) newlines++;
  return text.endsWith("\n") ? newlines : newlines + 1;
}

function counted(count: number, unit: string): string {
  return `${count} ${unit}${count === 1 ? "" : "s"}`;
}
