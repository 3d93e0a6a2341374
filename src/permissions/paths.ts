import path from "node:path";
import ignore, { type Ignore } from "ignore";

/**
 * Path rules (`Read(src/**)`, `Edit(**\/*.env)`) use gitignore semantics relative to the
 * workspace root: a pattern without "/" matches at any depth, and a pattern that names a
 * directory covers everything under it. Dotfiles match. Deny and ask patterns match without
 * regard to case, so `.GIT/config` cannot slip past `Edit(.git/**)` on a case-insensitive disk.
 */
export function pathMatcher(
  pattern: string,
  behavior: "allow" | "ask" | "deny",
): (relative: string) => boolean {
  // Restrictive rules match broadly (any case, any spelling a file system treats as the same
  // file); allow rules match exactly, so no spelling trick widens what they grant.
  const broad = behavior !== "allow";
  const rules: Ignore = ignore({ ignorecase: broad }).add(pattern);
  return (relative) => {
    const forms = broad ? pathForms(relative) : [relative];
    return forms.some((form) => form !== "" && rules.ignores(form));
  };
}

/**
 * The forms a workspace-relative path is matched in: as given, and with what some file systems
 * ignore removed (trailing dots and spaces of a component, NTFS stream suffixes such as
 * `::$DATA`), so `.env.` and `.env::$DATA` meet a rule for `.env`.
 */
export function pathForms(relative: string): string[] {
  const plain = relative.split(path.sep).join("/");
  const stripped = plain
    .split("/")
    .map((part) => part.replace(/:.*$/s, "").replace(/[. ]+$/, "") || part)
    .join("/");
  return stripped === plain ? [plain] : [plain, stripped];
}

/**
 * A model's path as a workspace-relative path, lexically (no file system access); undefined when
 * it leads outside the root. The tools themselves refuse such paths; rules never widen the workspace.
 */
export function lexicalRelative(root: string, given: string): string | undefined {
  const absolute = path.resolve(root, given);
  const relative = path.relative(root, absolute);
  if (relative === ".." || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative))
    return undefined;
  return relative.split(path.sep).join("/");
}
