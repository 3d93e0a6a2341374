/**
 * Walks a workspace directory for the first file a Read rule covers, so that a recursive reader
 * over it (`grep -r KEY .`) is judged by what it would read. Bounded: a tree with more entries
 * than MAX_ENTRIES is reported as "too many" (the caller treats it as unknown). Symbolic links
 * are checked as themselves and as their targets, and not followed into.
 */
import { lstat, readdir, realpath } from "node:fs/promises";
import path from "node:path";
import { lexicalRelative } from "../paths.ts";

const MAX_ENTRIES = 50_000;

export type Covered = { kind: "deny" | "ask"; path: string } | "too many" | undefined;

export async function walkCovered(
  root: string,
  relative: string,
  rules: { denied(relative: string): boolean; asked(relative: string): boolean },
): Promise<Covered> {
  let asked: Covered;
  const check = (rel: string): Covered => {
    if (rel === "") return undefined;
    if (rules.denied(rel)) return { kind: "deny", path: rel };
    if (rules.asked(rel)) asked ??= { kind: "ask", path: rel };
    return undefined;
  };
  const linked = async (absolute: string): Promise<Covered> => {
    try {
      const target = lexicalRelative(root, await realpath(absolute));
      return target === undefined ? undefined : check(target);
    } catch {
      return undefined;
    }
  };
  const start = path.join(root, relative);
  const found = check(relative);
  if (found) return found;
  try {
    const stat = await lstat(start);
    if (stat.isSymbolicLink()) return (await linked(start)) ?? asked;
    if (!stat.isDirectory()) return asked;
  } catch {
    return asked;
  }
  const pending = [relative];
  let entries = 0;
  while (pending.length > 0) {
    const dir = pending.pop()!;
    let names: import("node:fs").Dirent[];
    try {
      names = await readdir(path.join(root, dir), { withFileTypes: true });
    } catch {
      continue;
    }
    entries += names.length;
    if (entries > MAX_ENTRIES) return "too many";
    for (const entry of names) {
      const rel = dir === "" ? entry.name : `${dir}/${entry.name}`;
      const hit = check(rel);
      if (hit) return hit;
      if (entry.isDirectory()) pending.push(rel);
      else if (entry.isSymbolicLink()) {
        const target = await linked(path.join(root, rel));
        if (target) return target;
      }
    }
  }
  return asked;
}
