/**
 * Finding the protected entries (`.git`, `.vscode`, `.mcp.json`... at any depth) of a workspace
 * before a sandboxed command, so the sandbox mounts them read-only, and after it, so those the
 * command created are removed (`sweepProtected`). A mount needs an existing entry to cover:
 * below the top level (where placeholders stand in for missing names), nothing stops a command
 * from creating `sub/.git`, so the sweep is what removes it when the command ends.
 *
 * The walk is breadth first and does not follow symlinks, enter protected entries (they are
 * read-only, or removed whole) or masked paths. It stops after `maxDirs` directories: deeper
 * ones of a bigger workspace are not guarded, and the sweep skips them too, so that it never
 * mistakes one of their entries for the command's.
 */
import type { Dirent } from "node:fs";
import { lstat, readdir, realpath, rm } from "node:fs/promises";
import { join } from "node:path";
import { isProtectedPath } from "../permissions/protected.ts";

/** A protected entry as seen by a scan. */
export interface EntryState {
  /** `dev:ino`: the file itself, wherever a rename of its parent moved it. */
  id: string;
  /** A symlink: then what it leads to matters too. */
  link: boolean;
  /** Canonical target, or undefined when it did not resolve (a dangling symlink). */
  canonical: string | undefined;
  /** Last status change (ms): creating, renaming or linking it sets this to now. */
  ctimeMs: number;
}

export interface ProtectedScan {
  root: string;
  /** When the scan started (ms since the epoch). */
  startedAt: number;
  /** Protected entries by workspace-relative path. */
  entries: Map<string, EntryState>;
  /** Directories (relative, "" for the root) left unread because of the limit. */
  unwalked: Set<string>;
  /** Absolute directories not entered (masked: the command cannot write there). */
  skip: ReadonlySet<string>;
}

export interface ScanOptions {
  /** Absolute directories not to enter (masked: the command cannot write there). */
  skip?: ReadonlySet<string>;
  /** At most this many directories are read. */
  maxDirs: number;
  /** The scan before the command: its unread and skipped directories are not read now either. */
  before?: ProtectedScan;
}

/** Directories read at once (the walk runs on libuv's pool, never blocking the event loop). */
const PARALLEL_READS = 16;

/** Protected entries of `root`, breadth first (see the file comment for what is skipped). */
export function scanProtected(root: string, options: ScanOptions): Promise<ProtectedScan> {
  const scan: ProtectedScan = {
    root,
    startedAt: Date.now(),
    entries: new Map(),
    unwalked: new Set(),
    skip: options.skip ?? options.before?.skip ?? new Set(),
  };
  // A first-in first-out queue read by a few workers at a time: breadth first, so the limit
  // leaves out the deepest directories.
  const queue = [""];
  let head = 0;
  let read = 0;
  let active = 0;
  return new Promise((resolve) => {
    const pump = (): void => {
      while (active < PARALLEL_READS && head < queue.length) {
        const dir = queue[head++]!;
        if (options.before?.unwalked.has(dir)) continue;
        if (read >= options.maxDirs) {
          scan.unwalked.add(dir);
          continue;
        }
        read += 1;
        active += 1;
        void readDirectory(scan, dir, queue).then(() => {
          active -= 1;
          pump();
        });
      }
      if (active === 0 && head >= queue.length) resolve(scan);
    };
    pump();
  });
}

/** Reads one directory: records its protected entries, queues its other directories. Never rejects. */
async function readDirectory(scan: ProtectedScan, dir: string, queue: string[]): Promise<void> {
  let names: Dirent[];
  try {
    names = await readdir(join(scan.root, dir), { withFileTypes: true });
  } catch {
    return; // Gone, or not readable: nothing the command can create there either.
  }
  for (const dirent of names) {
    const relative = dir ? join(dir, dirent.name) : dirent.name;
    // Every protected name starts with a dot; the matcher is only asked about those.
    if (dirent.name.startsWith(".") && isProtectedPath(dirent.name)) {
      const state = await entryState(join(scan.root, relative));
      if (state) scan.entries.set(relative, state);
    } else if (dirent.isDirectory() && !scan.skip.has(join(scan.root, relative))) {
      queue.push(relative);
    }
  }
}

async function entryState(path: string): Promise<EntryState | undefined> {
  try {
    const stat = await lstat(path, { bigint: true });
    let canonical: string | undefined;
    try {
      canonical = await realpath(path);
    } catch {}
    return {
      id: `${stat.dev}:${stat.ino}`,
      link: stat.isSymbolicLink(),
      canonical,
      ctimeMs: Number(stat.ctimeMs),
    };
  } catch {
    return undefined;
  }
}

/** Room for the system clock's coarse ticks when comparing a ctime with the scan's start. */
const CTIME_SLACK_MS = 1_000;

/**
 * After a sandboxed command: removes each protected entry it created (a new file, whatever its
 * depth), replaced, or re-pointed (a symlink leading elsewhere), without following symlinks.
 * An entry that is new at its path but older than the scan (it existed, and the command renamed
 * a directory holding it) is left alone. One line per entry for the result; none when nothing
 * changed.
 */
export async function sweepProtected(
  before: ProtectedScan,
  maxDirs: number,
  isPlaceholder: (id: string) => boolean = () => false,
): Promise<string[]> {
  // `maxDirs` bounds this walk: the directories read before plus what the command may add.
  const after = await scanProtected(before.root, { maxDirs, before });
  const known = new Map<string, EntryState>();
  for (const state of before.entries.values()) known.set(state.id, state);
  const lines: string[] = [];
  for (const [relative, now] of after.entries) {
    // A placeholder another command made meanwhile (after the host removed the first one).
    if (isPlaceholder(now.id)) continue;
    const was = known.get(now.id);
    // A directory or file keeps its identity when a rename of its parent moves it; a symlink
    // must also still lead where it did.
    if (was && (!now.link || was.canonical === now.canonical)) continue;
    if (!was && now.ctimeMs < before.startedAt - CTIME_SLACK_MS) continue;
    const what = before.entries.has(relative) || was ? "replace or re-point" : "create";
    try {
      await removeEntry(join(before.root, relative));
      lines.push(
        `the sandbox removed ${relative}, which commands may not ${what} (protected path)`,
      );
    } catch (error) {
      lines.push(
        `the sandbox could not remove ${relative}, which commands may not ${what} (protected path): ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}. Remove it before anything reads it.`,
      );
    }
  }
  if (after.unwalked.size > 0) {
    lines.push(
      `the sandbox could not check everything the command created (more than ${maxDirs} directories): protected entries (.git, .vscode...) in them may remain. Remove them before anything reads them.`,
    );
  }
  return lines;
}

/** Removes a file, a symlink (not what it points at) or a directory tree. */
async function removeEntry(path: string): Promise<void> {
  const stat = await lstat(path);
  // rm does not follow symlinks, neither this one nor any inside a directory it deletes.
  await rm(path, { recursive: stat.isDirectory(), force: true });
}
