import { createHash } from "node:crypto";
import { constants, type Stats } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import type { ToolResultContentBlock } from "../core/messages.ts";
import { formatBytes, MAX_IMAGE_BYTES } from "../tools/images.ts";
import type { ToolContext } from "../tools/types.ts";
import { isWithin, type ResolvedPath } from "../tools/workspace.ts";
import { BuiltinToolError, defineBuiltin } from "./define.ts";
import type { BuiltinEnvironment } from "./environment.ts";
import { recordRead, sha256 } from "./read-records.ts";
import { recheckOpened } from "./workspace.ts";
import { echo, isPathError } from "./workspace-errors.ts";
import { openInside } from "./workspace-open.ts";

export const READ_DEFAULT_LIMIT = 2000;
export const READ_MAX_LINE_CHARS = 2000;
/** Text shown by one Read, and the largest file read whole without offset/limit. */
export const READ_MAX_BYTES = 256 * 1024;
/** Binary sniffing looks at the first 8 KiB, as git and ripgrep do. */
const SNIFF_BYTES = 8192;
/** Large reads: per-call overhead of async reads dominates when skipping through a huge file. */
const CHUNK_BYTES = 1024 * 1024;
/** Enough UTF-8 for READ_MAX_LINE_CHARS UTF-16 units (3 bytes each at most) and a CR. */
const MAX_LINE_BYTES = READ_MAX_LINE_CHARS * 3 + 4;
/**
 * A line shown cut that runs on past this many bytes ends the Read there (of a file not read to
 * its end): finding its end could mean scanning gigabytes (a sparse file's hole).
 */
const LONG_LINE_SCAN_BYTES = 16 * 1024 * 1024;

export interface ReadInput {
  file_path: string;
  offset?: number;
  limit?: number;
}

const kib = READ_MAX_BYTES / 1024;

export function readTool(env: BuiltinEnvironment) {
  return defineBuiltin<ReadInput>({
    name: "Read",
    description: `Reads a file of the workspace. Text comes back with line numbers (cat -n style: number, tab, line); PNG, JPEG, GIF and WebP images (up to 5 MB) come back as images. By default up to ${READ_DEFAULT_LIMIT} lines from the start; lines longer than ${READ_MAX_LINE_CHARS} characters are truncated; at most ${kib} KiB of text per call, so for larger files give offset and limit. Directories, devices, FIFOs and binary files are refused (use LS for directories). Reading a file is required before Edit or Write can change it.`,
    schema: {
      type: "object",
      properties: {
        file_path: {
          type: "string",
          description:
            "The file to read: relative to the workspace root, or an absolute path inside it.",
        },
        offset: {
          type: "integer",
          minimum: 0,
          description:
            "The line number to start reading from (1-based). Give it for files too large to read at once.",
        },
        limit: {
          type: "integer",
          minimum: 1,
          description: `The number of lines to read (default ${READ_DEFAULT_LIMIT}).`,
        },
      },
      required: ["file_path"],
      additionalProperties: false,
    },
    security: { network: "none", filesystem: "workspace", sideEffects: "none" },
    concurrencySafe: true,
    permission: { kind: "read", paths: (input) => [input.file_path] },
    handler: async (input, ctx) => {
      const resolved = await resolveForRead(env, input.file_path);
      // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
      const handle = await openInside(
        resolved,
        constants.O_RDONLY | constants.O_NONBLOCK,
        input.file_path,
      );
      try {
        return await readOpened(env, handle, resolved, input, ctx);
      } finally {
        await handle.close();
      }
    },
  });
}

/**
 * The path Read opens: inside the workspace, or an absolute path inside one of the read-only
 * folders (skills). Such a path's `relative` is the absolute path itself, so its read record never
 * stands for a workspace file.
 */
async function resolveForRead(
  env: BuiltinEnvironment,
  given: string,
): Promise<ResolvedPath & { outside?: true }> {
  try {
    return await env.workspace.resolve(given);
  } catch (error) {
    if (!isPathError(error, "outside") || typeof given !== "string" || !path.isAbsolute(given))
      throw error;
    const folder = env.readOnlyFolders?.find((candidate) =>
      isWithin(candidate.root, path.resolve(given)),
    );
    if (!folder) throw error;
    const inner = await folder.resolve(given);
    return { absolute: inner.absolute, relative: inner.absolute, outside: true };
  }
}

async function readOpened(
  env: BuiltinEnvironment,
  handle: FileHandle,
  resolved: ResolvedPath & { outside?: true },
  input: ReadInput,
  ctx: ToolContext,
): Promise<string | ToolResultContentBlock[]> {
  const shown = echo(input.file_path);
  const stats = await handle.stat();
  if (stats.isDirectory())
    throw new BuiltinToolError(
      `${shown} is a directory. Use LS to list it, or Glob to find files in it.`,
    );
  if (!stats.isFile())
    throw new BuiltinToolError(
      `${shown} is not a regular file (a FIFO, socket or device). Read reads regular files only.`,
    );
  // `openInside` checked the descriptor is `resolved`: that is the file actually opened. The gate
  // checked the path as it resolved then; a symlink swapped in since could lead elsewhere.
  // A file of a read-only folder outside the workspace: path rules name workspace paths only.
  if (!resolved.outside) recheckOpened(env, "Read", input.file_path, resolved);
  if (stats.size === 0) {
    recordRead(ctx, resolved, { mtimeMs: stats.mtimeMs, size: 0, sha256: sha256("") });
    return `${shown} exists but is empty.`;
  }
  const head = await readExactly(handle, 0, Math.min(SNIFF_BYTES, stats.size));
  const mediaType = imageType(head);
  if (mediaType !== undefined) return readImage(handle, resolved, stats, mediaType, shown, ctx);
  if (head.includes(0))
    throw new BuiltinToolError(
      `${shown} looks like a binary file (it contains NUL bytes). Read shows text files and PNG, JPEG, GIF and WebP images only.`,
    );
  return readText(handle, resolved, stats, input, ctx);
}

async function readImage(
  handle: FileHandle,
  resolved: ResolvedPath,
  stats: Stats,
  mediaType: string,
  shown: string,
  ctx: ToolContext,
): Promise<ToolResultContentBlock[]> {
  if (stats.size > MAX_IMAGE_BYTES)
    throw new BuiltinToolError(
      `${shown} is an image of ${formatBytes(stats.size)}; Read shows images up to ${formatBytes(MAX_IMAGE_BYTES)}.`,
    );
  const data = await readExactly(handle, 0, stats.size);
  recordRead(ctx, resolved, { mtimeMs: stats.mtimeMs, size: stats.size, sha256: sha256(data) });
  return [
    {
      type: "image",
      source: { type: "base64", media_type: mediaType, data: data.toString("base64") },
    },
  ];
}

async function readText(
  handle: FileHandle,
  resolved: ResolvedPath,
  stats: Stats,
  input: ReadInput,
  ctx: ToolContext,
): Promise<string> {
  const shown = echo(input.file_path);
  const explicit = input.offset !== undefined || input.limit !== undefined;
  const first = Math.max(1, input.offset ?? 1);
  const small = stats.size <= READ_MAX_BYTES;
  const scan = await scanLines(handle, {
    first,
    limit: input.limit ?? READ_DEFAULT_LIMIT,
    // A small file is counted to its end (total lines, content hash); a large one stops early.
    toEnd: small,
    size: stats.size,
    signal: ctx.signal,
  });
  recordRead(ctx, resolved, {
    mtimeMs: stats.mtimeMs,
    size: stats.size,
    ...(scan.sha256 !== undefined ? { sha256: scan.sha256 } : {}),
  });
  if (scan.lines.length === 0)
    return `${shown} has ${scan.totalLines ?? "fewer"} lines; offset ${first} is past the end.`;
  const text = scan.lines.join("\n");
  const last = first + scan.lines.length - 1;
  if (!small && !explicit)
    return `${text}\n\n[${shown} is ${formatBytes(stats.size)}, more than the ${kib} KiB Read shows at once: this is lines 1-${last} only. Use offset and limit to read other parts, or Grep to search it.]`;
  if (!scan.more) return text;
  const of = scan.totalLines !== undefined ? ` of ${scan.totalLines}` : "";
  const why = scan.hitByteCap ? ` (the ${kib} KiB per-call cap was reached)` : "";
  return `${text}\n\n[Showing lines ${first}-${last}${of}${why}. Use offset: ${last + 1} to read on.]`;
}

interface Scan {
  /** Formatted lines, "number<TAB>text". */
  lines: string[];
  /** More lines follow the last one shown. */
  more: boolean;
  hitByteCap: boolean;
  /** Known when the scan reached the end of the file. */
  totalLines?: number;
  /** Hash of the whole file, when the scan read all of it. */
  sha256?: string;
}

/**
 * Streams a file in fixed chunks: lines before `first` are only counted, at most
 * MAX_LINE_BYTES of a line are kept, so a 5 GB file or a 1 GB line never sits in memory.
 */
async function scanLines(
  handle: FileHandle,
  options: { first: number; limit: number; toEnd: boolean; size: number; signal: AbortSignal },
): Promise<Scan> {
  const { first, limit, toEnd, signal } = options;
  const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(4096, options.size)));
  // Only a file read to its end gets a hash: hashing a 5 GB file to skip lines would be waste.
  const hash = toEnd ? createHash("sha256") : undefined;
  const scan: Scan = { lines: [], more: false, hitByteCap: false };
  let outputChars = 0;
  let collecting = true;
  let lineNumber = 1;
  let kept: Buffer[] = [];
  let keptBytes = 0;
  let lineBytes = 0;
  let position = 0;

  const finishLine = (): void => {
    const line = formatLine(
      lineNumber,
      Buffer.concat(kept),
      lineBytes > keptBytes || keptBytes >= MAX_LINE_BYTES,
    );
    if (outputChars + line.length + 1 > READ_MAX_BYTES && scan.lines.length > 0) {
      scan.hitByteCap = true;
      scan.more = true;
      collecting = false;
      return;
    }
    scan.lines.push(line);
    outputChars += line.length + 1;
    if (scan.lines.length >= limit) collecting = false;
  };

  for (;;) {
    if (signal.aborted) throw new BuiltinToolError("Read was cancelled.");
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
    if (bytesRead === 0) break;
    const chunk = buffer.subarray(0, bytesRead);
    hash?.update(chunk);
    position += bytesRead;
    let from = 0;
    while (from < bytesRead) {
      const newline = chunk.indexOf(10, from);
      const stop = newline === -1 ? bytesRead : newline;
      if (collecting && lineNumber >= first && keptBytes < MAX_LINE_BYTES) {
        const piece = chunk.subarray(from, Math.min(stop, from + MAX_LINE_BYTES - keptBytes));
        kept.push(Buffer.from(piece));
        keptBytes += piece.length;
      }
      lineBytes += stop - from;
      // The last line wanted is already longer than shown: no need to find its end (a 1 GB line).
      // Nor for any line shown that runs on and on: the read stops with it.
      if (
        collecting &&
        !toEnd &&
        keptBytes >= MAX_LINE_BYTES &&
        (scan.lines.length + 1 >= limit || lineBytes > LONG_LINE_SCAN_BYTES)
      ) {
        finishLine();
        scan.more = true;
        return scan;
      }
      if (newline === -1) break;
      if (collecting && lineNumber >= first) finishLine();
      else if (!collecting) scan.more = true;
      lineNumber += 1;
      kept = [];
      keptBytes = 0;
      lineBytes = 0;
      from = newline + 1;
      if (!collecting && !toEnd) {
        scan.more ||= from < bytesRead || (await hasMore(handle, position));
        return scan;
      }
    }
  }
  // The end of the file: a last line without a newline still counts.
  if (lineBytes > 0) {
    if (collecting && lineNumber >= first) finishLine();
    else if (!collecting) scan.more = true;
  }
  scan.totalLines = lineBytes > 0 ? lineNumber : lineNumber - 1;
  scan.sha256 = hash?.digest("hex");
  return scan;
}

async function hasMore(handle: FileHandle, position: number): Promise<boolean> {
  const probe = Buffer.alloc(1);
  return (await handle.read(probe, 0, 1, position)).bytesRead > 0;
}

function formatLine(number: number, bytes: Buffer, bytesDropped: boolean): string {
  let text = bytes.toString("utf8");
  // A cut inside a UTF-8 sequence decodes to U+FFFD: drop it rather than show a false character.
  if (bytesDropped) text = text.replace(/\uFFFD$/, "");
  else if (text.endsWith("\r")) text = text.slice(0, -1);
  if (bytesDropped || text.length > READ_MAX_LINE_CHARS) {
    let cut = text.slice(0, READ_MAX_LINE_CHARS);
    // Never split a surrogate pair.
    if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
    text = `${cut}… [line truncated: longer than ${READ_MAX_LINE_CHARS} characters]`;
  }
  return `${String(number).padStart(6)}\t${text}`;
}

async function readExactly(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

/** The image media type from magic bytes (not the extension, which the model or a user may get wrong). */
function imageType(head: Buffer): string | undefined {
  if (head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return "image/png";
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return "image/jpeg";
  const ascii = head.subarray(0, 12).toString("latin1");
  if (ascii.startsWith("GIF87a") || ascii.startsWith("GIF89a")) return "image/gif";
  if (ascii.startsWith("RIFF") && ascii.slice(8, 12) === "WEBP") return "image/webp";
  return undefined;
}
