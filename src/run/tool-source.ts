// Tools that come from outside the agent's assembly and can change while it lives (MCP servers,
// design/mcp.md): the engine asks each source for its tools before a model call, and only then.

import type { ToolDefinition, ToolSecurity } from "../tools/types.ts";
import type { EngineConfig } from "./config.ts";
import type { AgentEvent } from "./types.ts";

/** Marks an object as a tool source (`mcpServer()` handles of `skein/mcp`), for the core to recognise without importing it. */
export const TOOL_SOURCE: unique symbol = Symbol.for("skein.toolSource");

/** What `skein/mcp` hands the engine: the core knows no MCP. */
export interface ToolSource {
  readonly [TOOL_SOURCE]: true;
  /** Declared for every tool of the source (checked by the hardened preset). */
  readonly security?: ToolSecurity;
  /**
   * The source's tools under the names the agent gives them (`mcp__<name>__<tool>`), connecting
   * when needed. Rejects when the source cannot be reached; the run goes on without its tools.
   */
  tools(name: string, signal: AbortSignal): Promise<ToolDefinition[]>;
  /** The list changed since it was last fetched: fetch it again before the next request. */
  readonly changed: boolean;
  /** Ends the connection (idempotent; a later `tools()` connects again). */
  close(): Promise<void>;
}

export function isToolSource(value: unknown): value is ToolSource {
  return typeof value === "object" && value !== null && (value as ToolSource)[TOOL_SOURCE] === true;
}

/**
 * One of the agent's MCP servers in a run's result (`result.mcpServers`). A server that could not
 * be reached or listed is "failed", with the error its `mcp_server_error` event carried: the run
 * went on without its tools.
 */
export interface McpServerStatus {
  /** The agent's name for it: its key in `mcpServers`, as `mcp_server_error` names it. */
  server: string;
  /**
   * "connected": its tools were offered to the model; "failed": they were not (`error` says why);
   * "unused": the run ended before it needed them.
   */
  status: "connected" | "failed" | "unused";
  error?: { name: string; message: string };
}

/** What one run fetched from its sources: kept across its turns. */
export interface SourceTools {
  fetched: Map<string, ToolDefinition[]>;
  tried: Set<string>;
  /** Why each source whose latest fetch failed failed (made on the first failure). */
  failed?: Map<string, { name: string; message: string }>;
}

/**
 * Before a model call (and before a paused run's calls are checked on resume): fetches the tools
 * of each source not fetched in this run yet, or whose list changed, all at once, and returns the
 * configuration that holds them. A source that fails adds no tools to this run and is reported
 * with an `mcp_server_error` event; it is tried again by the next run.
 */
export async function configWithSources(
  base: EngineConfig,
  state: SourceTools,
  context: { signal: AbortSignal; emit: (event: AgentEvent) => void },
): Promise<EngineConfig> {
  const due = base.sources!.filter(
    ({ name, source }) => !state.tried.has(name) || (state.fetched.has(name) && source.changed),
  );
  await Promise.all(
    due.map(async ({ name, source }) => {
      state.tried.add(name);
      try {
        state.fetched.set(name, await source.tools(name, context.signal));
        state.failed?.delete(name);
      } catch (error) {
        state.fetched.delete(name);
        if (context.signal.aborted) return;
        const { name: errorName, message } =
          error instanceof Error ? error : { name: "Error", message: String(error) };
        state.failed ??= new Map();
        state.failed.set(name, { name: errorName, message });
        context.emit({
          type: "mcp_server_error",
          server: name,
          error: { name: errorName, message },
        });
      }
    }),
  );
  return withTools(base, [...state.fetched.values()].flat());
}

/** Each source of the agent, in the order given, as the run left it (`result.mcpServers`). */
export function sourceStatuses(
  sources: readonly { name: string }[] | undefined,
  state: SourceTools | undefined,
): McpServerStatus[] | undefined {
  return sources?.map(({ name }): McpServerStatus => {
    const error = state?.failed?.get(name);
    if (error) return { server: name, status: "failed", error: { ...error } };
    return { server: name, status: state?.fetched.has(name) ? "connected" : "unused" };
  });
}

/** The configuration with these tools added (names the agent already has are left out). */
export function withTools(base: EngineConfig, added: ToolDefinition[]): EngineConfig {
  if (added.length === 0) return base;
  const tools = new Map(base.tools);
  const visible = new Set(base.visible);
  const toolSpecs = [...base.toolSpecs];
  for (const tool of added) {
    if (tools.has(tool.name)) continue;
    tools.set(tool.name, tool);
    if (!base.admits(tool.name, tool)) continue;
    visible.add(tool.name);
    toolSpecs.push({
      name: tool.name,
      description: tool.description,
      input_schema: tool.inputSchema,
    });
  }
  return { ...base, tools, visible, toolSpecs };
}
