import { SkeinError } from "../core/errors.ts";

/**
 * An MCP server could not be connected, listed or restarted, or failed a call: the message names
 * the server and what happened. Reported as an `mcp_server_error` event or a tool's error result;
 * never thrown out of a run.
 */
export class McpServerError extends SkeinError {
  override name = "McpServerError";
}
