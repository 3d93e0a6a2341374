/** The workspace: model-given paths resolved and confined to its root; path checks the tools share. */
import { realpathSync, type Stats } from "node:fs";
import { lstat, readlink, realpath } from "node:fs/promises";
import path from "node:path";
import { isInside, type ResolvedPath, type Workspace } from "../tools/workspace.ts";
import { BuiltinToolError } from "./define.ts";
import type { BuiltinEnvironment, PathToolName } from "./environment.ts";
import {
  changedError,
  codeOf,
  echo,
  fsError,
  MAX_SYMLINK_HOPS,
  outsideError,
  WorkspacePathError,
} from "./workspace-errors.ts";

/**
 * The workspace rooted at `root` (made canonical once). `resolve` accepts paths relative to the
 * root and absolute paths inside it, resolves every symlink of the existing part of the path and
 * checks containment on the canonical result with `path.relative`, never a string prefix.
 */
export function createWorkspace(root: string): Workspace {
  const given = path.resolve(root);
  const canonical = realpathSync.native(given);
  return {
    root: canonical,
    resolve: (input) => resolveInside(canonical, given, input),
  };
}

function toResolved(root: string, absolute: string): ResolvedPath {
  return { absolute, relative: path.relative(root, absolute).split(path.sep).join("/") };
}

async function resolveInside(
  root: string,
  givenRoot: string,
  input: string,
): Promise<ResolvedPath> {
  if (typeof input !== "string")
    throw new WorkspacePathError("The path must be a string.", "invalid");
  if (input.includes("\0"))
    throw new WorkspacePathError("The path contains a NUL byte.", "invalid");
  const lexical = path.resolve(root, input === "" ? "." : input);
  // Refuse what is lexically outside before touching the file system: no probing of host paths.
  // The root as the caller spelled it counts too (a symlinked /tmp, say); canonicalising decides.
  if (!isInside(path.relative(root, lexical)) && !isInside(path.relative(givenRoot, lexical)))
    throw outsideError(input);
  const canonical = await canonicalize(lexical, input);
  if (!isInside(path.relative(root, canonical)))
    throw outsideError(input, " (through a symbolic link)");
  return toResolved(root, canonical);
}

/**
 * realpath that tolerates a missing tail: symlinks of every existing component are resolved (a
 * dangling link too, so writing through it lands where it points), and the missing rest appended.
 */
async function canonicalize(absolute: string, input: string): Promise<string> {
  try {
    return await realpath(absolute);
  } catch (error) {
    if (codeOf(error) !== "ENOENT") throw fsError(error, input);
  }
  const rest = absolute.split(path.sep).filter(Boolean).reverse();
  let current = path.parse(absolute).root;
  let hops = 0;
  // Past the first missing component, the rest is only collected (joined once at the end: joining
  // part by part is quadratic, seconds for a 20,000-character path).
  let missing: string[] | undefined;
  while (rest.length > 0) {
    const part = rest.pop()!;
    if (part === ".") continue;
    if (part === "..") {
      // "missing/.." cannot be resolved by the kernel either.
      if (missing) throw new WorkspacePathError(`${echo(input)} does not exist.`, "missing");
      current = path.dirname(current);
      continue;
    }
    if (missing) {
      missing.push(part);
      continue;
    }
    const next = path.join(current, part);
    let stats: Stats;
    try {
      stats = await lstat(next);
    } catch (error) {
      if (codeOf(error) !== "ENOENT") throw fsError(error, input);
      missing = [part];
      continue;
    }
    if (stats.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS)
        throw fsError(Object.assign(new Error(), { code: "ELOOP" }), input);
      let target: string;
      try {
        target = await readlink(next);
      } catch (error) {
        // EINVAL: no longer a link (swapped since the lstat). The raw error names the host path.
        throw codeOf(error) === "EINVAL" ? changedError(input) : fsError(error, input);
      }
      if (path.isAbsolute(target)) current = path.parse(target).root;
      rest.push(...target.split(path.sep).filter(Boolean).reverse());
      continue;
    }
    if (!stats.isDirectory() && rest.length > 0)
      throw fsError(Object.assign(new Error(), { code: "ENOTDIR" }), input);
    current = next;
  }
  return missing ? path.join(current, ...missing) : current;
}

/**
 * The target of Write or Edit: resolved like any path, and refused when its final component is a
 * symbolic link (live or dangling, even one leading inside). Writes never follow a link at the
 * final component; the message names the model's path only, never where the link leads.
 * The result is the canonical parent joined with the final name, the very entry examined.
 */
export async function resolveWriteTarget(
  workspace: Workspace,
  input: string,
): Promise<ResolvedPath> {
  // Outside (also through the final link), loops, a NUL byte: refused here, as for any path.
  const resolved = await workspace.resolve(input);
  const name = path.basename(input);
  // "", "." and "..": the root or a directory, refused as such when opened.
  if (name === "" || name === "." || name === "..") return resolved;
  const parent = await workspace.resolve(path.dirname(input));
  const absolute = path.join(parent.absolute, name);
  let stats: Stats | undefined;
  try {
    stats = await lstat(absolute);
  } catch (error) {
    if (codeOf(error) !== "ENOENT") throw fsError(error, input);
  }
  if (stats?.isSymbolicLink())
    throw new WorkspacePathError(
      `${echo(input)} is a symbolic link. Write and Edit never write through a link: write to its target path directly.`,
      "symlink",
    );
  return { absolute, relative: parent.relative === "" ? name : `${parent.relative}/${name}` };
}

/**
 * Asks the permission layer about the path a tool actually opened or will replace (canonical,
 * workspace-relative): the gate checked the path as it resolved then, and a symlink swapped in
 * since could lead elsewhere. Throws the gate's reason when it refuses.
 */
export function recheckOpened(
  env: Pick<BuiltinEnvironment, "recheck">,
  tool: PathToolName,
  given: string,
  opened: ResolvedPath,
): void {
  const refusal = env.recheck(tool, given, opened.relative);
  if (refusal !== undefined) throw new BuiltinToolError(refusal);
}

/**
 * The note LS, Glob and Grep add when permission rules hid entries: how many, never which.
 * `noun` is singular and plural ("entry", "entries").
 */
export function hiddenNote(count: number, noun: [string, string]): string {
  const [one, many] = noun;
  return count === 1
    ? `1 ${one} hidden by permission rules; read it with Read, which asks or refuses.`
    : `${count} ${many} hidden by permission rules; read them with Read, which asks or refuses.`;
}
