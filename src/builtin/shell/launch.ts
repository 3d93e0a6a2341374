/**
 * How a Bash command will be launched: with which environment and, under the hardened preset,
 * inside which sandbox. Outside the preset the command gets the host environment without
 * credentials. Under it the command always runs in bubblewrap with an allow-listed environment
 * and with the workspace paths matched by `Read(...)` deny rules masked; when the sandbox is
 * unavailable, or there are too many paths to mask, the call is refused before anything runs,
 * because a command never runs unsandboxed under the preset. The protected entries are guarded
 * by `prepareSandboxRun` (sandbox-guard.ts), which `runShell` calls just before the spawn.
 */
import { dirname } from "node:path";
import { isWithin } from "../../tools/workspace.ts";
import { MATCH_STALL_MS, MatchTooSlowError, runBounded } from "../bounded-match.ts";
import { BuiltinToolError } from "../define.ts";
import type { BuiltinEnvironment } from "../environment.ts";
import { canonicalExisting, probeSandbox } from "../sandbox.ts";
import { prepareSandboxRun } from "../sandbox-guard.ts";
import { sandboxEnvironment, scrubbedEnvironment } from "../shell-env.ts";
import type { ShellLaunch } from "./process.ts";

/** At most this many paths matched by Read deny rules are masked in the sandbox. */
const MAX_MASKED_PATHS = 1_000;
/** Time for finding those paths. */
const DENIED_PATHS_TIMEOUT_MS = 30_000;

export type Sandbox = {
  bwrap: string;
  root: string;
  maskPaths: string[];
  /** Read-only folders outside the workspace (skills), mounted read-only. */
  readOnly: string[];
};

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
  const root = env.workspace.root;
  // A skill folder inside the workspace is mounted with it, the Read deny masks included.
  const readOnly = (env.readOnlyFolders ?? [])
    .map((folder) => folder.root)
    .filter((folder) => !isWithin(root, folder));
  return { bwrap: probe.bwrap ?? "bwrap", root, maskPaths, readOnly };
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
  // In the matcher worker: a deny pattern with several wildcards can backtrack on the names the
  // model gave its files, and must not freeze the process. A search cut short masks too little.
  const refused = (why: string) =>
    new BuiltinToolError(
      `The command was not run: finding the paths the Read deny rules name ${why}, so the sandbox could not mask them all. Use simpler Read deny patterns (such as "**/*.env" or "secrets/**"), or remove what makes the workspace so large.`,
    );
  let found: string[];
  try {
    const crawl = await runBounded(
      "glob",
      {
        patterns,
        options: {
          cwd: root,
          absolute: true,
          dot: true,
          onlyFiles: false,
          expandDirectories: false,
          followSymbolicLinks: false,
          caseSensitiveMatch: false,
        },
        confine: root,
        timeoutMs: DENIED_PATHS_TIMEOUT_MS,
      },
      { limitMs: DENIED_PATHS_TIMEOUT_MS + MATCH_STALL_MS },
    );
    if (crawl.stopped) throw refused(`took over ${DENIED_PATHS_TIMEOUT_MS / 1000} s`);
    found = crawl.paths;
  } catch (error) {
    if (error instanceof MatchTooSlowError) throw refused(`was stopped (${error.message})`);
    throw error;
  }
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
  const { root, maskPaths, readOnly } = sandbox;
  // Right before the spawn: the mounts follow the workspace as it is then.
  const prepare = () => prepareSandboxRun({ root, cwd, maskPaths, readOnly, env: inner });
  // bwrap itself needs nothing from our environment; --clearenv gives the command `inner` only.
  return { command, cwd, env: inner, sandbox: { bwrap: sandbox.bwrap, prepare } };
}
