// The MCP SDK's split v2 packages are optional peers: loaded on first use (the first connection,
// the first serveMcp()), so importing skein/mcp costs nothing until a server is used, and a
// missing package is a clear message instead of a failed import.

import { readFileSync } from "node:fs";
import { ConfigurationError } from "../core/errors.ts";

type ClientModule = typeof import("@modelcontextprotocol/client");
type ClientStdioModule = typeof import("@modelcontextprotocol/client/stdio");
type ServerModule = typeof import("@modelcontextprotocol/server");
type ServerStdioModule = typeof import("@modelcontextprotocol/server/stdio");

let client: Promise<{ sdk: ClientModule; stdio: ClientStdioModule }> | undefined;
let server: Promise<{ sdk: ServerModule; stdio: ServerStdioModule }> | undefined;

export function loadClientSdk(): Promise<{ sdk: ClientModule; stdio: ClientStdioModule }> {
  client ??= Promise.all([
    import("@modelcontextprotocol/client"),
    import("@modelcontextprotocol/client/stdio"),
  ]).then(
    ([sdk, stdio]) => ({ sdk, stdio }),
    (error: unknown) => {
      client = undefined;
      throw missing("@modelcontextprotocol/client", "mcpServer()", error);
    },
  );
  return client;
}

export function loadServerSdk(): Promise<{ sdk: ServerModule; stdio: ServerStdioModule }> {
  server ??= Promise.all([
    import("@modelcontextprotocol/server"),
    import("@modelcontextprotocol/server/stdio"),
  ]).then(
    ([sdk, stdio]) => ({ sdk, stdio }),
    (error: unknown) => {
      server = undefined;
      throw missing("@modelcontextprotocol/server", "serveMcp()", error);
    },
  );
  return server;
}

function missing(name: string, owner: string, error: unknown): Error {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND")
    return error instanceof Error ? error : new Error(String(error));
  return new ConfigurationError(
    `${owner} needs the MCP SDK package ${name} (an optional peer of skein): npm install ${name}@^2.4`,
    { cause: error },
  );
}

let version: string | undefined;

/** skein's version, as MCP peers are told it (clientInfo, serverInfo). */
export function skeinVersion(): string {
  if (version === undefined) {
    try {
      // src/mcp/ and dist/mcp/ (or dist/chunks/) both sit two levels below the package root.
      const url = new URL("../../package.json", import.meta.url);
      version = (JSON.parse(readFileSync(url, "utf8")) as { version?: string }).version ?? "0.0.0";
    } catch {
      version = "0.0.0";
    }
  }
  return version;
}
