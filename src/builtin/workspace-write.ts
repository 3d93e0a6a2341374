/** Writing inside the workspace: missing directories created and files replaced atomically. */
import { randomBytes } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { type FileHandle, mkdir, open, rename, unlink } from "node:fs/promises";
import path from "node:path";
import type { ResolvedPath } from "../tools/workspace.ts";
import { codeOf, echo, fsError, isPathError, WorkspacePathError } from "./workspace-errors.ts";
import { openDirectoryInside } from "./workspace-open.ts";

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
