import path from "node:path";
import { ConfigurationError } from "../core/errors.ts";
import { isInside, isWithin } from "../tools/workspace.ts";
import { compilePathPattern } from "./path-glob.ts";

/**
 * Path rules (`Read(src/**)`, `Edit(**\/*.env)`) use gitignore semantics relative to the
 * workspace root: a pattern without "/" matches at any depth, and a pattern that names a
 * directory covers everything under it. Dotfiles match. Deny and ask patterns match without
 * regard to case and of Unicode normal form, so `.GIT/config` cannot slip past `Edit(.git/**)` on
 * a case-insensitive disk.
 */
export function pathMatcher(
  pattern: string,
  behavior: "allow" | "ask" | "deny",
): (relative: string) => boolean {
  // Restrictive rules match broadly (any case, any spelling a file system treats as the same
  // file); allow rules match exactly, so no spelling trick widens what they grant.
  const broad = behavior !== "allow";
  // Unicode: a restrictive pattern and a path are compared in one normal form (NFC), so
  // `Read(café.env)` typed in NFC covers a file whose name is stored decomposed (NFD), as macOS
  // file systems store it.
  // Matched in time linear in the path (path-glob.ts): the path may be the model's, of any length.
  const matches = compilePathPattern(broad ? pattern.normalize("NFC") : pattern, broad);
  return (relative) => {
    const forms = broad ? pathForms(relative.normalize("NFC")) : [relative];
    return forms.some((form) => form !== "" && matches(form));
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
    .map((part) => trimDotsAndSpaces(part.replace(/:.*$/s, "")) || part)
    .join("/");
  return stripped === plain ? [plain] : [plain, stripped];
}

/** `part` without trailing dots and spaces; a loop, as `/[. ]+$/` takes quadratic time on a long run. */
function trimDotsAndSpaces(part: string): string {
  let end = part.length;
  while (end > 0 && (part[end - 1] === "." || part[end - 1] === " ")) end -= 1;
  return part.slice(0, end);
}

/**
 * A model's path as a workspace-relative path, lexically (no file system access); undefined when
 * it leads outside the root. The tools themselves refuse such paths; rules never widen the workspace.
 */
export function lexicalRelative(root: string, given: string): string | undefined {
  const relative = path.relative(root, path.resolve(root, given));
  return isInside(relative) ? relative.split(path.sep).join("/") : undefined;
}

/**
 * A rule's path pattern in the gitignore form `pathMatcher` reads, relative to the workspace:
 * `./x` and `/x` are anchored at the root, `//abs/path` and an absolute path inside the root
 * become anchored relative patterns. Patterns that could only name paths outside the workspace
 * (`~/...`, absolute paths elsewhere, `../...`) and gitignore negations are assembly errors: the
 * file tools refuse every outside path anyway, and a rule that silently matched nothing would
 * mislead.
 */
export function workspacePattern(pattern: string, root: string, rule: string): string {
  const outside = () =>
    new ConfigurationError(
      `${rule}: ${JSON.stringify(pattern)} names paths outside the workspace (the agent's cwd); path rules apply inside it, and the file tools refuse every path outside it. For Bash, the hardened preset's sandbox hides the home directory.`,
    );
  if (pattern.startsWith("!"))
    throw new ConfigurationError(
      `${rule}: ${JSON.stringify(pattern)} starts with "!"; negations are not supported in rules. Write a deny or allow rule for the paths you mean.`,
    );
  if (pattern.startsWith("~")) throw outside();
  if (/^\.\/*$/.test(pattern)) return "/**";
  if (pattern.startsWith("./")) return `/${pattern.replace(/^(?:\.\/+)+/, "")}`;
  const absolute = pattern.startsWith("//") ? pattern.slice(1) : pattern;
  if (absolute.startsWith("/") && (pattern.startsWith("//") || isWithin(root, absolute))) {
    if (!isWithin(root, absolute)) throw outside();
    const relative = path.relative(root, absolute).split(path.sep).join("/");
    return relative === "" ? "/**" : `/${relative}`;
  }
  if (pattern === ".." || pattern.startsWith("../")) throw outside();
  return pattern;
}
