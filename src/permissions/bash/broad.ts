/** Allow patterns that in effect allow anything (`npx *`, `bash:*`): the gate warns about them. */
import { CODE_RUNNERS } from "./allow.ts";
import { basename, isOption, list } from "./types.ts";
import { WRAPPERS } from "./wrappers.ts";

/** Launchers of arbitrary code: followed by only options and a wildcard, a rule allows anything. */
const LAUNCHERS = new Set([
  ...WRAPPERS.keys(),
  ...CODE_RUNNERS,
  ...list("npx bunx pnpx uvx node nodejs deno bun tsx ts-node python pypy perl ruby php lua"),
  ...list("awk gawk mawk nawk pwsh"),
]);

/** Two-word launchers: `npm exec *` is as broad as `npx *`. */
const LAUNCHER_SUBCOMMANDS = new Map<string, string[]>([
  ["npm", ["exec", "x"]],
  ["pnpm", ["exec", "dlx"]],
  ["yarn", ["exec", "dlx"]],
  ["uv", ["run", "tool"]],
  ["pipx", ["run"]],
  ["poetry", ["run"]],
]);

/**
 * True for an allow pattern that in effect allows anything (`npx *`, `bash:*`, `sh *`, `*`,
 * `node *`, `python -c *`, `env *`, `xargs *`, `npm exec *`, `* --version`). Accepts the pattern
 * alone or as `Bash(...)`.
 */
export function allowsAnything(pattern: string): boolean {
  const words = patternWords(pattern);
  const wildcardAt = words.findIndex((w) => w.includes("*"));
  if (words.length === 0 || wildcardAt === 0) return true;
  if (wildcardAt < 0) return false;
  const [first, ...rest] = words.slice(0, wildcardAt);
  const program = launcherName(basename(first!));
  if (LAUNCHERS.has(program)) return rest.every(isOption);
  const [subcommand, ...options] = rest;
  const subcommands = LAUNCHER_SUBCOMMANDS.get(program) ?? [];
  return subcommand !== undefined && subcommands.includes(subcommand) && options.every(isOption);
}

/** `python3.12` -> `python`, `perl5` -> `perl`. */
function launcherName(program: string): string {
  return program.replace(/[\d.]+$/, "") || program;
}

/** The rule's words, with `Bash(...)` unwrapped and `P:*` read as `P *`. */
function patternWords(pattern: string): string[] {
  const body = (/^Bash\(([\s\S]*)\)$/.exec(pattern.trim())?.[1] ?? pattern).trim();
  const spaced = body.endsWith(":*") ? `${body.slice(0, -2)} *` : body;
  return spaced.split(/\s+/).filter(Boolean);
}
