/**
 * How a Bash command will be launched: with which environment and, under the hardened preset,
 * inside which sandbox. Outside the preset the command gets the host environment without
 * credentials. Under it the command always runs in bubblewrap with an allow-listed environment
 * and with the workspace paths matched by `Read(...)` deny rules masked; when the sandbox is
 * unavailable, or there are too many paths to mask, the call is refused before anything runs,
 * because a command never runs unsandboxed under the preset. The protected top-level entries are
 * recorded at launch, so that `runShell` can remove those the command creates.
 */
import { dirname } from "node:path";
import { glob } from "tinyglobby";
import { BuiltinToolError } from "../define.ts";
import type { BuiltinEnvironment } from "../environment.ts";
import { bwrapArgs, canonicalExisting, probeSandbox, snapshotProtected } from "../sandbox.ts";
import { sandboxEnvironment, scrubbedEnvironment } from "../shell-env.ts";
import type { ShellLaunch } from "./process.ts";

/** At most this many paths matched by Read deny rules are masked in the sandbox. */
const MAX_MASKED_PATHS = 1_000;

export type Sandbox = { bwrap: string; root: string; maskPaths: string[] };

/** Undefined outside the preset; under it, the sandbox or an error saying why there is none. */
export async function prepareSandbox(env: BuiltinEnvironment): Promise<Sandbox | undefined> {
  if (!env.sandboxed) return undefined;
  const probe = await probeSandbox();
  if (!probe.available) {
    throw new BuiltinToolError(
      `The command was not run: the hardened preset runs every Bash command inside a bubblewrap sandbox, and the sandbox is unavailable here (${probe.reason ?? "unknown reason"}). ` +
        "To fix it, install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`) and allow user namespaces, or run without the hardened preset. Commands never run unsandboxed under the preset.",
    );
  }
  const maskPaths = await deniedPaths(env);
  return { bwrap: probe.bwrap ?? "bwrap", root: env.workspace.root, maskPaths };
}

/**
 * Workspace paths matched by `Read(...)` deny patterns, gitignore-style: a pattern without "/"
 * matches at any depth, a leading "/" anchors it at the root, `dir/**` masks the directory whole.
 * Patterns for the home (`~/...`) or absolute ones (`//...`) are covered by the hidden home or
 * not at all. Matching is case-insensitive, as deny rules are (DESIGN).
 */
async function deniedPaths(env: BuiltinEnvironment): Promise<string[]> {
  const patterns = env.readDenyPatterns.map(toGlob).filter((p): p is string => p !== undefined);
  if (patterns.length === 0) return [];
  const root = env.workspace.root;
  const found = await glob(patterns, {
    cwd: root,
    absolute: true,
    dot: true,
    onlyFiles: false,
    expandDirectories: false,
    followSymbolicLinks: false,
    caseSensitiveMatch: false,
  });
  const canonical = [...new Set(found.map((p) => canonicalExisting(p.replace(/\/$/, ""))))]
    .filter((p): p is string => p !== undefined && p !== root)
    .sort((a, b) => a.length - b.length);
  // Shortest first, so a masked directory is seen before what it holds; those need no mask of
  // their own (and bwrap could not create their mount points inside a read-only tmpfs).
  const masks = new Set<string>();
  for (const path of canonical) {
    let parent = dirname(path);
    while (parent !== root && parent !== dirname(parent) && !masks.has(parent)) {
      parent = dirname(parent);
    }
    if (!masks.has(parent)) masks.add(path);
  }
  if (masks.size > MAX_MASKED_PATHS) {
    throw new BuiltinToolError(
      `The command was not run: more than ${MAX_MASKED_PATHS} paths match the Read deny rules, more than the sandbox masks. Deny their directory instead (Read(dir/**)).`,
    );
  }
  return [...masks];
}

function toGlob(pattern: string): string | undefined {
  let p = pattern.trim();
  if (!p || p.startsWith("!") || p.startsWith("~") || p.startsWith("//")) return undefined;
  if (p.startsWith("./")) p = p.slice(2);
  p = p.replace(/\/+$/, "").replace(/\/\*\*$/, "");
  if (!p) return undefined;
  if (p.startsWith("/")) return p.slice(1);
  return p.includes("/") ? p : `**/${p}`;
}

/** How `command` runs in `cwd`: the host environment without credentials, or inside bwrap. */
export function shellRun(sandbox: Sandbox | undefined, command: string, cwd: string): ShellLaunch {
  if (!sandbox) return { command, cwd, env: scrubbedEnvironment() };
  const inner = sandboxEnvironment(sandbox.root);
  // Before the mounts are decided: an entry that appears in between counts as the command's.
  const protectedBefore = snapshotProtected(sandbox.root);
  const args = bwrapArgs({ root: sandbox.root, cwd, maskPaths: sandbox.maskPaths, env: inner });
  // bwrap itself needs nothing from our environment; --clearenv gives the command `inner` only.
  return { command, cwd, env: inner, sandbox: { bwrap: sandbox.bwrap, args, protectedBefore } };
}
