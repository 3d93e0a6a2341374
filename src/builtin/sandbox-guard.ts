/**
 * One sandboxed command's protection of the workspace's protected entries (PROTECTED_NAMES:
 * `.git`, `.vscode`, `.mcp.json`...), from before it starts to after it ends:
 *
 * 1. Placeholders: a mount needs something to cover, so each protected name missing at the top
 *    of the workspace gets an empty directory in its place while sandboxed commands run. Mounted
 *    read-only like every existing entry, it makes the name impossible to create, replace or
 *    remove from inside. The last command of this process on the workspace to end removes them
 *    if they are still empty and still theirs. A leftover (the host killed mid-command) is
 *    harmless: git looks past an empty `.git` directory to the parent repository, does not list
 *    empty directories, and ignores an empty `.gitmodules` directory; a tool reading `.mcp.json`
 *    gets an error. Directories, not empty files, so `git status` inside stays clean. In a
 *    workspace that is the home directory, shell start-up files and `.gitconfig` get none: there
 *    a directory (or an empty `.bash_profile`) would change how the user's shells and git start,
 *    so they are only swept.
 * 2. Protected entries below the top (`sub/.git`, `pkg/.vscode`) are found by a walk and mounted
 *    read-only too (sandbox-scan.ts).
 * 3. When the command ends, a second walk finds the protected entries it created at depth, where
 *    no placeholder could stand, and removes them; the result lists them.
 * 4. The seccomp program (sandbox-seccomp.ts) goes to bwrap on fd 4.
 */
import { closeSync } from "node:fs";
import { lstat, mkdir, rmdir } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { PROTECTED_NAMES } from "../permissions/protected.ts";
import { isWithin } from "../tools/workspace.ts";
import { BuiltinToolError } from "./define.ts";
import { type BwrapOptions, bwrapArgs, canonicalExisting } from "./sandbox.ts";
import { type ProtectedScan, scanProtected, sweepProtected } from "./sandbox-scan.ts";
import { openUnixSocketFilter } from "./sandbox-seccomp.ts";

/** Where the seccomp program's descriptor sits in the child (after stdin, stdout, stderr, fd 3). */
export const SECCOMP_FD = 4;
/** Directories walked before a command (breadth first); deeper ones are not guarded. */
const MAX_WALKED_DIRS = 50_000;
/** Directories a command may add that the sweep still walks. */
const SWEEP_EXTRA_DIRS = 50_000;
/** Protected entries mounted read-only at most (each is a mount). */
const MAX_PROTECTED_MOUNTS = 1_000;
/** After a killed sandbox, before the second sweep: what ran inside dies just after bwrap. */
const SETTLE_MS = 250;

/** Names read from the home directory: no placeholder when the workspace is the home. */
const HOME_NAMES = new Set([".gitconfig", ".bashrc", ".bash_profile", ".profile", ".zshrc"]);

/** A sandboxed command ready to spawn: `bwrap ...args SHELL -c script`, `fds` from fd 4 on. */
export interface SandboxRun {
  args: string[];
  fds: number[];
  /**
   * Once the process ended (`killed`: by a timeout, an abort or a signal): the sweep and the
   * placeholders' release. One line per protected entry removed; never rejects.
   */
  finish(killed: boolean): Promise<string[]>;
}

/** Protects the workspace for one command and returns how to run it. */
export async function prepareSandboxRun(options: BwrapOptions): Promise<SandboxRun> {
  const { root } = options;
  await acquirePlaceholders(root);
  let fd: number | undefined;
  try {
    const before = await scanProtected(root, {
      maxDirs: MAX_WALKED_DIRS,
      skip: new Set(options.maskPaths),
    });
    const top: string[] = [];
    const nested: string[] = [];
    for (const [relative, state] of before.entries) {
      // Through a symlink, protect what it leads to; outside the workspace nothing is writable.
      const path = state.canonical;
      if (!path || path === root || !isWithin(root, path)) continue;
      (relative.includes("/") ? nested : top).push(path);
    }
    if (top.length + nested.length > MAX_PROTECTED_MOUNTS) {
      throw new BuiltinToolError(
        `the workspace holds more than ${MAX_PROTECTED_MOUNTS} protected entries (.git, .vscode, .mcp.json... at any depth), more than the sandbox mounts read-only, so the command was not run. Give the agent a smaller workspace (cwd), or remove the entries it does not need.`,
      );
    }
    fd = openUnixSocketFilter();
    const args = bwrapArgs({
      ...options,
      protect: [...new Set(top)],
      // Vanished since the walk (another command's sweep): nothing left to protect there.
      protectIfPresent: [...new Set(nested)],
      seccompFd: SECCOMP_FD,
    });
    const descriptor = fd;
    return { args, fds: [descriptor], finish: (killed) => finish(before, descriptor, killed) };
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    await releasePlaceholders(root);
    throw error;
  }
}

async function finish(before: ProtectedScan, fd: number, killed: boolean): Promise<string[]> {
  try {
    closeSync(fd);
  } catch {}
  const maxDirs = MAX_WALKED_DIRS + SWEEP_EXTRA_DIRS;
  const ours = (id: string) => isPlaceholder(before.root, id);
  const lines: string[] = [];
  try {
    lines.push(...(await sweepProtected(before, maxDirs, ours)));
    if (killed) {
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      lines.push(...(await sweepProtected(before, maxDirs, ours)));
    }
  } catch (error) {
    lines.push(`the sandbox could not check for protected entries: ${(error as Error).message}`);
  } finally {
    await releasePlaceholders(before.root);
  }
  return lines;
}

// ---------------------------------------------------------------------------------------------
// Placeholders, shared by the sandboxed commands of this process on one workspace

interface Placeholders {
  /** Sandboxed commands running (or being prepared) on this workspace. */
  users: number;
  /** Placeholders made, by name: `dev:ino` of each. */
  made: Map<string, string>;
  /** Acquire and release run one at a time, never interleaved. */
  queue: Promise<unknown>;
}

const workspaces = new Map<string, Placeholders>();

function placeholdersOf(root: string): Placeholders {
  let state = workspaces.get(root);
  if (!state) {
    state = { users: 0, made: new Map(), queue: Promise.resolve() };
    workspaces.set(root, state);
  }
  return state;
}

function serially(state: Placeholders, task: () => Promise<void>): Promise<void> {
  const run = state.queue.then(task);
  state.queue = run.catch(() => {});
  return run;
}

/** Whether `id` is one of this workspace's live placeholders: the sweep never removes one. */
function isPlaceholder(root: string, id: string): boolean {
  for (const made of placeholdersOf(root).made.values()) if (made === id) return true;
  return false;
}

async function acquirePlaceholders(root: string): Promise<void> {
  const state = placeholdersOf(root);
  const home = canonicalExisting(process.env.HOME || homedir());
  await serially(state, async () => {
    state.users += 1;
    for (const name of PROTECTED_NAMES) {
      if (root === home && HOME_NAMES.has(name)) continue;
      const path = join(root, name);
      try {
        // Fails on an existing entry (a dangling symlink included), which stays as it is.
        await mkdir(path);
      } catch {
        continue; // It exists (then it is mounted as it is), or nothing can be created here.
      }
      try {
        const stat = await lstat(path, { bigint: true });
        state.made.set(name, `${stat.dev}:${stat.ino}`);
      } catch {}
    }
  });
}

async function releasePlaceholders(root: string): Promise<void> {
  const state = placeholdersOf(root);
  await serially(state, async () => {
    state.users -= 1;
    if (state.users > 0) return;
    for (const [name, id] of state.made) await removePlaceholder(join(root, name), id);
    state.made.clear();
  });
}

/** Removes a placeholder that is still ours and still empty (the host may have written in it). */
async function removePlaceholder(path: string, id: string): Promise<void> {
  try {
    const stat = await lstat(path, { bigint: true });
    if (`${stat.dev}:${stat.ino}` !== id || !stat.isDirectory()) return;
    // rmdir refuses a directory that is not empty, even one filled since the check.
    await rmdir(path);
  } catch {}
}
