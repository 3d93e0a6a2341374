import { randomBytes } from "node:crypto";
import { constants, realpathSync, type Stats } from "node:fs";
import {
  type FileHandle,
  lstat,
  mkdir,
  open,
  readlink,
  realpath,
  rename,
  unlink,
} from "node:fs/promises";
import path from "node:path";
import { BuiltinToolError } from "./define.ts";
import type { BuiltinEnvironment, PathToolName, ResolvedPath, Workspace } from "./environment.ts";

/** Linux's own limit on symlink hops in one path resolution (MAXSYMLINKS). */
const MAX_SYMLINK_HOPS = 40;
/** Model-given paths are echoed in messages; a runaway one is cut. */
const MAX_ECHO = 200;

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

/**
 * What went wrong with a model-given path, for callers that react to one case (LS turning
 * "not a directory" into advice, Glob rewording "outside"): they test `code`, never the message.
 */
export type PathErrorCode =
  /** Leads outside the workspace (through "..", an absolute path or a symlink). */
  | "outside"
  /** A symlink was swapped in between resolving and opening. */
  | "changed"
  /** Write or Edit was given a symbolic link as the final component. */
  | "symlink"
  /** Not a usable path string (not a string, a NUL byte). */
  | "invalid"
  | "missing"
  | "loop"
  | "not-a-directory"
  | "is-a-directory"
  /** Any other file-system error (permissions, space, read-only, ...). */
  | "io";

/** A path refused by the workspace layer: a `BuiltinToolError` (its message goes to the model) with a code. */
export class WorkspacePathError extends BuiltinToolError {
  override name = "WorkspacePathError";
  readonly code: PathErrorCode;
  constructor(message: string, code: PathErrorCode) {
    super(message);
    this.code = code;
  }
}

/** True when `error` is a workspace path error with this code. */
export function isPathError(error: unknown, code: PathErrorCode): error is WorkspacePathError {
  return error instanceof WorkspacePathError && error.code === code;
}

/** The model's own string, safe to put in a message. */
export function echo(input: string): string {
  return input.length > MAX_ECHO ? `${input.slice(0, MAX_ECHO)}…` : input;
}

export function outsideError(input: string, how = ""): WorkspacePathError {
  return new WorkspacePathError(
    `${echo(input)} is outside the workspace${how}. Use a path relative to the workspace root, or an absolute path inside it.`,
    "outside",
  );
}

/** True when `relative` (from `path.relative`) stays inside its base (or is the base itself). */
export function isInside(relative: string): boolean {
  return relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

/** True when `target` is `root` or below it; both absolute, compared lexically (no symlinks). */
export function isWithin(root: string, target: string): boolean {
  return isInside(path.relative(root, target));
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

export function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * A file-system error as a message for the model: what went wrong with the path it gave, never
 * the host path the error object carries.
 */
export function fsError(error: unknown, input: string): BuiltinToolError {
  if (error instanceof BuiltinToolError) return error;
  const shown = echo(input);
  const fail = (message: string, code: PathErrorCode = "io") =>
    new WorkspacePathError(message, code);
  switch (codeOf(error)) {
    case "ENOENT":
      return fail(`${shown} does not exist.`, "missing");
    case "ELOOP":
      return fail(
        `${shown} cannot be resolved: too many levels of symbolic links (a loop, or a chain over ${MAX_SYMLINK_HOPS}).`,
        "loop",
      );
    case "ENOTDIR":
      return fail(`${shown}: a component of the path is not a directory.`, "not-a-directory");
    case "EISDIR":
      return fail(`${shown} is a directory.`, "is-a-directory");
    case "EACCES":
    case "EPERM":
      return fail(`${shown}: permission denied.`);
    case "ENXIO":
      return fail(`${shown} is not a regular file (a socket or device).`);
    case "ENOSPC":
      return fail(`${shown}: no space left on the device.`);
    case "EROFS":
      return fail(`${shown}: the file system is read-only.`);
    case "ENAMETOOLONG":
      return fail(`${shown}: the path is too long.`);
    default:
      return fail(`${shown}: ${codeOf(error) ?? "file system error"}.`);
  }
}

/** Where `/proc/self/fd` lets us name an open descriptor as a path (Linux). */
const procFd = (fd: number) => `/proc/self/fd/${fd}`;

/** The path the kernel has for an open descriptor, or undefined where /proc is not available. */
async function pathOfDescriptor(fd: number): Promise<string | undefined> {
  try {
    return await readlink(procFd(fd));
  } catch {
    return undefined;
  }
}

/**
 * Opens a resolved path and checks the descriptor is what was resolved: the final component is
 * opened with O_NOFOLLOW, and the kernel's path of the open descriptor must equal the canonical
 * path, so a symlink swapped in after `resolve` is caught. Without /proc, device and inode are
 * compared instead.
 */
export async function openInside(
  resolved: ResolvedPath,
  flags: number,
  input: string = resolved.relative || ".",
): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(resolved.absolute, flags | constants.O_NOFOLLOW);
  } catch (error) {
    if (codeOf(error) === "ELOOP") throw changedError(input);
    throw fsError(error, input);
  }
  try {
    const actual = await pathOfDescriptor(handle.fd);
    if (actual !== undefined) {
      if (actual !== resolved.absolute) throw changedError(input);
    } else {
      const [opened, named] = await Promise.all([handle.stat(), lstat(resolved.absolute)]);
      if (opened.dev !== named.dev || opened.ino !== named.ino) throw changedError(input);
    }
    return handle;
  } catch (error) {
    await handle.close();
    throw fsError(error, input);
  }
}

function changedError(input: string): WorkspacePathError {
  return new WorkspacePathError(
    `${echo(input)} changed while it was being opened (a symbolic link was swapped in). Try again.`,
    "changed",
  );
}

/**
 * Opens a directory of the workspace and returns a path that names it through its descriptor
 * (`/proc/self/fd/N` on Linux), so later operations cannot be redirected by a swapped parent.
 */
export async function openDirectoryInside(
  resolved: ResolvedPath,
  input: string,
): Promise<{ handle: FileHandle; path: string }> {
  const handle = await openInside(
    resolved,
    constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NONBLOCK,
    input,
  );
  const viaDescriptor = (await pathOfDescriptor(handle.fd)) !== undefined;
  return { handle, path: viaDescriptor ? procFd(handle.fd) : resolved.absolute };
}

/** The directory holding a resolved path (the root for a top-level entry). */
function parentOf(resolved: ResolvedPath): ResolvedPath {
  const relative = path.posix.dirname(resolved.relative);
  return { absolute: path.dirname(resolved.absolute), relative: relative === "." ? "" : relative };
}

/**
 * Opens a directory of the workspace like `openDirectoryInside`, creating it and its missing
 * parents first. Each directory is created through its parent's verified descriptor, so a symlink
 * swapped in on the way cannot make it land elsewhere.
 */
async function openOrCreateDirectory(
  dir: ResolvedPath,
  input: string,
): Promise<{ handle: FileHandle; path: string }> {
  try {
    return await openDirectoryInside(dir, input);
  } catch (error) {
    if (!isPathError(error, "missing") || dir.relative === "") throw error;
  }
  const parent = await openOrCreateDirectory(parentOf(dir), input);
  try {
    await mkdir(path.join(parent.path, path.basename(dir.absolute)));
  } catch (error) {
    if (codeOf(error) !== "EEXIST") throw fsError(error, input);
  } finally {
    await parent.handle.close();
  }
  return openDirectoryInside(dir, input);
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

/**
 * Writes a file atomically: parents created, a temp file created with O_EXCL in the same
 * directory, synced, then renamed over the target. The parent directory is opened and verified
 * to be the canonical parent of `resolved` before anything is written, and the temp file and the
 * rename go through its descriptor: the file replaced is exactly `resolved` (the path the caller
 * had rechecked), and whatever sits at the final component (a symlink swapped in included) is
 * replaced, never written through. Returns the new file's stats.
 */
export async function writeFileInside(
  resolved: ResolvedPath,
  data: string,
  input: string,
  mode = 0o666,
): Promise<Stats> {
  if (resolved.relative === "")
    throw new WorkspacePathError(`${echo(input)} is a directory.`, "is-a-directory");
  const name = path.basename(resolved.absolute);
  const dir = await openOrCreateDirectory(parentOf(resolved), input);
  const temp = path.join(dir.path, `.${name}.${randomBytes(6).toString("hex")}.skein-tmp`);
  let created = false;
  try {
    const file = await open(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      mode,
    );
    created = true;
    let stats: Stats;
    try {
      await file.writeFile(data, "utf8");
      await file.sync();
      stats = await file.stat();
    } finally {
      await file.close();
    }
    await rename(temp, path.join(dir.path, name));
    created = false;
    return stats;
  } catch (error) {
    throw fsError(error, input);
  } finally {
    if (created) await unlink(temp).catch(() => undefined);
    await dir.handle.close();
  }
}
