// serveMcp(): skein tools served over MCP. A call goes through the engine's own pieces (input
// checked by validateInto, the handler run by executeCall with its timeout, progress and
// signal), so an MCP client reads the same texts an agent's model would. No permission gate
// applies: the MCP host decides what runs.

import { ConfigurationError } from "../errors.ts";
import { assertKnownOptions, describeValue } from "../options.ts";
import {
  type CallEnvironment,
  describeKind,
  errorResult,
  isPlainObject,
  newCallRecord,
} from "../run/call.ts";
import type { EngineConfig } from "../run/config.ts";
import { executeCall } from "../run/execute-call.ts";
import { validateInto } from "../run/prepare-call.ts";
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
  name?: string;
  /** The server's version in `serverInfo`; default skein's. */
  version?: string;
  /** Default: stdio on `process.stdin` / `process.stdout`. */
  transport?: McpServerTransport;
}

export interface ServedMcp {
  close(): Promise<void>;
}

const OWNER = "serveMcp()";
const KEYS: ReadonlySet<string> = new Set(["tools", "name", "version", "transport"]);

/** Serves skein tools over MCP (stdio by default) until `close()`. */
export async function serveMcp(options: ServeMcpOptions): Promise<ServedMcp> {
  const tools = checkServeOptions(options);
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
    const result = await callTool(tools, request.params.name, request.params.arguments, {
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
    if (runtime.agent)
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
 * One tools/call, as the engine runs a call: the same checks, the same handler context and the
 * same texts for every failure. Never rejects.
 */
async function callTool(
  tools: Map<string, ToolDefinition>,
  name: string,
  input: unknown,
  call: { id: string; signal: AbortSignal; progress(update: unknown): void },
): Promise<ToolResult> {
  const tool = tools.get(name);
  if (!tool)
    return errorResult(
      `Tool "${name}" does not exist. Available tools: ${[...tools.keys()].join(", ") || "none"}.`,
      "not_found",
    );
  const raw = input ?? {};
  const record = newCallRecord(call.id, name, raw);
  const runtime = runtimeOf(tool);
  record.tool = tool;
  record.runtime = runtime;
  if (!isPlainObject(raw))
    return errorResult(
      `Invalid input for tool "${name}": the input must be a JSON object, received ${describeKind(raw)}. Call the tool again with an object of its parameters.`,
      "invalid_input",
    );
  let prepared: unknown = raw;
  if (runtime.prepareArguments) {
    try {
      prepared = runtime.prepareArguments({ ...raw });
    } catch (error) {
      return errorResult(
        `Tool "${name}" could not prepare its arguments: ${error instanceof Error ? error.message : String(error)}`,
        "invalid_input",
      );
    }
  }
  if (!(await validateInto(record, runtime, prepared))) return record.result!;
  const env: CallEnvironment = {
    // executeCall reads only the approval handler and the background registry from the
    // configuration when a call is not an agent tool's: a served tool has neither.
    config: {} as EngineConfig,
    sessionId: `mcp-${call.id}`,
    signal: call.signal,
    emit: (event) => {
      if (event.type === "tool_update") call.progress(event.update);
    },
    runData: new Map(),
  };
  await executeCall(record, env);
  if (record.result) return record.result;
  return errorResult(
    `Tool "${name}" did not answer: it waits for an app's output, which an MCP client cannot give.`,
    "no_output",
  );
}
