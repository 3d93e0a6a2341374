import path from "node:path";
import { globMeetsPattern } from "./glob-meet.ts";
import { pathMatcher } from "./paths.ts";

/**
 * Workspace paths whose change can run code later or redirect tools (git hooks and config, shell
 * start-up files, editor tasks, MCP and skein settings). Writes to them from Write and Edit always
 * ask, whatever the allow rules say, and the sandbox mounts them read-only. Matched without
 * regard to case and after the spellings some file systems ignore (`.GIT/config`, `.bashrc.`,
 * and the invisible code points HFS+ drops from names, as in `.g\u200cit`, which git guards too).
 */
const PROTECTED = [
  ".git",
  ".gitmodules",
  ".gitconfig",
  ".bashrc",
  ".bash_profile",
  ".profile",
  ".zshrc",
  ".mcp.json",
  ".vscode",
  ".idea",
  ".skein",
  ".claude",
  ".agent",
  ".husky",
];

// Unanchored: a nested `.git` (a submodule, a vendored repository) is as dangerous as the top one.
// Compiled by the first check, not by `import("skein")`: compiling loads the `ignore` library.
let matchers: ((path: string) => boolean)[] | undefined;

/** Names the sandbox mounts read-only where they exist at the top of the workspace. */
export const PROTECTED_NAMES: readonly string[] = PROTECTED;

/** Code points HFS+ ignores in file names (the list git's `is_hfs_dotgit` skips). */
const HFS_IGNORED = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;

/** Whether the workspace-relative path (any spelling: `./.git`, `a/../.git/`) is protected. */
export function isProtectedPath(given: string): boolean {
  matchers ??= PROTECTED.map((name) => pathMatcher(name, "deny"));
  // The matcher takes plain relative paths only (it throws on `./x`); outside paths are no entry.
  const relative = path.posix
    .normalize(given.split(path.sep).join("/"))
    .replace(/^\/+/, "")
    .replace(/\/+$/, "");
  if (relative === "" || relative === "." || relative === ".." || relative.startsWith("../"))
    return false;
  const visible = relative.replace(HFS_IGNORED, "");
  return matchers.some((match) => match(relative) || (visible !== relative && match(visible)));
}

/** Whether a workspace-relative shell glob (`.gi?/hooks/*`) can name a protected path. */
export function isProtectedGlob(glob: string): boolean {
  const visible = glob.replace(HFS_IGNORED, "");
  return PROTECTED.some(
    (name) => globMeetsPattern(glob, name) || (visible !== glob && globMeetsPattern(visible, name)),
  );
}
