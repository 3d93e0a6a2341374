/**
 * Killing everything one command started. The command runs in a process group of its own, but a
 * child can leave the group (`setsid`, `nohup … &` in a new session, a double fork) and would
 * outlive a kill of the group. So each command also gets a marker in its environment, an
 * environment variable with a value unique to the command, which every descendant inherits; on a
 * kill, /proc/<pid>/environ of every process is searched for it. This needs no cgroups and works
 * as root and as any user: a user can read the environment of their own processes, which are the
 * only ones they could kill anyway.
 *
 * Limits: /proc/<pid>/environ is the environment a process started with, so a descendant that
 * execs with a cleared or rewritten environment (`env -i …`, a daemon that scrubs its own) loses
 * the marker and is not found; so is one that runs under another user (setuid) or on a system
 * without /proc. The process-group kill still reaches those that stayed in the group.
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";

/** The name of the marker variable; its value is fresh for each command. */
export const TREE_MARKER = "SKEIN_PROCESS_TREE";
/** Rounds of stop-and-search before the kill, against a tree that keeps forking. */
const MAX_ROUNDS = 20;

export function newMarker(): string {
  return randomBytes(12).toString("hex");
}

/** Pids of the live processes whose environment holds the marker `value`. */
export function markedProcesses(value: string): number[] {
  const needle = Buffer.from(`${TREE_MARKER}=${value}\0`);
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) continue;
    let environ: Buffer;
    try {
      environ = readFileSync(`/proc/${pid}/environ`);
    } catch {
      continue; // Gone, or another user's.
    }
    const at = environ.indexOf(needle);
    if (at === 0 || (at > 0 && environ[at - 1] === 0)) found.push(pid);
  }
  return found;
}

function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {}
}

/**
 * Sends `signal` to the process group `group` and to every process carrying the marker. For
 * SIGKILL the marked processes are stopped first, round after round until a search finds no new
 * one, so that a tree that keeps forking cannot outrun the search; then all of them are killed.
 */
export function signalTree(group: number, marker: string, signal: NodeJS.Signals): void {
  signalProcess(-group, signal);
  if (signal !== "SIGKILL") {
    for (const pid of markedProcesses(marker)) signalProcess(pid, signal);
    return;
  }
  const seen = new Set<number>();
  for (let round = 0; round < MAX_ROUNDS; round += 1) {
    const fresh = markedProcesses(marker).filter((pid) => !seen.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      seen.add(pid);
      signalProcess(pid, "SIGSTOP");
    }
  }
  for (const pid of seen) signalProcess(pid, "SIGKILL");
  signalProcess(-group, "SIGKILL");
}
