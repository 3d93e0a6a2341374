/**
 * One agent's shell session: the working directory that carries over from one Bash call to the
 * next, and the lock that runs those calls one at a time (B13), so a `cd` in one call is seen by
 * the next and two commands never race on it. The directory is kept only while it is a directory
 * inside the workspace; a command that leaves the workspace, or a directory that vanishes,
 * sends the session back to the root with a note for the model (never the outside path).
 */

import { isWithin } from "../../tools/workspace.ts";
import type { BuiltinEnvironment } from "../environment.ts";
import { canonicalExisting, isDirectory } from "../sandbox.ts";
import type { ShellOutcome } from "./process.ts";

export interface Session {
  cwd?: string;
  tail: Promise<void>;
}

const sessions = new WeakMap<BuiltinEnvironment, Session>();

export function sessionOf(env: BuiltinEnvironment): Session {
  let session = sessions.get(env);
  if (!session) {
    session = { tail: Promise.resolve() };
    sessions.set(env, session);
  }
  return session;
}

/** Runs `fn` after every earlier call of this session; an abort while waiting skips it. */
export async function exclusive<T>(
  session: Session,
  signal: AbortSignal,
  fn: () => Promise<T>,
): Promise<T | undefined> {
  const previous = session.tail;
  let release!: () => void;
  const mine = new Promise<void>((resolve) => {
    release = resolve;
  });
  session.tail = previous.then(() => mine);
  try {
    await untilSettledOrAborted(previous, signal);
    if (signal.aborted) return undefined;
    return await fn();
  } finally {
    release();
  }
}

function untilSettledOrAborted(previous: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      signal.removeEventListener("abort", done);
      resolve();
    };
    signal.addEventListener("abort", done, { once: true });
    previous.then(done);
  });
}

/** The session's directory if it is still a directory inside the workspace; else the root. */
export function startingCwd(env: BuiltinEnvironment, session: Session, notes: string[]): string {
  const root = env.workspace.root;
  const cwd = session.cwd ?? root;
  if (cwd !== root && workspaceDirectory(root, cwd) === undefined) {
    notes.push("The previous working directory no longer exists; the command ran in the root.");
    session.cwd = root;
    return root;
  }
  return cwd;
}

/** Keeps the directory the command ended in, if it is inside the workspace. */
export function keepCwd(
  env: BuiltinEnvironment,
  session: Session,
  outcome: ShellOutcome,
  notes: string[],
) {
  if (outcome.finalCwd === undefined) return;
  const root = env.workspace.root;
  const canonical = workspaceDirectory(root, outcome.finalCwd);
  if (canonical !== undefined) {
    session.cwd = canonical;
    return;
  }
  // Never echo the outside path (DESIGN: no host paths outside the workspace).
  session.cwd = root;
  notes.push(
    `The command changed directory to outside the workspace; the working directory was reset to the workspace root (${root}).`,
  );
}

/** The canonical form of `path` when it is an existing directory inside the workspace `root`. */
function workspaceDirectory(root: string, path: string): string | undefined {
  const canonical = canonicalExisting(path);
  if (canonical && isDirectory(canonical) && isWithin(root, canonical)) return canonical;
  return undefined;
}
