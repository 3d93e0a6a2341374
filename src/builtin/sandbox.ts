/**
 * The hardened preset's bubblewrap sandbox: probing for it, and the mounts a Bash command runs
 * under (the workspace the one writable host directory, the home and /run hidden, the paths
 * `Read(...)` deny rules match masked, the protected entries read-only, a seccomp filter against
 * Unix sockets). What guards the protected entries around each command (placeholders for missing
 * names, the walk for nested ones, the sweep after) is in sandbox-guard.ts; the filter is in
 * sandbox-seccomp.ts.
 */
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  lstatSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { PROTECTED_NAMES } from "../permissions/protected.ts";
import type { SandboxPolicy } from "../tools/types.ts";
import { isWithin } from "../tools/workspace.ts";
import { childProcess } from "./node-modules.ts";
import { openUnixSocketFilter } from "./sandbox-seccomp.ts";

/** Whether Bash can run under bubblewrap here, and if not, why. */
export interface SandboxProbe {
  available: boolean;
  reason?: string;
  /** Absolute path of `bwrap` when available. */
  bwrap?: string;
}

/**
 * Workspace entries a sandboxed command may read but never change (DESIGN, hardened preset): the
 * permission layer's protected names, so Write/Edit and the sandbox guard one list.
 */
export const PROTECTED_ENTRIES: readonly string[] = PROTECTED_NAMES;

/**
 * Isolation flags, shared by the probe and real runs so a passing probe means a working sandbox.
 * `--unshare-user --disable-userns --cap-drop ALL`: run as root, bwrap keeps every capability
 * in the sandbox, and a command could then `umount` the tmpfs over the real home or a masked
 * file (verified with bwrap 0.8); without capabilities, and with no nested user namespace to
 * regain them, the mounts stay as set up.
 */
const ISOLATION = [
  "--unshare-all",
  "--unshare-user",
  "--disable-userns",
  "--cap-drop",
  "ALL",
  "--die-with-parent",
  "--new-session",
];

const PROBE_TIMEOUT_MS = 10_000;

let cachedProbe: Promise<SandboxProbe> | undefined;
let probeOverride: (() => SandboxProbe | Promise<SandboxProbe>) | undefined;

/** Checks once per process that `bwrap` is on PATH and that a trial sandbox exits 0. */
export function probeSandbox(): Promise<SandboxProbe> {
  if (probeOverride) return Promise.resolve(probeOverride());
  cachedProbe ??= runProbe();
  return cachedProbe;
}

/** Test seam: replaces the probe (`undefined` restores the real, cached one). */
export function setSandboxProbeForTesting(
  probe: (() => SandboxProbe | Promise<SandboxProbe>) | undefined,
): void {
  probeOverride = probe;
}

async function runProbe(): Promise<SandboxProbe> {
  if (process.platform !== "linux") {
    return { available: false, reason: `bubblewrap needs Linux (this is ${process.platform})` };
  }
  const bwrap = findOnPath("bwrap");
  if (!bwrap) return { available: false, reason: "bwrap (bubblewrap) was not found on PATH" };
  let filter: number;
  try {
    filter = openUnixSocketFilter();
  } catch (error) {
    return { available: false, reason: (error as Error).message };
  }
  // The seccomp filter too: a kernel without seccomp would fail every real command.
  const args = ["--ro-bind", "/", "/", ...ISOLATION, "--seccomp", "3", "true"];
  return new Promise((resolve) => {
    let stderr = "";
    const child = childProcess().spawn(bwrap, args, {
      stdio: ["ignore", "ignore", "pipe", filter],
    });
    closeSync(filter);
    const timer = setTimeout(() => child.kill("SIGKILL"), PROBE_TIMEOUT_MS);
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      if (stderr.length < 2000) stderr += chunk;
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      resolve({ available: false, reason: `bwrap could not be started: ${error.message}` });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve({ available: true, bwrap });
      const why = stderr.trim().split("\n")[0] || `exit ${code ?? signal}`;
      resolve({ available: false, reason: `a trial bwrap sandbox failed (${why})` });
    });
  });
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return undefined;
}

/** `ToolContext.sandbox` under the hardened preset. */
export function sandboxPolicy(root: string, available: boolean): SandboxPolicy {
  return {
    kind: "bubblewrap",
    available,
    network: "none",
    filesystem: "workspace",
    writable: [root, "/tmp (private)"],
  };
}

export interface BwrapOptions {
  /** Canonical workspace root: the one writable host directory. */
  root: string;
  /** Working directory of the command (inside the root). */
  cwd: string;
  /** Absolute paths hidden from the command (what `Read(...)` deny rules match). */
  maskPaths: readonly string[];
  /** The complete environment of the command. */
  env: Record<string, string>;
  /** The real home to hide (default `$HOME`, else the OS's idea of it). */
  home?: string;
  /**
   * Absolute paths mounted read-only (the protected entries and their placeholders); by default
   * the protected entries that exist at the top of the workspace.
   */
  protect?: readonly string[];
  /**
   * Folders outside the workspace mounted read-only, even where the home or /tmp is hidden (the
   * agent's skill folders, for their scripts).
   */
  readOnly?: readonly string[];
  /** Mounted read-only if they still exist when bwrap starts (nested protected entries). */
  protectIfPresent?: readonly string[];
  /** The child's descriptor of the seccomp program (`--seccomp FD`). */
  seccompFd?: number;
}

/**
 * bubblewrap arguments (before the command). Order matters: later mounts cover earlier ones, so
 * the private /tmp, /run and home come before the workspace (which may live under them), and the
 * read-only entries and masks come after it.
 */
export function bwrapArgs(options: BwrapOptions): string[] {
  const { root } = options;
  const args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"];
  const home = options.home ?? process.env.HOME ?? homedir();
  // /tmp is private and writable; /run and the real home are empty and read-only.
  const candidates = ["/tmp", "/run", home, "/root"].map((path) => canonicalExisting(path));
  const hidden = [...new Set(candidates)].filter(
    // Hiding a path that holds part of the workspace would hide the workspace.
    (path): path is string =>
      path !== undefined && path !== "/" && !isWithin(root, path) && isDirectory(path),
  );
  for (const path of hidden) args.push("--tmpfs", path);
  // Before the workspace: a skill folder holding the workspace must not cover it read-only.
  for (const path of options.readOnly ?? []) args.push("--ro-bind", path, path);
  args.push("--bind", root, root);
  for (const path of options.protect ?? topLevelProtected(root)) args.push("--ro-bind", path, path);
  for (const path of options.protectIfPresent ?? []) args.push("--ro-bind-try", path, path);
  for (const path of options.maskPaths) {
    if (isDirectory(path)) args.push("--tmpfs", path, "--remount-ro", path);
    else if (existsSync(path)) args.push("--ro-bind", emptyFile(), path);
  }
  // Not recursive: a workspace mounted below the home stays writable.
  for (const path of hidden) if (path !== "/tmp") args.push("--remount-ro", path);
  args.push(...ISOLATION);
  if (options.seccompFd !== undefined) args.push("--seccomp", String(options.seccompFd));
  args.push("--clearenv");
  for (const [name, value] of Object.entries(options.env)) args.push("--setenv", name, value);
  args.push("--chdir", options.cwd);
  return args;
}

/** The protected entries at the top of `root`; through a symlink, what it leads to inside. */
function topLevelProtected(root: string): string[] {
  const paths = PROTECTED_ENTRIES.map((entry) => canonicalExisting(join(root, entry)));
  return paths.filter((p): p is string => p !== undefined && p !== root && isWithin(root, p));
}

/** True when `path` is (or links to) a directory. */
export function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

let emptyPath: string | undefined;

/**
 * A read-only empty file to mount over masked files. `/dev/null` cannot serve: bwrap's binds are
 * `nodev`, so reading a bound /dev/null fails with EACCES instead of reading empty. One file per
 * user, reused across processes (no litter); a file there that is not ours, empty and read-only
 * is never trusted: then a private one is made.
 */
function emptyFile(): string {
  if (emptyPath && isOwnEmptyFile(emptyPath)) return emptyPath;
  const shared = join(tmpdir(), `skein-sandbox-empty-${process.getuid?.() ?? "user"}`);
  try {
    writeFileSync(shared, "", { flag: "wx", mode: 0o444 });
  } catch {}
  if (isOwnEmptyFile(shared)) {
    emptyPath = shared;
    return shared;
  }
  const dir = mkdtempSync(join(tmpdir(), "skein-sandbox-"));
  emptyPath = join(dir, "empty");
  writeFileSync(emptyPath, "", { mode: 0o444 });
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  return emptyPath;
}

function isOwnEmptyFile(path: string): boolean {
  try {
    const stat = lstatSync(path);
    const uid = process.getuid?.();
    return (
      stat.isFile() &&
      stat.size === 0 &&
      (stat.mode & 0o222) === 0 &&
      (uid === undefined || stat.uid === uid)
    );
  } catch {
    return false;
  }
}

/** Canonical path of an existing entry, or undefined (a dangling symlink, a vanished file). */
export function canonicalExisting(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}
