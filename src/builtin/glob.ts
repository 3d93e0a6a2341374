import * as fs from "node:fs";
import path from "node:path";
import { isInside, type ResolvedPath, type Workspace } from "../tools/workspace.ts";
import { MATCH_STALL_MS, MatchTooSlowError, runBounded } from "./bounded-match.ts";
import { BuiltinToolError, defineBuiltin } from "./define.ts";
import { type BuiltinEnvironment, hiddenFor } from "./environment.ts";
import { hiddenNote } from "./workspace.ts";
import { echo, fsError, isPathError } from "./workspace-errors.ts";

export const GLOB_MAX_RESULTS = 100;
/** A crawl of a huge tree is stopped rather than left running. */
export const GLOB_TIMEOUT_MS = 30_000;
const MAX_GITIGNORE_BYTES = 1024 * 1024;
/** lstat in sync batches: ten times faster than one promise per file, yielding between batches. */
const STAT_BATCH = 2000;

export interface GlobInput {
  pattern: string;
  path?: string;
}

export function globTool(env: BuiltinEnvironment) {
  return defineBuiltin<GlobInput>({
    name: "Glob",
    description: `Finds files of the workspace by glob pattern (such as "**/*.ts" or "src/**/*.{ts,tsx}"), newest first by modification time. Files ignored by the workspace's .gitignore files and the .git directory are left out; symbolic links are not followed. At most ${GLOB_MAX_RESULTS} paths are returned, relative to the workspace root.`,
    schema: {
      type: "object",
      properties: {
        pattern: { type: "string", description: "The glob pattern to match files against." },
        path: {
          type: "string",
          description:
            "The directory to search in, relative to the workspace root (default: the root). Patterns are relative to it.",
        },
      },
      required: ["pattern"],
      additionalProperties: false,
    },
    security: { network: "none", filesystem: "workspace", sideEffects: "none" },
    concurrencySafe: true,
    permission: { kind: "read", paths: (input) => [input.path ?? "."] },
    handler: async (input, ctx) => {
      const isHidden = hiddenFor(env, ctx, "Glob");
      const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(GLOB_TIMEOUT_MS)]);
      const base = await searchBase(env.workspace, input);
      const root = env.workspace.root;
      const budget = new Budget(ctx.signal);
      let matches: string[];
      try {
        const found = await crawl(base.dir, base.rest, budget);
        const prefix = base.dir.relative === "" ? "" : `${base.dir.relative}/`;
        matches = await withoutGitignored(
          root,
          base.dir,
          found.map((match) => prefix + match),
          budget,
        );
      } catch (error) {
        if (error instanceof MatchTooSlowError) throw tooSlow(input.pattern, error);
        if (ctx.signal.aborted) throw new BuiltinToolError("Glob was cancelled.");
        throw error;
      }
      // Files a Read deny or ask rule covers are left out, and only counted.
      const candidates = matches.filter((relative) => !isHidden(relative));
      const hidden = matches.length - candidates.length;
      const dated = await modificationTimes(root, candidates, signal);
      dated.sort((a, b) => b.mtimeMs - a.mtimeMs || (a.path < b.path ? -1 : 1));
      const shown = await confirmInside(env.workspace, dated, GLOB_MAX_RESULTS);
      const notes: string[] = [];
      if (dated.length > GLOB_MAX_RESULTS && shown.length > 0)
        notes.push(
          `Showing the ${GLOB_MAX_RESULTS} most recently modified of ${dated.length} matches. Use a more specific pattern or path to narrow down.`,
        );
      if (hidden > 0) notes.push(hiddenNote(hidden, ["file", "files"]));
      if ((budget.stopped || signal.aborted) && !ctx.signal.aborted)
        shown.push(
          `[The search took over ${GLOB_TIMEOUT_MS / 1000} s and was stopped: results may be incomplete.]`,
        );
      const body = shown.length === 0 ? "No files found" : shown.join("\n");
      return notes.length === 0 ? body : `${body}\n\n[${notes.join(" ")}]`;
    },
  });
}

/**
 * Splits the pattern into its literal leading directories, resolved (and confined) like any
 * path, and the dynamic rest, which must not climb with "..".
 */
async function searchBase(
  workspace: Workspace,
  input: GlobInput,
): Promise<{ dir: ResolvedPath; rest: string }> {
  const { pattern } = input;
  if (pattern.includes("\0")) throw new BuiltinToolError("The pattern contains a NUL byte.");
  const segments = pattern.split("/");
  // Loaded on the first Glob (the matching itself runs in a worker): nothing at import.
  const { isDynamicPattern } = await import("tinyglobby");
  let literal = 0;
  while (literal < segments.length - 1 && !isDynamicPattern(segments[literal]!)) literal += 1;
  const rest = segments.slice(literal).join("/");
  // ".." as a segment or a brace/extglob alternative would climb out of the search directory.
  if (/(^|[/{,(|])\.\.($|[/},)|])/.test(rest))
    throw new BuiltinToolError(
      `${echo(pattern)}: ".." is not allowed in the dynamic part of a glob pattern. Give path to search another directory inside the workspace.`,
    );
  const start = input.path ?? ".";
  const leading = segments.slice(0, literal).join("/") || (pattern.startsWith("/") ? "/" : "");
  let dir: ResolvedPath;
  try {
    const from = await workspace.resolve(start);
    dir = leading === "" ? from : await workspace.resolve(path.resolve(from.absolute, leading));
  } catch (error) {
    if (isPathError(error, "outside"))
      throw new BuiltinToolError(
        `${echo(leading === "" ? start : pattern)} is outside the workspace. Glob searches inside the workspace only: use a pattern relative to it (or to path).`,
      );
    throw error;
  }
  return { dir, rest };
}

/**
 * The time of one Glob call, shared by its steps. Each step runs in the matcher worker: its crawl
 * stops by itself when the time is up (keeping what it found), and the worker is terminated if it
 * does not answer a stall period later (a match stuck in backtracking).
 */
class Budget {
  readonly #end = Date.now() + GLOB_TIMEOUT_MS;
  /** A crawl was cut short by the time limit. */
  stopped = false;
  constructor(readonly signal: AbortSignal) {}
  /** Time left for the crawl itself (at least a moment, so a late step still answers). */
  get crawlMs(): number {
    return Math.max(100, this.#end - Date.now());
  }
  get options() {
    return { signal: this.signal, limitMs: this.crawlMs + MATCH_STALL_MS };
  }
}

function tooSlow(pattern: string, error: MatchTooSlowError): BuiltinToolError {
  const when =
    error.reason === "stalled"
      ? `matching one path took over ${error.afterMs / 1000} s`
      : `matching took over ${error.afterMs / 1000} s`;
  return new BuiltinToolError(
    `The pattern ${echo(pattern)} is too complex to match: ${when}, so the search was stopped (wildcards in a row such as "*a*a*a*c", or nested extglobs, can take exponential time). Use a simpler pattern such as "**/*.ts" or "src/**/name*", or narrow the search with path.`,
  );
}

async function crawl(dir: ResolvedPath, pattern: string, budget: Budget): Promise<string[]> {
  try {
    const stats = await fs.promises.stat(dir.absolute);
    if (!stats.isDirectory())
      throw new BuiltinToolError(`${dir.relative || "."} is not a directory.`);
  } catch (error) {
    if (error instanceof BuiltinToolError) throw error;
    return [];
  }
  let found: { paths: string[]; stopped: boolean };
  try {
    found = await runBounded(
      "glob",
      {
        patterns: [pattern],
        options: {
          cwd: dir.absolute,
          dot: true,
          onlyFiles: true,
          followSymbolicLinks: false,
          expandDirectories: false,
          ignore: ["**/.git/**"],
        },
        confine: dir.absolute,
        timeoutMs: budget.crawlMs,
      },
      budget.options,
    );
  } catch (error) {
    if (error instanceof MatchTooSlowError || budget.signal.aborted) throw error;
    throw fsError(error, pattern);
  }
  if (found.stopped) budget.stopped = true;
  // Belt and braces: tinyglobby also accepts patterns that climb; keep only what is below.
  return found.paths.filter((match) => isInside(path.normalize(match)));
}

/**
 * The workspace-relative `paths` that the .gitignore files of the workspace do not ignore: those
 * of the search directory's ancestors up to the root and those below it, deeper ones overriding.
 * The files are the workspace's, so the model may have written them: they are matched in the
 * worker too.
 */
async function withoutGitignored(
  root: string,
  dir: ResolvedPath,
  paths: string[],
  budget: Budget,
): Promise<string[]> {
  if (paths.length === 0) return paths;
  const ancestors = [""];
  for (const part of dir.relative === "" ? [] : dir.relative.split("/"))
    ancestors.push(ancestors.length === 1 ? part : `${ancestors.at(-1)}/${part}`);
  const below = await runBounded(
    "glob",
    {
      patterns: ["**/.gitignore"],
      options: {
        cwd: dir.absolute,
        dot: true,
        followSymbolicLinks: false,
        expandDirectories: false,
        ignore: ["**/.git/**"],
      },
      confine: dir.absolute,
      timeoutMs: budget.crawlMs,
    },
    budget.options,
  ).catch((error: unknown) => {
    if (error instanceof MatchTooSlowError || budget.signal.aborted) throw error;
    return { paths: [] as string[], stopped: false };
  });
  const prefix = dir.relative === "" ? "" : `${dir.relative}/`;
  const dirs = new Set([
    ...ancestors,
    ...below.paths
      .map((file) => path.posix.dirname(prefix + file))
      .map((d) => (d === "." ? "" : d)),
  ]);
  const rules: [string, string][] = [];
  for (const d of dirs) {
    const text = await readGitignore(path.join(root, d, ".gitignore"));
    if (text !== undefined) rules.push([d, text]);
  }
  if (rules.length === 0) return paths;
  let ignored: boolean[];
  try {
    ignored = await runBounded("gitignore", { rules, paths }, budget.options);
  } catch (error) {
    if (!(error instanceof MatchTooSlowError)) throw error;
    throw new BuiltinToolError(
      `The workspace's .gitignore files hold a pattern too complex to match against these paths (matching was stopped after ${error.afterMs / 1000} s; several "**" against deep directories can take that long). Simplify the .gitignore patterns, or search a narrower path.`,
    );
  }
  return paths.filter((_, i) => !ignored[i]);
}

async function readGitignore(file: string): Promise<string | undefined> {
  try {
    const stats = await fs.promises.lstat(file);
    if (!stats.isFile() || stats.size > MAX_GITIGNORE_BYTES) return undefined;
    return await fs.promises.readFile(file, "utf8");
  } catch {
    return undefined;
  }
}

async function modificationTimes(
  root: string,
  relatives: string[],
  signal: AbortSignal,
): Promise<{ path: string; mtimeMs: number }[]> {
  const dated: { path: string; mtimeMs: number }[] = [];
  for (let i = 0; i < relatives.length; i += STAT_BATCH) {
    if (signal.aborted) break;
    for (const relative of relatives.slice(i, i + STAT_BATCH)) {
      const stats = fs.lstatSync(path.join(root, relative), { throwIfNoEntry: false });
      if (stats?.isFile()) dated.push({ path: relative, mtimeMs: stats.mtimeMs });
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  return dated;
}

/** Re-resolves each result as it is shown: one that now leads outside (a swapped symlink) is dropped. */
async function confirmInside(
  workspace: Workspace,
  dated: { path: string }[],
  max: number,
): Promise<string[]> {
  const shown: string[] = [];
  for (const { path: relative } of dated) {
    if (shown.length >= max) break;
    try {
      await workspace.resolve(relative);
      shown.push(relative);
    } catch {
      // Outside or gone: not listed.
    }
  }
  return shown;
}
