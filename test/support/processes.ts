/** Processes and programs on this machine: what runs, what is gone, what is installed. */
import { accessSync, constants, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { LIVENESS_MS } from "./liveness.ts";
import { sleep } from "./promises.ts";

/** True while a process with this pid exists (zombies count: they may await a slow reaper). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until every pid is gone; orphans are reaped by pid 1, which may take a moment. */
export async function expectGone(pids: number[], withinMs = LIVENESS_MS): Promise<void> {
  // A pid that was never read must not pass as "gone".
  if (pids.length === 0 || !pids.every((pid) => Number.isInteger(pid) && pid > 0)) {
    throw new Error(`not a list of pids: ${JSON.stringify(pids)}`);
  }
  const deadline = Date.now() + withinMs;
  while (pids.some(alive)) {
    if (Date.now() > deadline) {
      throw new Error(`still alive after ${withinMs} ms: ${pids.filter(alive).join(", ")}`);
    }
    await sleep(50);
  }
}

/** Host pids whose command line contains `needle` (sandboxed pids differ from host pids). */
export function pidsWithCmdline(needle: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      const state = readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]?.[0];
      if (cmdline.includes(needle) && state !== "Z") pids.push(Number(entry));
    } catch {}
  }
  return pids;
}

/** The executable `name` as found on PATH, or undefined. */
export function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return undefined;
}
