// `skein dev`: what rewinding a session's files to a checkpoint would change, shown before it does.

import { lstat, readFile } from "node:fs/promises";
import path from "node:path";
import type { SessionView } from "../../sessions/session-view.ts";
import { isInside } from "../../tools/workspace.ts";

export interface RewindPreview {
  checkpointId: string;
  /** Each file rewind would write: its change and a unified diff from now to the checkpoint. */
  files: {
    path: string;
    change: "restore" | "create" | "delete" | "unchanged" | "refused";
    diff: string;
  }[];
}

/**
 * The files Write and Edit changed after the checkpoint (as `rewindFiles` finds them: the first
 * snapshot of each path after the checkpoint's input), each against the workspace now. Reads only;
 * a path rewind would refuse (outside the root, behind a link, not a plain file) is marked so.
 * Undefined for a checkpoint the session does not have.
 */
export async function rewindPreview(
  view: SessionView,
  root: string,
  checkpointId: string,
): Promise<RewindPreview | undefined> {
  const checkpoint = view.checkpoints.find((each) => each.id === checkpointId);
  if (!checkpoint) return undefined;
  const targets = new Map<string, string | null>();
  for (const { seq, entry } of view.entries)
    if (entry.type === "snapshot" && seq > checkpoint.seq && !targets.has(entry.path))
      targets.set(entry.path, entry.content);
  const { createTwoFilesPatch } = await import("diff");
  const files: RewindPreview["files"] = [];
  for (const [relative, then] of targets) {
    const now = await currentContent(root, relative);
    if (now === refused) {
      files.push({ path: relative, change: "refused", diff: "" });
      continue;
    }
    const change =
      now === then ? "unchanged" : then === null ? "delete" : now === null ? "create" : "restore";
    const diff =
      change === "unchanged"
        ? ""
        : createTwoFilesPatch(
            relative,
            relative,
            now ?? "",
            then ?? "",
            "now",
            "at the checkpoint",
          );
    files.push({ path: relative, change, diff });
  }
  return { checkpointId, files };
}

const refused = Symbol("refused");

/** A workspace file's text now; null when absent; `refused` when rewind would not write it. */
async function currentContent(
  root: string,
  relative: string,
): Promise<string | null | typeof refused> {
  if (typeof relative !== "string" || path.isAbsolute(relative)) return refused;
  const normal = path.normalize(relative);
  if (!isInside(normal)) return refused;
  const parts = normal.split(path.sep);
  let at = root;
  for (const [index, part] of parts.entries()) {
    at = path.join(at, part);
    const stat = await lstat(at).catch(() => undefined);
    if (!stat) return null;
    const last = index === parts.length - 1;
    if (stat.isSymbolicLink() || (last ? !stat.isFile() || stat.nlink > 1 : !stat.isDirectory()))
      return refused;
  }
  return readFile(at, "utf8");
}
