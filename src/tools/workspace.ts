// The workspace as tools, the engine and the rules see it: a root, the one way a model's path
// becomes a real one, and the containment tests they share. builtin/workspace.ts makes one.
import path from "node:path";

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

/** True when `relative` (from `path.relative`) stays inside its base (or is the base itself). */
export function isInside(relative: string): boolean {
  return relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

/** True when `target` is `root` or below it; both absolute, compared lexically (no symlinks). */
export function isWithin(root: string, target: string): boolean {
  return isInside(path.relative(root, target));
}
