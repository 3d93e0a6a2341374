import { defineBuiltin } from "./define.ts";
import type { BuiltinEnvironment } from "./environment.ts";
import { assertFresh, loadCurrent, recordRead, sha256 } from "./read-records.ts";
import { writeFileInside } from "./workspace.ts";

export interface WriteInput {
  file_path: string;
  content: string;
}

export function writeTool(env: BuiltinEnvironment) {
  return defineBuiltin<WriteInput>({
    name: "Write",
    description:
      "Writes a file of the workspace, creating it and its parent directories, or replacing it whole. An existing file must have been read with Read in this run and not changed since. The write is atomic. Prefer Edit for changing part of a file.",
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
      const resolved = await env.workspace.resolve(input.file_path);
      const previous = await loadCurrent(resolved, input.file_path);
      if (previous !== null) await assertFresh(ctx, resolved, previous, input.file_path);
      await ctx.recordSnapshot?.({
        path: resolved.relative,
        content: previous === null ? null : previous.content.toString("utf8"),
      });
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
      const lines = input.content === "" ? 0 : input.content.split("\n").length;
      return `${previous === null ? "Created" : "Updated"} ${resolved.relative} (${lines} lines, ${stats.size} bytes).`;
    },
  });
}
