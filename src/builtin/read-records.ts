import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { lstat } from "node:fs/promises";
import type { ToolContext } from "../tools/types.ts";
import type { ResolvedPath } from "../tools/workspace.ts";
import { BuiltinToolError } from "./define.ts";
import { codeOf, echo, fsError } from "./workspace-errors.ts";
import { openInside } from "./workspace-open.ts";

/**
 * What Read saw of a file, kept in `ctx.runData` so it travels with a paused run: Edit and Write
 * refuse a file this run never read, or one that changed since.
 */
export interface ReadRecord {
  mtimeMs: number;
  size: number;
  /** Hex SHA-256 of the whole content; only when Read saw the whole file. */
  sha256?: string;
}

/** The state of a file now, to compare with its record. */
export interface FileState {
  mtimeMs: number;
  size: number;
  /** The whole content, when the caller has it (the hash is compared only then). */
  content?: Buffer;
}

export function readKey(relative: string): string {
  return `skein.read:${relative}`;
}

export function sha256(data: Buffer | string): string {
  return createHash("sha256").update(data).digest("hex");
}

export function recordRead(ctx: ToolContext, resolved: ResolvedPath, record: ReadRecord): void {
  const value: ReadRecord = { mtimeMs: record.mtimeMs, size: record.size };
  if (record.sha256 !== undefined) value.sha256 = record.sha256;
  ctx.runData.set(readKey(resolved.relative), value);
}

/** The record for a path, or undefined when there is none or it is malformed. */
export function readRecordOf(ctx: ToolContext, resolved: ResolvedPath): ReadRecord | undefined {
  const value = ctx.runData.get(readKey(resolved.relative));
  if (typeof value !== "object" || value === null) return undefined;
  const { mtimeMs, size, sha256: hash } = value as Record<string, unknown>;
  if (typeof mtimeMs !== "number" || typeof size !== "number") return undefined;
  return typeof hash === "string" ? { mtimeMs, size, sha256: hash } : { mtimeMs, size };
}

/**
 * Throws unless this run read the file and it has not changed since: same size, and same mtime
 * or, when the whole content was hashed, same content (a `touch` alone is not a change). When
 * `current` is not given, the file is opened and examined here.
 */
export async function assertFresh(
  ctx: ToolContext,
  resolved: ResolvedPath,
  current?: FileState,
  input: string = resolved.relative,
): Promise<void> {
  const record = readRecordOf(ctx, resolved);
  if (record === undefined)
    throw new BuiltinToolError(
      `${echo(input)} has not been read in this run. Read it first, then retry, so that changes are made to what you have seen.`,
    );
  const state = current ?? (await stateOf(resolved, input, record));
  const sameHash =
    record.sha256 !== undefined && state.content !== undefined
      ? sha256(state.content) === record.sha256
      : undefined;
  const fresh =
    state.size === record.size &&
    (state.mtimeMs === record.mtimeMs ? sameHash !== false : sameHash === true);
  if (!fresh)
    throw new BuiltinToolError(
      `${echo(input)} has changed since it was last read (by the user, a command or another tool). Read it again, then retry.`,
    );
}

async function stateOf(
  resolved: ResolvedPath,
  input: string,
  record: ReadRecord,
): Promise<FileState> {
  const handle = await openInside(resolved, constants.O_RDONLY | constants.O_NONBLOCK, input);
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new BuiltinToolError(`${echo(input)} is not a regular file.`);
    const state: FileState = { mtimeMs: stats.mtimeMs, size: stats.size };
    // The hash decides only at equal size, so a grown file is never read whole here.
    if (record.sha256 !== undefined && stats.size === record.size)
      state.content = await handle.readFile();
    return state;
  } finally {
    await handle.close();
  }
}

/**
 * The content of a file Write or Edit is about to change, as text: only valid UTF-8 is text.
 * A binary or otherwise non-UTF-8 file is refused, because its snapshot (a string) and the new
 * content (a string written as UTF-8) could not hold its bytes: undo would lose them.
 */
export function textOf(content: Buffer, input: string): string {
  const text = content.toString("utf8");
  if (!Buffer.from(text, "utf8").equals(content))
    throw new BuiltinToolError(
      `${echo(input)} is a binary file (not valid UTF-8 text): skein's Write and Edit handle text files only.`,
    );
  return text;
}

/** Write and Edit read the whole file they change (to compare, snapshot and edit it): bounded. */
export const EDIT_MAX_BYTES = 10 * 1024 * 1024;

/**
 * The current content and state of a file Write or Edit is about to change, or null when it
 * does not exist. Refuses directories, devices and files over EDIT_MAX_BYTES.
 */
export async function loadCurrent(
  resolved: ResolvedPath,
  input: string,
): Promise<{ content: Buffer; mtimeMs: number; size: number; mode: number } | null> {
  try {
    await lstat(resolved.absolute);
  } catch (error) {
    if (codeOf(error) === "ENOENT") return null;
    throw fsError(error, input);
  }
  const handle = await openInside(resolved, constants.O_RDONLY | constants.O_NONBLOCK, input);
  try {
    const stats = await handle.stat();
    if (stats.isDirectory()) throw new BuiltinToolError(`${echo(input)} is a directory.`);
    if (!stats.isFile())
      throw new BuiltinToolError(
        `${echo(input)} is not a regular file (a FIFO, socket or device).`,
      );
    if (stats.size > EDIT_MAX_BYTES)
      throw new BuiltinToolError(
        `${echo(input)} is ${stats.size} bytes; Write and Edit change files up to ${EDIT_MAX_BYTES / 1024 / 1024} MiB.`,
      );
    const content = await handle.readFile();
    return { content, mtimeMs: stats.mtimeMs, size: stats.size, mode: stats.mode & 0o7777 };
  } finally {
    await handle.close();
  }
}
