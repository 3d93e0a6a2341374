import type { BackgroundTasks } from "../tools/types.ts";

/** A path a built-in may touch: canonical, and inside the workspace. */
export interface ResolvedPath {
  /** Canonical absolute path (symlinks of existing components resolved). */
  absolute: string;
  /** The same path relative to the workspace root, with "/" separators ("" for the root). */
  relative: string;
}

/** The workspace root and the one way built-ins turn a model's path into a real one. */
export interface Workspace {
  /** Canonical absolute path of the root (the agent's `cwd`). */
  readonly root: string;
  /**
   * Resolves a model-given path, relative to the root or absolute inside it. Throws
   * `BuiltinToolError` when it leads outside (through `..`, an absolute path or a symlink),
   * without echoing the host path.
   */
  resolve(path: string): Promise<ResolvedPath>;
}

/** What every built-in tool of one agent shares. */
export interface BuiltinEnvironment {
  workspace: Workspace;
  /** True when a `Read(...)` deny rule covers this workspace-relative path: LS, Glob and Grep leave it out. */
  readDenied(relativePath: string): boolean;
  /** `Read(...)` deny patterns, for a sandbox to mask the files they name. */
  readDenyPatterns: readonly string[];
  /** Background tasks of this agent (Bash `run_in_background`, BashOutput, KillShell). */
  background: BackgroundTasks;
  /** Set under the hardened preset: Bash runs inside it, or refuses when it is unavailable. */
  sandboxed: boolean;
}
