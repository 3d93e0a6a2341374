import { isAbsolute } from "node:path";
import { isWithin } from "../tools/workspace.ts";

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
 * Values are checked too, for credentials inside URLs (see `withoutUrlCredentials`); a secret
 * under an innocent name in any other shape (a bare token in `CONFIG_VALUE`) is not detected.
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
    if (value !== undefined && !isCredentialVariable(name))
      result[name] = withoutUrlCredentials(value);
  }
  return result;
}

/** Query parameters that carry a secret whatever the variable's name: `sig` (signed URLs), `pwd`. */
const SECRET_PARAMETER = /^(sig|signature|pass|pwd)$|(^|_)(signature|sig)$/i;

/**
 * A value with the credentials inside its URLs taken out, the URLs otherwise kept, so
 * `DATABASE_URL` still names the database and a command that needs the password fails asking for
 * it rather than leaking it:
 * - a password in the user info goes, the user stays: `postgres://app:pw@db/x` becomes
 *   `postgres://app@db/x`, `redis://:pw@cache` becomes `redis://cache`;
 * - a user alone goes too in http(s), ws(s) and ftp URLs, where it is how tokens travel
 *   (`https://ghp_x@github.com/o/r` becomes `https://github.com/o/r`); elsewhere it names an
 *   account (`ssh://git@host`) and stays;
 * - query parameters named like a credential (`password`, `access_token`, `api_key`, `secret`,
 *   `X-Amz-Credential`, and `sig`/`signature` of signed URLs) are dropped whole.
 * Every URL in the value is treated (lists such as `redis://:a@h1,redis://:b@h2`); a password with
 * an unescaped `/` or `#` is found too (`user:pa/ss@host`). Text that is not URL-shaped is left
 * alone.
 */
export function withoutUrlCredentials(value: string): string {
  if (!value.includes("://")) return value;
  // Found by hand, in one pass: a regular expression for "up to the next scheme" backtracks.
  const starts: { scheme: number; rest: number }[] = [];
  for (let at = value.indexOf("://"); at !== -1; at = value.indexOf("://", at + 3)) {
    let scheme = at;
    while (scheme > 0 && /[a-z0-9+.-]/i.test(value[scheme - 1]!)) scheme--;
    while (scheme < at && !/[a-z]/i.test(value[scheme]!)) scheme++;
    if (scheme < at) starts.push({ scheme, rest: at + 3 });
  }
  let result = "";
  let copied = 0;
  for (const [index, start] of starts.entries()) {
    if (start.scheme < copied) continue;
    const next = starts[index + 1]?.scheme ?? value.length;
    const space = value.slice(start.rest, next).search(/\s/);
    const end = space === -1 ? next : start.rest + space;
    const scheme = value.slice(start.scheme, start.rest - 3);
    result += value.slice(copied, start.scheme) + cleanUrl(scheme, value.slice(start.rest, end));
    copied = end;
  }
  return result + value.slice(copied);
}

/** One URL, given as its scheme and what follows `://`, without its credentials. */
function cleanUrl(scheme: string, rest: string): string {
  const { userinfo, after } = splitUserinfo(rest);
  let authority = "";
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(":");
    const user = colon === -1 ? userinfo : userinfo.slice(0, colon);
    const tokenCarrier = colon === -1 && /^(https?|wss?|ftps?)$|\+https?$/i.test(scheme);
    if (user && !tokenCarrier) authority = `${user}@`;
  }
  return `${scheme}://${authority}${withoutSecretParameters(after)}`;
}

/** The user info of `rest` (what follows `scheme://`), if any, and what comes after its `@`. */
function splitUserinfo(rest: string): { userinfo?: string; after: string } {
  const slash = rest.search(/[/?#]/);
  const authority = slash === -1 ? rest : rest.slice(0, slash);
  const at = authority.lastIndexOf("@");
  if (at !== -1) return { userinfo: rest.slice(0, at), after: rest.slice(at + 1) };
  // `user:pa/ss@host`: a colon not followed by a port, then an `@` further on.
  const colon = authority.indexOf(":");
  const port = authority.slice(colon + 1);
  const later = rest.indexOf("@", authority.length);
  if (colon !== -1 && !authority.startsWith("[") && !/^\d*$/.test(port) && later !== -1)
    return { userinfo: rest.slice(0, later), after: rest.slice(later + 1) };
  return { after: rest };
}

function withoutSecretParameters(url: string): string {
  const question = url.indexOf("?");
  if (question === -1) return url;
  const hash = url.indexOf("#", question);
  const end = hash === -1 ? url.length : hash;
  const kept = url
    .slice(question + 1, end)
    .split("&")
    .filter((pair) => {
      const name = decodeSafely(pair.split("=")[0]!).replace(/[-.\s]/g, "_");
      return !(isCredentialVariable(name) || SECRET_PARAMETER.test(name));
    });
  const query = kept.length > 0 ? `?${kept.join("&")}` : "";
  return `${url.slice(0, question)}${query}${url.slice(end)}`;
}

function decodeSafely(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
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
      result[name] = withoutUrlCredentials(value);
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
