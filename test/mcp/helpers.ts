/**
 * MCP test support: where the published servers and our fixtures are, handles closed after each
 * test, and the fixture's event log.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { AgentEvent } from "skein";
import { type McpServer, type McpServerOptions, mcpServer } from "skein/mcp";
import { afterEach } from "vitest";

const require = createRequire(import.meta.url);

/** The file a published package's bin runs (started with `process.execPath`, not npx). */
export function binOf(pkg: string): string {
  const manifest = require.resolve(`${pkg}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifest, "utf8")) as {
    bin: string | Record<string, string>;
  };
  const entry = typeof bin === "string" ? bin : Object.values(bin)[0]!;
  return path.join(path.dirname(manifest), entry);
}

export const EVERYTHING = binOf("@modelcontextprotocol/server-everything");
export const FILESYSTEM = binOf("@modelcontextprotocol/server-filesystem");
export const SDK_FIXTURE = fileURLToPath(new URL("./fixtures/sdk-server.mjs", import.meta.url));
export const RAW_FIXTURE = fileURLToPath(new URL("./fixtures/raw-server.mjs", import.meta.url));

/** Handles made through it are closed after each test (their processes end). */
export function useMcpServers(): (options: McpServerOptions) => McpServer {
  const made: McpServer[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map((server) => server.close()));
  });
  return (options) => {
    const server = mcpServer(options);
    made.push(server);
    return server;
  };
}

/** Options starting the SDK 1.x fixture, logging to `log`. */
export function sdkFixture(log: string, extra: Partial<McpServerOptions> = {}): McpServerOptions {
  return {
    command: process.execPath,
    args: [SDK_FIXTURE],
    env: { MCP_FIXTURE_LOG: log },
    stderr: "ignore",
    ...extra,
  } as McpServerOptions;
}

/** Options starting the hand-written fixture in one of its modes. */
export function rawFixture(mode: string, extra: Partial<McpServerOptions> = {}): McpServerOptions {
  return {
    command: process.execPath,
    args: [RAW_FIXTURE, mode],
    stderr: "ignore",
    ...extra,
  } as McpServerOptions;
}

export interface LogEntry {
  pid: number;
  event: string;
  name?: string;
  requestId?: number | string;
  args?: unknown;
}

/** The fixture's log so far. */
export function readLog(file: string): LogEntry[] {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LogEntry);
}

/** Every event of a stream, until its result. */
export async function collect(stream: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const events: AgentEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

export function ofType<T extends AgentEvent["type"]>(
  events: AgentEvent[],
  type: T,
): Extract<AgentEvent, { type: T }>[] {
  return events.filter((event): event is Extract<AgentEvent, { type: T }> => event.type === type);
}
