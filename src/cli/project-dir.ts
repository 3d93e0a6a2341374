// The command's own folder in a project, .skein/: the session log, the approval secret that seals
// its paused runs, and a .gitignore so that neither is committed by `git add -A`.

import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import { CliError } from "./failure.ts";

export const PROJECT_DIR = ".skein";
const SECRET_FILE = "approval-secret";

/**
 * The rule the command adds to every agent it runs with a project key: the agent's own tools
 * (Read, Grep, Bash's readers, globs that could name it) must never carry the key into the
 * transcript, where it would reach the provider and the sessions database.
 */
export const SECRET_READ_DENY = `Read(${PROJECT_DIR}/${SECRET_FILE})`;

/** Creates .skein/ in `cwd` when missing, with a .gitignore that ignores everything in it. */
export function ensureProjectDir(cwd: string): string {
  const dir = path.join(cwd, PROJECT_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // As pytest and others do: the folder ignores itself, whatever the project's .gitignore says.
  createOnce(
    path.join(dir, ".gitignore"),
    "# Created by skein: its session log and keys stay out of git.\n*\n",
    0o644,
  );
  return dir;
}

/**
 * The project's approval secret (.skein/approval-secret), created on first use: a paused run's
 * seals are made with it, so `--continue` in a later process can check them. Mode 0600, never in
 * the sessions database (whoever can write the log must not also hold the key). A file that
 * others can read, or that is not a plain file of this user's, is refused rather than trusted.
 */
export function projectSecret(cwd: string): string {
  const file = path.join(ensureProjectDir(cwd), SECRET_FILE);
  createOnce(file, `${randomBytes(32).toString("base64url")}\n`, 0o600);
  // Checked and read through one descriptor opened without following a link, so the file read
  // is the file checked (no swap between the two).
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ELOOP") throw error;
    throw refused(file, "is a symbolic link");
  }
  let text: string;
  try {
    const stat = fstatSync(fd);
    const problem = !stat.isFile()
      ? "is not a regular file"
      : process.getuid && stat.uid !== process.getuid()
        ? "belongs to another user"
        : (stat.mode & 0o077) !== 0
          ? `can be read by others (mode ${(stat.mode & 0o777).toString(8)})`
          : undefined;
    if (problem) throw refused(file, problem);
    text = readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
  const secret = text.trim();
  if (secret.length < 16)
    throw new CliError(
      `${file} holds no usable approval secret (fewer than 16 characters); remove it and skein makes a new one (runs paused with the old one can then no longer be resumed).`,
    );
  return secret;
}

function refused(file: string, problem: string): CliError {
  return new CliError(
    `${file} ${problem}; skein keeps its approval secret there. Remove the file (runs paused with it can then no longer be resumed) or make it yours with mode 600 (chmod 600).`,
  );
}

/**
 * Writes `text` to `file` unless it exists. The text goes to a temporary file that is then hard
 * linked into place, so two commands starting at once never see a half-written file: one link
 * wins, the other finds the file whole.
 */
function createOnce(file: string, text: string, mode: number): void {
  if (lstatSync(file, { throwIfNoEntry: false })) return;
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  const fd = openSync(temporary, "wx", mode);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temporary, file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return;
    // A file system without hard links (FAT, some network shares): an exclusive create instead,
    // whose reader may, at worst, meet the file before its one write lands (then too short: refused).
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS")
      throw error;
    writeExclusive(file, text, mode);
  } finally {
    rmSync(temporary, { force: true });
  }
}

function writeExclusive(file: string, text: string, mode: number): void {
  let fd: number;
  try {
    fd = openSync(file, "wx", mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return;
    throw error;
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}
