/**
 * MCP servers' tools as skein tools (mcpServer), and skein tools served over MCP (serveMcp). The
 * only entry that imports the MCP SDK (its split v2 packages, optional peers), and only when a
 * server is first connected or served.
 * @module skein/mcp
 */

export { McpServerError } from "./errors.ts";
export type {
  McpCommonOptions,
  McpHttpServerOptions,
  McpServerOptions,
  McpStdioServerOptions,
} from "./options.ts";
export type { McpServerTransport, ServedMcp, ServeMcpOptions } from "./serve.ts";
export { serveMcp } from "./serve.ts";
export { McpServer, mcpServer } from "./server.ts";
