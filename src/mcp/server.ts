// The McpServer handle: a lazy, cheap description of a server that connects when its tools are
// first asked for, keeps the connection and its tool list until close(), reconnects once per call
// after the server died, and tells the engine when the list changed (a ToolSource, src/run/tool-source.ts).

import { ConfigurationError, ToolTimeoutError } from "../core/errors.ts";
import { TOOL_SOURCE, type ToolSource } from "../run/tool-source.ts";
import type { ToolContext, ToolDefinition, ToolResult, ToolSecurity } from "../tools/types.ts";
import { type Connection, type McpTool, openConnection } from "./connection.ts";
import { toolResultFromMcp } from "./content.ts";
import { McpServerError } from "./errors.ts";
import { checkMcpServerOptions, type McpServerOptions, type McpServerSpec } from "./options.ts";
import { buildMcpTools } from "./tools.ts";

const SERVER_NAME = /^[A-Za-z0-9_-]{1,40}$/;

/** Progress tokens are unique per process: every call sends one. */
let progressTokens = 0;

/**
 * An MCP server's tools as skein tools. Made by `mcpServer()`; give it to an agent under a name
 * (`mcpServers: { fs }`), or ask it for its tools directly.
 */
/**
 * How long a server that let a call time out has to answer a ping before it is restarted (at most
 * a quarter of its timeout: the call's own time runs meanwhile).
 */
const PING_TIMEOUT_MS = 5_000;

export class McpServer implements ToolSource {
  readonly [TOOL_SOURCE] = true as const;
  readonly security?: ToolSecurity;
  readonly #spec: McpServerSpec;
  #connection?: Connection;
  #connecting?: Promise<Connection>;
  /** Bumped by close(): a connection that completes after it is closed at once. */
  #generation = 0;
  /** The last list fetched (kept after the server died: its tools stay offered). */
  #list?: McpTool[];
  #listVersion = 0;
  #changed = false;
  #built = new Map<string, { version: number; tools: ToolDefinition[] }>();

  constructor(spec: McpServerSpec) {
    this.#spec = spec;
    if (spec.security) this.security = spec.security;
  }

  /** The list changed since it was last fetched (a `notifications/tools/list_changed`, or a restart that found another list). */
  get changed(): boolean {
    return this.#changed;
  }

  /**
   * The server's tools, connecting if needed. Without a name they keep the server's own names
   * (for apps); an agent passes its key for the server, and gets `mcp__<name>__<tool>`.
   */
  async tools(name?: string, signal?: AbortSignal): Promise<ToolDefinition[]> {
    if (name !== undefined && (typeof name !== "string" || !SERVER_NAME.test(name)))
      throw new ConfigurationError(
        `McpServer.tools(): the server name ${JSON.stringify(name)} must be 1-40 letters, digits, "_" or "-".`,
      );
    const label = name ?? this.#describe();
    let list = this.#list;
    const connection = this.#connection;
    if (!list || !connection) {
      list = (await this.#connect(label, signal)).tools;
    } else if (connection.alive && connection.stale) {
      list = await connection.list(signal).catch((error: unknown) => {
        if (signal?.aborted) throw signal.reason;
        throw new McpServerError(
          `MCP server "${label}" could not list its tools again after they changed: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      });
      this.#accept(list);
    }
    // A change announced while the list was fetched: fetch again before the next request.
    const current = this.#connection;
    this.#changed = current?.alive === true && current.stale;
    return this.#definitions(name, label);
  }

  /** Ends the connection (a stdio server's process exits; an HTTP session is ended). Idempotent; a later use connects again. */
  async close(): Promise<void> {
    this.#generation += 1;
    const connection = this.#connection;
    this.#connection = undefined;
    this.#connecting = undefined;
    this.#list = undefined;
    this.#changed = false;
    this.#built.clear();
    await connection?.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * One tools/call: reconnects once when the server died (or, after a timeout, does not answer a
   * ping), maps the result, reports progress.
   */
  async #call(label: string, tool: string, input: unknown, ctx: ToolContext): Promise<ToolResult> {
    let connection = this.#connection;
    // A call timed out on this connection: the server may be wedged. A ping tells; one that is
    // not answered in time means a fresh connection (a new process for stdio).
    if (connection?.alive && connection.suspect) {
      const pinged = connection;
      const answered = await pinged
        .hold(() =>
          pinged.client.ping({
            signal: ctx.signal,
            timeout: Math.min(this.#spec.timeoutMs / 4, PING_TIMEOUT_MS),
          }),
        )
        .then(
          () => true,
          () => false,
        );
      if (ctx.signal.aborted) throw ctx.signal.reason;
      if (answered) connection.suspect = false;
      else if (this.#connection === connection) void connection.close();
    }
    if (!connection?.alive) {
      try {
        connection = await this.#connect(label, ctx.signal);
      } catch (error) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        throw new McpServerError(
          `MCP server "${label}" is not running and could not be restarted: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }
    }
    const token = `skein-${++progressTokens}`;
    connection.progress.set(token, (progress) => ctx.update(progress));
    const errorsBefore = connection.transportErrors.count;
    try {
      const result = await connection.hold(() =>
        connection.client.callTool(
          {
            name: tool,
            arguments: input as Record<string, unknown>,
            _meta: { progressToken: token },
          },
          {
            signal: ctx.signal,
            // The tool's own timeout (the same value) ends the call first, with its usual message.
            timeout: this.#spec.timeoutMs + 1_000,
          },
        ),
      );
      return toolResultFromMcp(result);
    } catch (error) {
      if (ctx.signal.aborted) {
        if (ctx.signal.reason instanceof ToolTimeoutError) connection.suspect = true;
        throw ctx.signal.reason;
      }
      let message = error instanceof Error ? error.message : String(error);
      if (isProtocolError(error))
        throw new McpServerError(`MCP server "${label}" answered with an error: ${message}`, {
          cause: error,
        });
      if (isInvalidResult(error))
        throw new McpServerError(
          `MCP server "${label}" answered the call with something that is not a tool result: ${message}`,
          { cause: error },
        );
      // The connection broke (the process exited, the HTTP session failed): the next call starts
      // afresh. What the transport reported meanwhile says why (an answer past its read buffer).
      if (this.#connection === connection) void connection.close();
      if (connection.transportErrors.count > errorsBefore)
        message += `; the transport reported: ${connection.transportErrors.last}`;
      throw new McpServerError(
        this.#spec.type === "stdio"
          ? `MCP server "${label}" stopped answering during the call (${message}). Its tools stay available: the next call starts it again.`
          : `MCP server "${label}": its HTTP session failed during the call (${message}). Its tools stay available: the next call connects again.`,
        { cause: error },
      );
    } finally {
      connection.progress.delete(token);
    }
  }

  /** Connects, sharing one attempt between concurrent callers; bounded by timeoutMs. */
  async #connect(label: string, signal: AbortSignal | undefined): Promise<Connection> {
    if (!this.#connecting) {
      const generation = this.#generation;
      const previous = this.#connection;
      const attempt = openConnection(this.#spec, label, {
        onToolsChanged: () => {
          if (connection === undefined || this.#connection === connection) this.#changed = true;
        },
      });
      let connection: Connection | undefined;
      this.#connecting = attempt.then(
        async (opened) => {
          connection = opened;
          if (generation !== this.#generation) {
            await opened.close();
            throw new McpServerError(`MCP server "${label}" was closed while it connected.`);
          }
          this.#connecting = undefined;
          this.#connection = opened;
          void previous?.close();
          this.#accept(opened.tools);
          return opened;
        },
        (error: unknown) => {
          if (generation === this.#generation) this.#connecting = undefined;
          throw error;
        },
      );
    }
    const connecting = this.#connecting;
    if (!signal) return connecting;
    // One caller giving up does not cancel the connection others wait for.
    return new Promise<Connection>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      connecting.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
  }

  /** A fetched list replaces the last one; a different list is a change the engine picks up. */
  #accept(list: McpTool[]): void {
    if (this.#list && JSON.stringify(this.#list) === JSON.stringify(list)) return;
    if (this.#list) this.#changed = true;
    this.#list = list;
    this.#listVersion += 1;
  }

  #definitions(name: string | undefined, label: string): ToolDefinition[] {
    const key = name ?? "";
    const cached = this.#built.get(key);
    if (cached && cached.version === this.#listVersion) return cached.tools;
    const tools = buildMcpTools(this.#list ?? [], {
      ...(name !== undefined ? { server: name } : {}),
      label,
      timeoutMs: this.#spec.timeoutMs,
      ...(this.security ? { security: this.security } : {}),
      call: (tool, input, ctx) => this.#call(label, tool, input, ctx),
    });
    this.#built.set(key, { version: this.#listVersion, tools });
    return tools;
  }

  #describe(): string {
    const spec = this.#spec;
    if (spec.type === "http") return spec.url.host;
    return spec.command.split(/[\\/]/).pop() || spec.command;
  }
}

/**
 * An MCP server as a source of tools, for `mcpServers` or on its own. Connects nothing until its
 * tools are needed. A `.mcp.json` entry may be passed as is.
 */
export function mcpServer(options: McpServerOptions): McpServer {
  return new McpServer(checkMcpServerOptions(options));
}

function isProtocolError(error: unknown): boolean {
  // The SDK's ProtocolError (a JSON-RPC error answer) has a numeric code; its SdkError a string one.
  return error instanceof Error && typeof (error as { code?: unknown }).code === "number";
}

function isInvalidResult(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "INVALID_RESULT" || code === "UNSUPPORTED_RESULT_TYPE";
}
