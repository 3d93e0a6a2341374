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
import type { ResolvedPath, Workspace } from "./environment.ts";

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

/** The model's own string, safe to put in a message. */
export function echo(input: string): string {
  return input.length > MAX_ECHO ? `${input.slice(0, MAX_ECHO)}…` : input;
}

export function outsideError(input: string, how = ""): BuiltinToolError {
  return new BuiltinToolError(
    `${echo(input)} is outside the workspace${how}. Use a path relative to the workspace root, or an absolute path inside it.`,
  );
}

/** True when `relative` (from `path.relative`) stays inside its base. */
export function isInside(relative: string): boolean {
  return relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

function toResolved(root: string, absolute: string): ResolvedPath {
  return { absolute, relative: path.relative(root, absolute).split(path.sep).join("/") };
}

async function resolveInside(
  root: string,
  givenRoot: string,
  input: string,
): Promise<ResolvedPath> {
  if (typeof input !== "string") throw new BuiltinToolError("The path must be a string.");
  if (input.includes("\0")) throw new BuiltinToolError("The path contains a NUL byte.");
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
  let missing = false;
  while (rest.length > 0) {
    const part = rest.pop()!;
    if (part === ".") continue;
    if (part === "..") {
      // "missing/.." cannot be resolved by the kernel either.
      if (missing) throw new BuiltinToolError(`${echo(input)} does not exist.`);
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, part);
    if (missing) {
      current = next;
      continue;
    }
    let stats: Stats;
    try {
      stats = await lstat(next);
    } catch (error) {
      if (codeOf(error) !== "ENOENT") throw fsError(error, input);
      missing = true;
      current = next;
      continue;
    }
    if (stats.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS)
        throw fsError(Object.assign(new Error(), { code: "ELOOP" }), input);
      const target = await readlink(next);
      if (path.isAbsolute(target)) current = path.parse(target).root;
      rest.push(...target.split(path.sep).filter(Boolean).reverse());
      continue;
    }
    if (!stats.isDirectory() && rest.length > 0)
      throw fsError(Object.assign(new Error(), { code: "ENOTDIR" }), input);
    current = next;
  }
  return current;
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
  switch (codeOf(error)) {
    case "ENOENT":
      return new BuiltinToolError(`${shown} does not exist.`);
    case "ELOOP":
      return new BuiltinToolError(
        `${shown} cannot be resolved: too many levels of symbolic links (a loop, or a chain over ${MAX_SYMLINK_HOPS}).`,
      );
    case "ENOTDIR":
      return new BuiltinToolError(`${shown}: a component of the path is not a directory.`);
    case "EISDIR":
      return new BuiltinToolError(`${shown} is a directory.`);
    case "EACCES":
    case "EPERM":
      return new BuiltinToolError(`${shown}: permission denied.`);
    case "ENXIO":
      return new BuiltinToolError(`${shown} is not a regular file (a socket or device).`);
    case "ENOSPC":
      return new BuiltinToolError(`${shown}: no space left on the device.`);
    case "EROFS":
      return new BuiltinToolError(`${shown}: the file system is read-only.`);
    case "ENAMETOOLONG":
      return new BuiltinToolError(`${shown}: the path is too long.`);
    default:
      return new BuiltinToolError(`${shown}: ${codeOf(error) ?? "file system error"}.`);
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

function changedError(input: string): BuiltinToolError {
  return new BuiltinToolError(
    `${echo(input)} changed while it was being opened (a symbolic link was swapped in). Try again.`,
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

/**
 * Writes a file atomically: parents created, a temp file created with O_EXCL in the same
 * directory, synced, then renamed over the target. The rename works on the canonical path inside
 * the verified directory, so it replaces whatever sits at the final component (a symlink swapped
 * in included) and never writes through it. Returns the new file's stats.
 */
export async function writeFileInside(
  resolved: ResolvedPath,
  data: string,
  input: string,
  mode = 0o666,
): Promise<Stats> {
  if (resolved.relative === "") throw new BuiltinToolError(`${echo(input)} is a directory.`);
  const parentAbsolute = path.dirname(resolved.absolute);
  const parent: ResolvedPath = {
    absolute: parentAbsolute,
    relative:
      path.posix.dirname(resolved.relative) === "." ? "" : path.posix.dirname(resolved.relative),
  };
  const name = path.basename(resolved.absolute);
  try {
    await mkdir(parentAbsolute, { recursive: true });
  } catch (error) {
    throw fsError(error, input);
  }
  const dir = await openDirectoryInside(parent, input);
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
