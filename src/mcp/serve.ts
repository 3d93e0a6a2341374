// serveMcp(): skein tools served over MCP. A call goes through the engine's own pieces (input
// checked by prepareCall, the handler run by executeCall with its timeout, progress and
// signal), so an MCP client reads the same texts an agent's model would. No permission gate
// applies: the MCP host decides what runs.

import { ConfigurationError } from "../core/errors.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";
import { type CallEnvironment, errorResult, newCallRecord } from "../run/call.ts";
import { type EngineConfig, resolveConfig } from "../run/config.ts";
import { executeCall } from "../run/execute-call.ts";
import { agentRuntimeOf } from "../run/link.ts";
import { prepareCall } from "../run/prepare-call.ts";
import { isToolDefinition, runtimeOf } from "../tools/definition.ts";
import type { ToolDefinition, ToolResult } from "../tools/types.ts";
import { mcpContentFromResult } from "./content.ts";
import { loadServerSdk, skeinVersion } from "./sdk.ts";

/** An MCP transport (any of the MCP SDK's server transports), read by shape. */
export interface McpServerTransport {
  start(): Promise<void>;
  send(message: any, options?: any): Promise<void>;
  close(): Promise<void>;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: any, extra?: any) => void) | undefined;
}

export interface ServeMcpOptions {
  tools: ToolDefinition[];
  /** The server's name in `serverInfo`; default "skein". */
  name?: string | undefined;
  /** The server's version in `serverInfo`; default skein's. */
  version?: string | undefined;
  /** Default: stdio on `process.stdin` / `process.stdout`. */
  transport?: McpServerTransport | undefined;
}

export interface ServedMcp {
  close(): Promise<void>;
}

const OWNER = "serveMcp()";
const KEYS: ReadonlySet<string> = new Set(["tools", "name", "version", "transport"]);

/** Serves skein tools over MCP (stdio by default) until `close()`. */
export async function serveMcp(options: ServeMcpOptions): Promise<ServedMcp> {
  const tools = checkServeOptions(options);
  const config = servedConfig(tools);
  const { sdk, stdio } = await loadServerSdk();
  const server = new sdk.Server(
    { name: options.name ?? "skein", version: options.version ?? skeinVersion() },
    { capabilities: { tools: {} } },
  );
  server.setRequestHandler("tools/list", () => ({
    tools: [...tools.values()].map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema as { type: "object"; [key: string]: unknown },
    })),
  }));
  server.setRequestHandler("tools/call", async (request, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    let progress = 0;
    const result = await callTool(config, request.params.name, request.params.arguments, {
      id: String(ctx.mcpReq.id),
      signal: ctx.mcpReq.signal,
      progress: (update) => {
        if (token === undefined) return;
        progress += 1;
        ctx.mcpReq
          .notify({
            method: "notifications/progress",
            params: {
              progressToken: token,
              progress,
              ...(typeof update === "string" ? { message: update } : {}),
            },
          })
          .catch(() => {});
      },
    });
    return {
      content: mcpContentFromResult(result),
      ...(result.isError ? { isError: true } : {}),
    };
  });
  const transport = options.transport ?? new stdio.StdioServerTransport();
  await server.connect(transport as Parameters<typeof server.connect>[0]);
  return { close: () => server.close() };
}

function checkServeOptions(options: ServeMcpOptions): Map<string, ToolDefinition> {
  if (typeof options !== "object" || options === null || Array.isArray(options))
    throw new ConfigurationError(
      `${OWNER}: options must be an object such as { tools: [...] }, received ${describeValue(options)}.`,
    );
  assertKnownOptions(OWNER, options, KEYS);
  if (!Array.isArray(options.tools))
    throw new ConfigurationError(
      `${OWNER}: tools must be an array of tools made with tool() or defineTool(), received ${describeValue(options.tools)}.`,
    );
  for (const key of ["name", "version"] as const)
    if (options[key] !== undefined && (typeof options[key] !== "string" || options[key] === ""))
      throw new ConfigurationError(
        `${OWNER}: ${key} must be a non-empty string, received ${describeValue(options[key])}.`,
      );
  const transport = options.transport as unknown as Record<string, unknown> | undefined;
  if (
    transport !== undefined &&
    (typeof transport !== "object" ||
      transport === null ||
      typeof transport.start !== "function" ||
      typeof transport.send !== "function" ||
      typeof transport.close !== "function")
  )
    throw new ConfigurationError(
      `${OWNER}: transport must be an MCP SDK server transport (start, send and close), such as new StdioServerTransport() from @modelcontextprotocol/server/stdio, received ${describeValue(transport)}.`,
    );
  const tools = new Map<string, ToolDefinition>();
  options.tools.forEach((tool, index) => {
    if (!isToolDefinition(tool))
      throw new ConfigurationError(
        `${OWNER}: tools[${index}] is ${describeValue(tool)}, not a tool; make it with tool() or defineTool().`,
      );
    if (tools.has(tool.name))
      throw new ConfigurationError(
        `${OWNER}: two tools are named "${tool.name}"; tool names must be unique.`,
      );
    const runtime = runtimeOf(tool);
    if (agentRuntimeOf(tool))
      throw new ConfigurationError(
        `${OWNER}: "${tool.name}" is an agent tool, which runs inside an agent's run; serve a tool() whose handler calls agent.run() instead.`,
      );
    // `execute: false` tools wait for an app's output, which an MCP client cannot give: left out.
    if (runtime.execute === undefined && runtime.onCalled === undefined) return;
    tools.set(tool.name, tool);
  });
  return tools;
}

/**
 * What the engine needs to run the served tools' calls outside any run: a configuration of those
 * tools alone (no hooks, no permission gate: the MCP host decides what runs; no model: none is
 * ever asked).
 */
function servedConfig(tools: Map<string, ToolDefinition>): EngineConfig {
  return resolveConfig(
    { tools: [...tools.values()], context: false },
    {
      modelFactory: () => {
        throw new Error("serveMcp runs tools only; it never calls a model.");
      },
    },
    OWNER,
  );
}

/**
 * One tools/call, as the engine runs a call: prepareCall (unknown tool, input shape,
 * prepareArguments, validation and coercion) and executeCall (timeout, progress, signal), so an
 * MCP client reads the very texts an agent's model would. Never rejects.
 */
async function callTool(
  config: EngineConfig,
  name: string,
  input: unknown,
  call: { id: string; signal: AbortSignal; progress(update: unknown): void },
): Promise<ToolResult> {
  const env: CallEnvironment = {
    config,
    sessionId: `mcp-${call.id}`,
    signal: call.signal,
    emit: (event) => {
      if (event.type === "tool_update") call.progress(event.update);
    },
    runData: new Map(),
  };
  const record = newCallRecord(call.id, name, input ?? {});
  await prepareCall(record, env);
  if (!record.result) await executeCall(record, env);
  if (record.result) return record.result;
  return errorResult(
    `Tool "${name}" did not answer: it waits for an app's output, which an MCP client cannot give.`,
    "no_output",
  );
}
