import type { Dirent } from "node:fs";
import { readdir } from "node:fs/promises";
import { MatchTooSlowError, runBounded } from "./bounded-match.ts";
import { BuiltinToolError, defineBuiltin } from "./define.ts";
import { type BuiltinEnvironment, hiddenFor } from "./environment.ts";
import { hiddenNote } from "./workspace.ts";
import { codeOf, echo, fsError, isPathError } from "./workspace-errors.ts";
import { openDirectoryInside } from "./workspace-open.ts";

export const LS_MAX_ENTRIES = 1000;
/** Time for matching the entries against the `ignore` patterns. */
const IGNORE_LIMIT_MS = 30_000;

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
    permission: { kind: "read", paths: (input) => [input.path] },
    handler: async (input, ctx) => {
      const isHidden = hiddenFor(env, ctx, "LS");
      const shown = echo(input.path);
      const resolved = await env.workspace.resolve(input.path);
      let dir: Awaited<ReturnType<typeof openDirectoryInside>>;
      try {
        dir = await openDirectoryInside(resolved, input.path);
      } catch (error) {
        if (isPathError(error, "not-a-directory"))
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
      const prefix = resolved.relative === "" ? "" : `${resolved.relative}/`;
      const wanted = await withoutIgnored(entries, input.ignore ?? [], ctx.signal);
      // Entries a Read deny or ask rule covers are left out, and only counted.
      const visible = wanted.filter((entry) => !isHidden(prefix + entry.name));
      const hidden = wanted.length - visible.length;
      const lines = visible
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        .map((entry) =>
          entry.isDirectory()
            ? `${entry.name}/`
            : entry.isSymbolicLink()
              ? `${entry.name} (symlink)`
              : entry.name,
        );
      const where = resolved.relative === "" ? "the workspace root" : resolved.relative;
      const notes: string[] = [];
      if (lines.length > LS_MAX_ENTRIES)
        notes.push(
          `${lines.length - LS_MAX_ENTRIES} more entries not shown (${LS_MAX_ENTRIES} of ${lines.length}). Use Glob with a pattern to narrow down.`,
        );
      if (hidden > 0) notes.push(hiddenNote(hidden, ["entry", "entries"]));
      const body =
        lines.length === 0
          ? hidden > 0
            ? `${where} has no entries to show.`
            : `${where} is empty.`
          : lines.slice(0, LS_MAX_ENTRIES).join("\n");
      return notes.length === 0 ? body : `${body}\n\n[${notes.join(" ")}]`;
    },
  });
}

/**
 * The entries the model's `ignore` patterns leave in. The library guards its expressions against
 * backtracking on one name by rewriting them, a defence of its own that no type checks; the
 * patterns are the model's, so they are matched in the worker of `bounded-match.ts`, where no
 * pattern can stop the process.
 */
async function withoutIgnored(
  entries: Dirent[],
  patterns: string[],
  signal: AbortSignal,
): Promise<Dirent[]> {
  if (patterns.length === 0 || entries.length === 0) return entries;
  const names = entries.map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name));
  let ignored: boolean[];
  try {
    ignored = await runBounded(
      "ignored",
      { patterns, paths: names },
      {
        signal,
        limitMs: IGNORE_LIMIT_MS,
      },
    );
  } catch (error) {
    if (error instanceof MatchTooSlowError)
      throw new BuiltinToolError(
        `The ignore patterns are too complex to match: matching took over ${error.afterMs / 1000} s and was stopped (wildcards in a row such as "*?*?*?c" can take exponential time). Use simpler patterns such as "*.log" or "build/".`,
      );
    if (signal.aborted) throw new BuiltinToolError("LS was cancelled.");
    throw new BuiltinToolError(`ignore: ${(error as Error).message}`);
  }
  return entries.filter((_, i) => !ignored[i]);
}
