// mcpServer() options, checked strictly (DESIGN point 9, prefix "mcpServer(): "). A `.mcp.json`
// entry is accepted as is: its transport is inferred from `command` / `url` when `type` is absent.

import { ConfigurationError } from "../core/errors.ts";
import { assertKnownOptions, assertOneOf, describeValue, SECURITY_KEYS } from "../core/options.ts";
import type { ToolSecurity } from "../tools/types.ts";

/** A server started as a child process, spoken to over its stdin and stdout. */
export interface McpStdioServerOptions {
  type?: "stdio" | undefined;
  /** The program to start (looked up on PATH), such as "npx" or `process.execPath`. */
  command: string;
  args?: string[] | undefined;
  /** Added to the MCP SDK's default inherited environment (PATH, HOME, ...: no credentials). */
  env?: Record<string, string> | undefined;
  cwd?: string | undefined;
  /** The server's stderr: shown ("inherit", the default) or dropped ("ignore"). */
  stderr?: "inherit" | "ignore" | undefined;
}

/** A server reached over streamable HTTP. */
export interface McpHttpServerOptions {
  type?: "http" | undefined;
  url: string | URL;
  headers?: Record<string, string> | undefined;
}

/** What both kinds accept. */
export interface McpCommonOptions {
  /** Declared for every tool of the server (checked as for `tool()`; the hardened preset requires it). */
  security?: ToolSecurity | undefined;
  /** Bounds connecting plus the first tools/list, and each tool call. Default 60,000 ms. */
  timeoutMs?: number | undefined;
}

export type McpServerOptions = (McpStdioServerOptions | McpHttpServerOptions) & McpCommonOptions;

/** The checked options, with the transport decided. */
export type McpServerSpec =
  | {
      type: "stdio";
      command: string;
      args: string[];
      env?: Record<string, string>;
      cwd?: string;
      stderr: "inherit" | "ignore";
      security?: ToolSecurity;
      timeoutMs: number;
    }
  | {
      type: "http";
      url: URL;
      headers?: Record<string, string>;
      security?: ToolSecurity;
      timeoutMs: number;
    };

/** The MCP SDK's own request default. */
export const DEFAULT_MCP_TIMEOUT_MS = 60_000;

const OWNER = "mcpServer()";
const STDIO_KEYS = ["command", "args", "env", "cwd", "stderr"] as const;
const HTTP_KEYS = ["url", "headers"] as const;
const KEYS: ReadonlySet<string> = new Set([
  "type",
  ...STDIO_KEYS,
  ...HTTP_KEYS,
  "security",
  "timeoutMs",
]);

export function checkMcpServerOptions(options: unknown): McpServerSpec {
  if (typeof options !== "object" || options === null || Array.isArray(options))
    throw new ConfigurationError(
      `${OWNER}: options must be an object such as { command: "npx", args: [...] } or { url: "https://..." }, received ${describeValue(options)}.`,
    );
  const given = options as Record<string, unknown>;
  if (given.type === "sse")
    throw new ConfigurationError(
      `${OWNER}: the "sse" transport (HTTP with Server-Sent Events, deprecated by MCP since 2025-03-26) is not supported. Give the server's streamable HTTP endpoint as url (type "http", often the same address ending in /mcp), or start it over stdio with command.`,
    );
  assertKnownOptions(OWNER, given, KEYS);
  assertOneOf(OWNER, "type", given.type, ["stdio", "http"]);
  const hasCommand = given.command !== undefined;
  const hasUrl = given.url !== undefined;
  if (hasCommand && hasUrl)
    throw new ConfigurationError(
      `${OWNER}: give either command (a server started over stdio) or url (a streamable HTTP server), not both.`,
    );
  if (!hasCommand && !hasUrl)
    throw new ConfigurationError(
      `${OWNER}: give command to start a server over stdio ({ command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", dir] }) or url for a streamable HTTP server ({ url: "http://127.0.0.1:3001/mcp" }).`,
    );
  const type = hasCommand ? "stdio" : "http";
  if (given.type !== undefined && given.type !== type)
    throw new ConfigurationError(
      `${OWNER}: type "${String(given.type)}" needs ${given.type === "stdio" ? "command" : "url"}, but ${hasCommand ? "command" : "url"} was given. Leave type out: it is inferred from command or url.`,
    );
  const misplaced = (type === "stdio" ? HTTP_KEYS : STDIO_KEYS).find(
    (key) => given[key] !== undefined,
  );
  if (misplaced)
    throw new ConfigurationError(
      `${OWNER}: ${misplaced} applies to ${type === "stdio" ? "an HTTP server (url)" : "a server started over stdio (command)"}, but this one ${type === "stdio" ? "is started with command" : "is reached at url"}.`,
    );
  const security = checkSecurity(given.security);
  const timeoutMs = checkTimeout(given.timeoutMs);
  const common = { ...(security ? { security } : {}), timeoutMs };

  if (type === "http") {
    const url = checkUrl(given.url);
    const headers = checkStringRecord("headers", given.headers);
    return { type, url, ...(headers ? { headers } : {}), ...common };
  }
  if (typeof given.command !== "string" || given.command.trim() === "")
    throw new ConfigurationError(
      `${OWNER}: command must be a non-empty string (the program to start), received ${describeValue(given.command)}.`,
    );
  if (
    given.args !== undefined &&
    (!Array.isArray(given.args) || given.args.some((arg) => typeof arg !== "string"))
  )
    throw new ConfigurationError(
      `${OWNER}: args must be an array of strings, received ${describeValue(given.args)}.`,
    );
  const env = checkStringRecord("env", given.env);
  if (given.cwd !== undefined && (typeof given.cwd !== "string" || given.cwd === ""))
    throw new ConfigurationError(
      `${OWNER}: cwd must be a directory path, received ${describeValue(given.cwd)}.`,
    );
  assertOneOf(OWNER, "stderr", given.stderr, ["inherit", "ignore"]);
  return {
    type,
    command: given.command,
    args: [...((given.args as string[] | undefined) ?? [])],
    ...(env ? { env } : {}),
    ...(given.cwd !== undefined ? { cwd: given.cwd as string } : {}),
    stderr: (given.stderr as "inherit" | "ignore" | undefined) ?? "inherit",
    ...common,
  };
}

function checkUrl(value: unknown): URL {
  let url: URL | undefined;
  if (value instanceof URL) url = value;
  else if (typeof value === "string" && URL.canParse(value)) url = new URL(value);
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:"))
    throw new ConfigurationError(
      `${OWNER}: url must be an http:// or https:// address (a string or a URL), received ${describeValue(value)}.`,
    );
  return new URL(url.href);
}

function checkStringRecord(name: string, value: unknown): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (
    typeof value !== "object" ||
    value === null ||
    Array.isArray(value) ||
    Object.values(value).some((entry) => typeof entry !== "string")
  )
    throw new ConfigurationError(
      `${OWNER}: ${name} must map names to string values, received ${describeValue(value)}.`,
    );
  return { ...(value as Record<string, string>) };
}

function checkTimeout(value: unknown): number {
  if (value === undefined) return DEFAULT_MCP_TIMEOUT_MS;
  if (typeof value !== "number" || !(value > 0) || !Number.isFinite(value))
    throw new ConfigurationError(
      `${OWNER}: timeoutMs must be a positive number of milliseconds, received ${describeValue(value)}.`,
    );
  return value;
}

/** As `tool()` checks `security` (src/tools/definition.ts), with this prefix. */
function checkSecurity(value: unknown): ToolSecurity | undefined {
  if (value === undefined) return undefined;
  const owner = `${OWNER}: security`;
  assertKnownOptions(owner, value, SECURITY_KEYS);
  const security = value as Record<string, unknown>;
  if (security.network === undefined)
    throw new ConfigurationError(
      `${owner}: "network" is required ("none", "loopback", "private" or "unrestricted").`,
    );
  assertOneOf(owner, "network", security.network, ["none", "loopback", "private", "unrestricted"]);
  assertOneOf(owner, "filesystem", security.filesystem, ["none", "workspace", "unrestricted"]);
  assertOneOf(owner, "sideEffects", security.sideEffects, ["none", "workspace", "external"]);
  return { ...(security as ToolSecurity) };
}
