import { isAbsolute } from "node:path";
import { isWithin } from "./workspace.ts";

/**
 * Variable names Bash never passes on (case-insensitive), preset or not (DESIGN, RELIABILITY C12).
 * The DESIGN list, plus other common credential shapes. "Component" means a part between
 * underscores, so `TOKEN` matches `GH_TOKEN_2` but not `TOKENIZERS_PARALLELISM`:
 * - `*_API_KEY`, `*_TOKEN`, `*SECRET*`, `ANTHROPIC_*`, `OPENAI_*` (DESIGN)
 * - `API_KEY` or `APIKEY` anywhere (`API_KEY`, `SENDGRID_APIKEY`); `TOKEN` or `TOKENS` as a
 *   component, and `ACCESSTOKEN`/`AUTHTOKEN`/... written as one word (`NPM_AUTHTOKEN`)
 * - `*PASSWORD*`, `*PASSWD*`, `*PASSPHRASE*`, `*_PWD` (`PGPASSWORD`, `MYSQL_PWD`; `PWD` and
 *   `OLDPWD`, the working directories, are kept)
 * - `*CREDENTIAL*`: credentials or paths to them (`GOOGLE_APPLICATION_CREDENTIALS`)
 * - `ACCESS_KEY`, `PRIVATE_KEY` anywhere (`AWS_ACCESS_KEY_ID`, `SSH_PRIVATE_KEY_PATH`), and `KEY`
 *   as the last component (`STRIPE_KEY`, `SIGNING_KEY`; `KEYBOARD`, `MONKEY` are kept)
 * - `AUTH` as a component (`NPM_CONFIG__AUTH`, `DOCKER_AUTH_CONFIG`, `SSH_AUTH_SOCK`, which lets a
 *   command use the SSH agent's keys; `GIT_AUTHOR_NAME` is kept), `AUTHORIZATION`, `*_PAT`
 *   (personal access tokens: `GH_PAT`)
 * - ambient credentials: `*ASKPASS*` (a helper that answers password prompts), `KRB5CCNAME`
 *   (a Kerberos ticket cache), `BW_SESSION`, `OP_SESSION_*` (password manager sessions)
 * Secrets under innocent names are not detected: a password inside `DATABASE_URL` or a key in
 * `SENTRY_DSN` reaches the command (names that hold URLs are kept, whatever they carry).
 */
const CREDENTIAL_PATTERNS: readonly RegExp[] = [
  /API_?KEY/i,
  /(^|_)TOKENS?(_|$)/i,
  /(ACCESS|AUTH|API|BEARER|REFRESH|SESSION|SECURITY)TOKEN/i,
  /SECRET/i,
  /^ANTHROPIC_/i,
  /^OPENAI_/i,
  /PASSWORD/i,
  /PASSWD/i,
  /PASSPHRASE/i,
  /_PWD$/i,
  /CREDENTIAL/i,
  /ACCESS_?KEY/i,
  /PRIVATE_?KEY/i,
  /(^|_)KEY$/i,
  /(^|_)AUTH(_|$)/i,
  /AUTHORIZATION/i,
  /(^|_)PAT$/i,
  /ASKPASS/i,
  /^KRB5CCNAME$/i,
  /^BW_SESSION$/i,
  /^OP_SESSION_/i,
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
    return !isWithin(workspaceRoot, entry);
  });
  return kept.length > 0 ? kept.join(":") : DEFAULT_PATH;
}
