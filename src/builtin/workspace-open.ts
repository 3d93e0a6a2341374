/** Opening a resolved workspace path and checking the descriptor is the entry that was resolved. */
import { constants } from "node:fs";
import { type FileHandle, lstat, open, readlink } from "node:fs/promises";
import type { ResolvedPath } from "../tools/workspace.ts";
import { changedError, codeOf, fsError } from "./workspace-errors.ts";

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
