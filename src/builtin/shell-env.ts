import { isAbsolute, relative } from "node:path";

/**
 * Variable names Bash never passes on (case-insensitive), preset or not (DESIGN, RELIABILITY C12).
 * The DESIGN list, plus other common credential shapes:
 * - `*_API_KEY`, `*_TOKEN`, `*SECRET*`, `ANTHROPIC_*`, `OPENAI_*` (DESIGN)
 * - `*PASSWORD*`, `*PASSWD*`: database and service passwords (`PGPASSWORD`, `MYSQL_PWD` below)
 * - `*_CREDENTIALS*`: paths to credential files (`GOOGLE_APPLICATION_CREDENTIALS`)
 * - `*_ACCESS_KEY`, `*_PRIVATE_KEY`, `*_ACCESS_KEY_ID`: cloud keys (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`)
 * - `AWS_SESSION_TOKEN`, `AWS_SECURITY_TOKEN` (already `*_TOKEN`), `MYSQL_PWD`
 * Secrets under innocent names (a password inside `DATABASE_URL`) are not detected.
 */
const CREDENTIAL_PATTERNS: readonly RegExp[] = [
  /_API_KEY$/i,
  /_TOKEN$/i,
  /SECRET/i,
  /^ANTHROPIC_/i,
  /^OPENAI_/i,
  /PASSWORD/i,
  /PASSWD/i,
  /_CREDENTIALS/i,
  /_ACCESS_KEY(_ID)?$/i,
  /_PRIVATE_KEY$/i,
  /^MYSQL_PWD$/i,
];

/** True when a variable of this name may carry a credential and is kept from commands. */
export function isCredentialVariable(name: string): boolean {
  return CREDENTIAL_PATTERNS.some((pattern) => pattern.test(name));
}

/** The environment of an unsandboxed Bash command: `source` without credentials. */
export function scrubbedEnvironment(
  source: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value !== undefined && !isCredentialVariable(name)) result[name] = value;
  }
  return result;
}

const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Inside the sandbox `/tmp` is a private tmpfs: a writable home that vanishes, never the real one. */
export const SANDBOX_HOME = "/tmp";

/**
 * The allow-listed environment inside the sandbox: PATH, LANG, LC_*, TERM, TZ from `source`,
 * and HOME set to the private /tmp. HOME is not the workspace, so tools do not write caches or
 * read dotfiles (`.gitconfig`) there. PATH loses relative entries and entries inside the
 * workspace, so the repository cannot choose which binary `git` or `ls` is.
 */
export function sandboxEnvironment(
  workspaceRoot: string,
  source: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const result: Record<string, string> = {
    PATH: safePath(source.PATH ?? DEFAULT_PATH, workspaceRoot),
    HOME: SANDBOX_HOME,
  };
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined || isCredentialVariable(name)) continue;
    if (name === "LANG" || name === "TERM" || name === "TZ" || name.startsWith("LC_")) {
      result[name] = value;
    }
  }
  return result;
}

function safePath(path: string, workspaceRoot: string): string {
  const kept = path.split(":").filter((entry) => {
    if (!isAbsolute(entry)) return false;
    return !isInsideOrEqual(workspaceRoot, entry);
  });
  return kept.length > 0 ? kept.join(":") : DEFAULT_PATH;
}

/** True when `path` is `root` or below it (both absolute; compared lexically, no symlinks). */
export function isInsideOrEqual(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (rel !== ".." && !rel.startsWith("../") && !isAbsolute(rel));
}
