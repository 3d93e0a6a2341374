// agent.rewindFiles: files Write and Edit changed since a checkpoint, back as they were, all or nothing.

import { lstat, readFile, unlink } from "node:fs/promises";
import path from "node:path";
import { writeFileInside } from "../builtin/workspace-write.ts";
import { RewindError } from "../core/errors.ts";
import type { SessionStore } from "../core/session-store.ts";
import { isProtectedPath } from "../permissions/protected.ts";
import { isInside } from "../tools/workspace.ts";
import { requireSession } from "./session-view.ts";

export interface RewindResult {
  /** Workspace-relative paths written back to their content at the checkpoint, sorted. */
  restored: string[];
  /** Paths that did not exist at the checkpoint and were removed, sorted. */
  deleted: string[];
}

/** A file as it is now: its text, or null when absent. */
type Content = string | null;

/**
 * For every path with a snapshot logged after the checkpoint's input, the first such snapshot is
 * its content at the checkpoint. Every path is checked before any is touched (inside the root, no
 * symlink at any component, a regular file or absent, one link only, not a protected path); then
 * each is written atomically, and a failure puts back the files already rewound. Files only Bash
 * changed are not tracked. The conversation is not changed.
 *
 * Protected paths (git hooks and config, `.mcp.json`, ...: see protected.ts) are refused, not
 * asked about as Write and Edit ask: the app calls rewind outside any run, so there is no tool
 * call to pause or to put to the approval handler, and the snapshots are the store's word alone
 * (nothing seals them), which anyone able to write to the store could have changed.
 */
export async function rewindFiles(options: {
  store: SessionStore;
  root: string;
  sessionId: string;
  checkpointId: string;
  secret: string | undefined;
}): Promise<RewindResult> {
  const { store, root, sessionId, checkpointId } = options;
  const view = await requireSession(store, sessionId, options.secret);
  const checkpoint = view.checkpoints.find((each) => each.id === checkpointId);
  if (!checkpoint)
    throw new RewindError(
      `rewindFiles: session "${sessionId}" has no checkpoint "${checkpointId}". Use a result's checkpointId, or loadSession(store, id).checkpoints.`,
    );
  const targets = new Map<string, Content>();
  for (const { seq, entry } of view.entries)
    if (entry.type === "snapshot" && seq > checkpoint.seq && !targets.has(entry.path))
      targets.set(entry.path, entry.content);

  const current = new Map<string, Content>();
  const refused: string[] = [];
  const guarded: string[] = [];
  for (const relative of targets.keys()) {
    if (protectedTarget(relative)) {
      guarded.push(relative);
      continue;
    }
    const now = await checkedContent(root, relative);
    if (now === refusedMark) refused.push(relative);
    else current.set(relative, now);
  }
  if (refused.length + guarded.length > 0) throw refusal(refused.sort(), guarded.sort());

  const changed = [...targets].filter(([relative, content]) => current.get(relative) !== content);
  const done: [string, Content][] = [];
  try {
    for (const [relative, content] of changed) {
      await put(root, relative, content);
      done.push([relative, current.get(relative)!]);
    }
  } catch (error) {
    // Put back what this rewind already changed, newest first.
    for (const [relative, before] of done.reverse())
      await put(root, relative, before).catch(() => undefined);
    const failed = changed[done.length]![0];
    throw new RewindError(
      `rewindFiles: writing "${failed}" failed (${error instanceof Error ? error.message : String(error)}); the files already rewound were put back.`,
      { paths: [failed], cause: error },
    );
  }
  return {
    restored: changed
      .filter(([, content]) => content !== null)
      .map(([p]) => p)
      .sort(),
    deleted: changed
      .filter(([, content]) => content === null)
      .map(([p]) => p)
      .sort(),
  };
}

const refusedMark = Symbol("refused");

/** Whether the snapshot's path, normalised (with or without a trailing `/`), is protected. */
function protectedTarget(relative: string): boolean {
  const normal = path.normalize(relative);
  // Paths outside the root are refused by checkedContent; the matcher takes relative paths only.
  if (path.isAbsolute(normal) || !isInside(normal)) return false;
  const plain = normal.split(path.sep).join("/").replace(/\/+$/, "");
  return plain !== "" && plain !== "." && isProtectedPath(plain);
}

function refusal(refused: string[], guarded: string[]): RewindError {
  const parts: string[] = [];
  if (refused.length > 0)
    parts.push(
      `${refused.length} path(s) cannot be rewound safely (outside the workspace, behind a symbolic link, hard-linked, or not a regular file): ${refused.join(", ")}.`,
    );
  if (guarded.length > 0)
    parts.push(
      `${guarded.length} path(s) are protected (git hooks and config, shell start-up files, editor, MCP and agent settings): ${guarded.join(", ")}. Rewind never writes these, since a session store's snapshots could have been edited by anyone able to write to it; put them back yourself (from git, say).`,
    );
  return new RewindError(`rewindFiles: ${parts.join(" ")} No file was changed.`, {
    paths: [...refused, ...guarded].sort(),
  });
}

/** The file's text now, null when absent, or the refusal mark when rewinding it is unsafe. */
async function checkedContent(
  root: string,
  relative: string,
): Promise<Content | typeof refusedMark> {
  const normal = path.normalize(relative);
  if (path.isAbsolute(normal) || !isInside(normal) || normal === ".") return refusedMark;
  // No symlink at any component from the root down: a rewind never writes through a link.
  let at = root;
  const parts = normal.split(path.sep);
  for (const [index, part] of parts.entries()) {
    at = path.join(at, part);
    let stats: Awaited<ReturnType<typeof lstat>>;
    try {
      stats = await lstat(at);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      return refusedMark;
    }
    if (stats.isSymbolicLink()) return refusedMark;
    const last = index === parts.length - 1;
    if (!last && !stats.isDirectory()) return refusedMark;
    if (last && (!stats.isFile() || stats.nlink > 1)) return refusedMark;
  }
  try {
    return await readFile(at, "utf8");
  } catch {
    return refusedMark;
  }
}

async function put(root: string, relative: string, content: Content): Promise<void> {
  const absolute = path.join(root, relative);
  if (content === null) {
    await unlink(absolute).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    return;
  }
  await writeFileInside(
    { absolute, relative: relative.split(path.sep).join("/") },
    content,
    relative,
  );
}
