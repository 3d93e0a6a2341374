import type { BackgroundTasks } from "../tools/types.ts";
import { SEARCH_FILTER } from "../tools/types.ts";
import type { Workspace } from "../tools/workspace.ts";

/** The built-ins that open one file the model names, and recheck it once opened. */
export type PathToolName = "Read" | "Write" | "Edit";

/** What every built-in tool of one agent shares. */
export interface BuiltinEnvironment {
  workspace: Workspace;
  /**
   * True when a deny or ask rule covers this workspace-relative path for the search tool `tool`
   * (a `Read(...)` rule, or one naming that tool, such as `Grep(secrets/**)`): LS, Glob and Grep
   * leave it out (reading it takes a call the rules refuse or ask about).
   */
  hiddenFromSearch(relativePath: string, tool: "LS" | "Glob" | "Grep"): boolean;
  /**
   * Checks the path a file tool actually opened (canonical, workspace-relative) against the rules.
   * The gate checked the path as given and as it resolved then; a symlink swapped in since could
   * lead elsewhere. Returns why the call must stop, or undefined when the opened path is fine.
   */
  recheck(tool: PathToolName, given: string, opened: string): string | undefined;
  /** `Read(...)` deny patterns, for a sandbox to mask the files they name. */
  readDenyPatterns: readonly string[];
  /** Background tasks of this agent (Bash `run_in_background`, BashOutput, KillShell). */
  background: BackgroundTasks;
  /** Set under the hardened preset: Bash runs inside it, or refuses when it is unavailable. */
  sandboxed: boolean;
  /**
   * Folders outside the workspace that Read may read, read-only (the agent's skill folders): an
   * absolute path inside one is read there, symlinks leading out of it refused. The sandbox mounts
   * them read-only. Nothing else outside the workspace is readable.
   */
  readOnlyFolders?: readonly Workspace[];
}

/** Whether a search tool leaves this path out: the agent's own rules, and those the run adds. */
export function hiddenFor(
  env: BuiltinEnvironment,
  ctx: object,
  tool: "LS" | "Glob" | "Grep",
): (relativePath: string) => boolean {
  const more = (ctx as { [SEARCH_FILTER]?: (relativePath: string, tool: string) => boolean })[
    SEARCH_FILTER
  ];
  return more
    ? (relative) => env.hiddenFromSearch(relative, tool) || more(relative, tool)
    : (relative) => env.hiddenFromSearch(relative, tool);
}
