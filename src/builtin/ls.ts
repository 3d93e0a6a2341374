import type { Dirent } from "node:fs";
import { readdir } from "node:fs/promises";
import ignore from "ignore";
import { BuiltinToolError, defineBuiltin } from "./define.ts";
import type { BuiltinEnvironment } from "./environment.ts";
import { codeOf, echo, fsError, openDirectoryInside } from "./workspace.ts";

export const LS_MAX_ENTRIES = 1000;

export interface LsInput {
  path: string;
  ignore?: string[];
}

export function lsTool(env: BuiltinEnvironment) {
  return defineBuiltin<LsInput>({
    name: "LS",
    description: `Lists the entries of one directory of the workspace, sorted by name: directories end with "/", symbolic links are marked (not followed). At most ${LS_MAX_ENTRIES} entries are shown. Prefer Glob or Grep to find files by name or content.`,
    schema: {
      type: "object",
      properties: {
        path: {
          type: "string",
          description:
            'The directory to list: relative to the workspace root ("." for the root), or an absolute path inside it.',
        },
        ignore: {
          type: "array",
          items: { type: "string" },
          description: 'Glob patterns of entries to leave out (gitignore syntax, such as "*.log").',
        },
      },
      required: ["path"],
      additionalProperties: false,
    },
    security: { network: "none", filesystem: "workspace", sideEffects: "none" },
    concurrencySafe: true,
    permission: { kind: "read", paths: (input) => [input.path ?? "."] },
    handler: async (input) => {
      const shown = echo(input.path);
      const resolved = await env.workspace.resolve(input.path);
      let dir: Awaited<ReturnType<typeof openDirectoryInside>>;
      try {
        dir = await openDirectoryInside(resolved, input.path);
      } catch (error) {
        if (error instanceof BuiltinToolError && /not a directory/.test(error.message))
          throw new BuiltinToolError(`${shown} is not a directory. Use Read to read a file.`);
        throw error;
      }
      let entries: Dirent[];
      try {
        // Read through the verified descriptor, not the path, so a swapped directory is not listed.
        entries = await readdir(dir.path, { withFileTypes: true });
      } catch (error) {
        if (codeOf(error) === "ENOTDIR")
          throw new BuiltinToolError(`${shown} is not a directory. Use Read to read a file.`);
        throw fsError(error, input.path);
      } finally {
        await dir.handle.close();
      }
      const skip = ignore().add(input.ignore ?? []);
      const prefix = resolved.relative === "" ? "" : `${resolved.relative}/`;
      const lines = entries
        .filter((entry) => !env.readDenied(prefix + entry.name))
        .filter((entry) => !skip.ignores(entry.isDirectory() ? `${entry.name}/` : entry.name))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        .map((entry) =>
          entry.isDirectory()
            ? `${entry.name}/`
            : entry.isSymbolicLink()
              ? `${entry.name} (symlink)`
              : entry.name,
        );
      const where = resolved.relative === "" ? "the workspace root" : resolved.relative;
      if (lines.length === 0) return `${where} is empty.`;
      if (lines.length <= LS_MAX_ENTRIES) return lines.join("\n");
      return `${lines.slice(0, LS_MAX_ENTRIES).join("\n")}\n\n[${lines.length - LS_MAX_ENTRIES} more entries not shown (${LS_MAX_ENTRIES} of ${lines.length}). Use Glob with a pattern to narrow down.]`;
    },
  });
}
