import path from "node:path";
import { lexicalRelative } from "./paths.ts";

/**
 * A child agent works in a directory inside its parent's workspace and names paths from there;
 * the parent's rules are written from its own root. These translate the one into the other.
 */

/** Paths relative to `from` (a directory inside `root`), as paths relative to `root`. */
export function toRoot(
  from: string,
  root: string,
  relative: string | undefined,
): string | undefined {
  return relative === undefined ? undefined : lexicalRelative(root, path.join(from, relative));
}

/** A view's paths, relative to `from`, made relative to `root`. */
export async function rerootedPaths<View extends { paths: (string | undefined)[] }>(
  view: View | Promise<View>,
  from: string,
  root: string,
): Promise<View> {
  const call = await view;
  return { ...call, paths: call.paths.map((relative) => toRoot(from, root, relative)) };
}

/**
 * Path rules of this root, asked about paths relative to `from`: every function of `rules`
 * takes one workspace-relative path (or glob) and answers a boolean.
 */
export function rerooted<Rules extends object>(rules: Rules, from: string, root: string): Rules {
  const wrapped: Record<string, unknown> = { ...(rules as Record<string, unknown>) };
  for (const [key, value] of Object.entries(rules as Record<string, unknown>)) {
    if (typeof value === "function")
      wrapped[key] = (relative: string) => {
        const inRoot = toRoot(from, root, relative);
        return inRoot !== undefined && (value as (relative: string) => boolean)(inRoot);
      };
  }
  return wrapped as Rules;
}
