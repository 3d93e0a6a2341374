/**
 * Paths the shell resolves in its own process: `/proc/<pid>/cwd` is its working directory (the
 * workspace, or below it), `/proc/<pid>/root` its root, and `/dev/fd` a link to `/proc/self/fd`.
 * The gate runs in another process, so resolving such a link itself would find the gate's own
 * directory: `cat /proc/self/cwd/.env` reads the workspace's `.env` while the gate sees another.
 * A path or glob through one is therefore also judged as what it names from the shell's side:
 * the rest after `cwd` as a relative path, after `root` as an absolute one. Read over-inclusively,
 * as globs are (any pid, `self`, `thread-self`, a task; wildcards that could name them).
 */
import { GLOBSTAR, globSegment, type Segment, segmentMatches } from "../glob-meet.ts";

/** Any one name. */
const ANY = Symbol("any name");
type Step = string | typeof ANY;

/** The links, as the names that lead to them; `fd` is /dev/fd, which is /proc/self/fd. */
const LINKS: readonly { steps: readonly Step[]; to: "cwd" | "root" | "fd" }[] = [
  { steps: ["proc", ANY, "cwd"], to: "cwd" },
  { steps: ["proc", ANY, "task", ANY, "cwd"], to: "cwd" },
  { steps: ["proc", ANY, "root"], to: "root" },
  { steps: ["proc", ANY, "task", ANY, "root"], to: "root" },
  { steps: ["dev", "fd"], to: "fd" },
];

/** For each link, the positions in its steps the names so far can have reached (a bit each). */
type State = number[];

const START: State = LINKS.map(() => 1);

/** A link through /proc inside a link through /proc: deeper than this is not followed. */
const MAX_DEPTH = 4;

/**
 * What `given` (a path or a glob, relative to the workspace root `root` or absolute) names from
 * the shell's side when it goes through its own /proc entry; none when it does not. Linear in
 * the path's segments (a state per segment), so a long glob costs its length.
 */
export function shellSidePaths(root: string, given: string, depth = 0): string[] {
  // Only a path naming `proc` or `fd`, or a wildcard that could, can go through them.
  if (depth >= MAX_DEPTH || !/proc|fd|[*?[]/i.test(given)) return [];
  const parts = (given.startsWith("/") ? given : `${root}/${given}`).split("/");
  // The state after each name of the path so far, `..` taking one back (lexically: /proc/<pid>
  // and /proc/<pid>/fd are real directories, so `..` is their parent).
  const states: State[] = [START];
  for (let index = 0; index < parts.length; index++) {
    const part = parts[index]!;
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (states.length > 1) states.pop();
      continue;
    }
    const state = advance(states.at(-1)!, globSegment(part));
    const reached = LINKS.find((link, k) => (state[k]! & (1 << link.steps.length)) !== 0);
    if (reached?.to === "cwd" || reached?.to === "root") {
      // Empty names dropped: `cwd//x` is `x`, not the absolute `/x`.
      const rest = parts
        .slice(index + 1)
        .filter((name) => name !== "")
        .join("/");
      const named = reached.to === "cwd" ? rest || "." : `/${rest}`;
      return [named, ...shellSidePaths(root, named, depth + 1)];
    }
    if (reached?.to === "fd") {
      // From here on, the path is under /proc/self/fd.
      states.length = 1;
      for (const name of ["proc", "self", "fd"])
        states.push(advance(states.at(-1)!, globSegment(name)));
    } else states.push(state);
  }
  return [];
}

function advance(state: State, segment: Segment): State {
  return LINKS.map(({ steps }, k) => {
    let next = 0;
    for (let at = 0; at < steps.length; at++) {
      if ((state[k]! & (1 << at)) === 0) continue;
      // `**` may be any number of names: every later position.
      if (segment === GLOBSTAR) for (let to = at; to <= steps.length; to++) next |= 1 << to;
      else if (steps[at] === ANY || segmentMatches(segment, steps[at] as string))
        next |= 1 << (at + 1);
    }
    return next;
  });
}
