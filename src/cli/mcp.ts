// The workspace's .mcp.json (the format Claude Code and others use). The file can come from
// anyone's repository and names commands to start, so a server starts only when the user
// approves it on the terminal or names it with --mcp-server; its tools' calls then ask unless an
// --allow rule covers them.

import { readFile } from "node:fs/promises";
import path from "node:path";
import type { AgentHooks } from "../index.ts";
import { type McpServer, mcpServer } from "../mcp/index.ts";
import { askYesNo, printable } from "./approve.ts";
import { CliError } from "./failure.ts";
import type { Terminal } from "./terminal.ts";

const FILE = ".mcp.json";

/** What .mcp.json declares, entry by entry, as written. */
export interface McpConfig {
  file: string;
  entries: Map<string, Record<string, unknown>>;
}

/** The workspace's .mcp.json; undefined when there is none. Throws a CliError when it cannot be read as one. */
export async function readMcpConfig(cwd: string): Promise<McpConfig | undefined> {
  const file = path.join(cwd, FILE);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new CliError(`${FILE} could not be read: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CliError(
      `${FILE} is not valid JSON (${(error as Error).message}); fix or remove it.`,
    );
  }
  const servers = (parsed as { mcpServers?: unknown } | null)?.mcpServers;
  if (typeof servers !== "object" || servers === null || Array.isArray(servers))
    throw new CliError(
      `${FILE} has no "mcpServers" object; it should look like { "mcpServers": { "name": { "command": "...", "args": [] } } }.`,
    );
  const entries = new Map<string, Record<string, unknown>>();
  for (const [name, entry] of Object.entries(servers))
    entries.set(
      name,
      (typeof entry === "object" && entry !== null ? entry : {}) as Record<string, unknown>,
    );
  return { file, entries };
}

export interface McpChoice {
  /** The servers to give the agent, by name. */
  servers: Record<string, McpServer>;
  /** Lines for the user: servers not started and why. */
  notices: string[];
  /** Ctrl-C at a question. */
  interrupted?: boolean;
}

/**
 * The servers of .mcp.json that may start: those named with --mcp-server, and, on an interactive
 * terminal, those the user approves one by one. Off a terminal the others do not start, and a
 * notice says so. A named server that .mcp.json lacks or describes wrongly is an error.
 */
export async function chooseMcpServers(
  config: McpConfig | undefined,
  named: readonly string[],
  context: { terminal: Terminal; signal: AbortSignal; onInterrupt: () => void },
): Promise<McpChoice> {
  const choice: McpChoice = { servers: {}, notices: [] };
  for (const name of named) {
    const entry = config?.entries.get(name);
    if (!config || !entry)
      throw new CliError(
        config
          ? `--mcp-server ${name}: ${FILE} has no server "${name}" (it has ${[...config.entries.keys()].join(", ") || "none"}).`
          : `--mcp-server ${name}: there is no ${FILE} in this directory.`,
      );
    choice.servers[name] = serverFrom(entry, (message) => {
      throw new CliError(`--mcp-server ${name}: ${message}`);
    })!;
  }
  if (!config) return choice;
  const others = [...config.entries].filter(([name]) => !named.includes(name));
  const askable: [string, Record<string, unknown>, McpServer][] = [];
  for (const [name, entry] of others) {
    const server = serverFrom(entry, (message) => {
      choice.notices.push(`${FILE}: not starting the MCP server "${name}": ${message}`);
    });
    if (server) askable.push([name, entry, server]);
  }
  if (askable.length === 0) return choice;
  const { colors } = context.terminal;
  const outcome = await askYesNo(
    askable.map(([name, entry]) => ({
      shown: `${colors.yellow("mcp server")} ${colors.bold(printable(name))} ${colors.dim(`(from ${FILE})`)} ${printable(describeEntry(entry))}\n`,
      question: "  start it? [y/N] ",
    })),
    context,
  );
  if (outcome.kind === "interrupted") return { ...choice, interrupted: true };
  const declined: string[] = [];
  askable.forEach(([name, , server], index) => {
    if (outcome.kind === "answered" && outcome.answers[index]) choice.servers[name] = server;
    else declined.push(name);
  });
  if (declined.length > 0) {
    const why =
      outcome.kind === "answered"
        ? "declined"
        : `they start only when approved on an interactive terminal${outcome.why ? ` (${outcome.why})` : ""}, or named with --mcp-server NAME`;
    choice.notices.push(
      `${FILE}: not starting the MCP server${declined.length > 1 ? "s" : ""} ${declined.join(", ")} (${why}).`,
    );
  }
  return choice;
}

/**
 * Each MCP tool call asks, unless an --allow rule names the tool (`mcp__fs__read_file`, or a
 * pattern such as `mcp__fs__*`); --deny rules still refuse first.
 */
export function askForMcpCalls(
  allow: readonly string[],
): NonNullable<AgentHooks["beforeToolCall"]> {
  const allowed = mcpCallAllowed(allow);
  return ({ name }) => {
    const server = /^mcp__(.+?)__/.exec(name)?.[1];
    if (server === undefined || allowed(name)) return undefined;
    return {
      ask: `a tool of the MCP server "${server}": each call asks unless an --allow rule covers it, such as --allow "mcp__${server}__*"`,
    };
  };
}

/**
 * Whether an --allow rule names this MCP tool, so its calls run without asking (and a paused
 * call of it is answered by `--continue` with that rule).
 */
export function mcpCallAllowed(allow: readonly string[]): (name: string) => boolean {
  const allowed = allow.map(ruleMatcher);
  return (name) => /^mcp__.+?__/.test(name) && allowed.some((matches) => matches(name));
}

/** A bare tool-name rule (`*` for any characters); rules with a pattern in parentheses name no MCP tool. */
function ruleMatcher(rule: string): (name: string) => boolean {
  const bare = rule.trim();
  if (bare.includes("(")) return () => false;
  const pattern = new RegExp(
    `^${bare
      .split("*")
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
  );
  return (name) => pattern.test(name);
}

function serverFrom(
  entry: Record<string, unknown>,
  fail: (message: string) => void,
): McpServer | undefined {
  try {
    // A server's own output would run through the command's raw: it is not shown, whatever the
    // entry says. Only a server started over stdio has one (an HTTP entry takes no stderr).
    const quiet = entry.url === undefined ? { stderr: "ignore" } : {};
    return mcpServer({ ...entry, ...quiet } as Parameters<typeof mcpServer>[0]);
  } catch (error) {
    fail((error as Error).message.replace(/^mcpServer\(\): /, ""));
    return undefined;
  }
}

/**
 * What a server runs or where it is, as the user should see it before approving it: the whole
 * command line, every environment variable with its value (`NODE_OPTIONS=--require x.js` runs
 * code as surely as the command does) and the working directory. Escaped by the caller.
 */
function describeEntry(entry: Record<string, unknown>): string {
  if (typeof entry.url === "string") return `url ${entry.url}`;
  const args = Array.isArray(entry.args) ? entry.args.map(String) : [];
  const env = typeof entry.env === "object" && entry.env !== null ? Object.entries(entry.env) : [];
  const extra = [
    ...(env.length > 0
      ? [`env: ${env.map(([name, value]) => `${envName(name)}=${word(String(value))}`).join(" ")}`]
      : []),
    ...(entry.cwd !== undefined ? [`cwd: ${word(String(entry.cwd))}`] : []),
  ];
  const command = [String(entry.command), ...args].map(word).join(" ");
  return extra.length > 0 ? `${command} (${extra.join("; ")})` : command;
}

/** A variable's name as it is when it is one, quoted otherwise (an "=" would blur where the value starts). */
function envName(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : JSON.stringify(name);
}

/** A word of a command line: as it is when plain, quoted when spaces or quotes would blur where it ends. */
function word(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : JSON.stringify(text);
}
