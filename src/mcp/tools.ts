// An MCP server's tools as ordinary skein tools, built by the same createToolDefinition as tool()
// and defineTool() (DESIGN decision 1): after this, rules, approvals, hooks, the batch policy and
// events see them like any other.

import { createToolDefinition } from "../tools/definition.ts";
import { toolResultFromReturn } from "../tools/result.ts";
import {
  type CompiledSchema,
  compileJsonSchema,
  type JsonSchema,
  type ValidationOutcome,
} from "../tools/schema.ts";
import type { ToolContext, ToolDefinition, ToolResult, ToolSecurity } from "../tools/types.ts";
import type { McpTool } from "./connection.ts";

/** Model APIs accept at most 64 characters in a tool name. */
const MAX_NAME = 64;

export interface McpToolContext {
  /** The agent's name for the server; absent for apps that list tools without an agent. */
  server?: string;
  /** How messages name the server. */
  label: string;
  timeoutMs: number;
  security?: ToolSecurity;
  call(tool: string, input: unknown, ctx: ToolContext): Promise<ToolResult>;
}

/**
 * One skein tool per MCP tool: `mcp__<server>__<tool>` (characters outside `[A-Za-z0-9_-]` become
 * `_`), or the tool's own name without a server. A name over 64 characters, a name already taken
 * and a tool whose input schema does not describe an object are left out.
 */
export function buildMcpTools(list: McpTool[], context: McpToolContext): ToolDefinition[] {
  const built: ToolDefinition[] = [];
  const taken = new Set<string>();
  for (const tool of list) {
    const name = nameFor(tool.name, context.server);
    if (name.length === 0 || name.length > MAX_NAME || taken.has(name)) continue;
    const definition = buildOne(tool, name, context);
    if (!definition) continue;
    taken.add(name);
    built.push(definition);
  }
  return built;
}

export function nameFor(tool: string, server: string | undefined): string {
  const safe = String(tool).replace(/[^A-Za-z0-9_-]/g, "_");
  return server === undefined ? safe : `mcp__${server}__${safe}`;
}

function buildOne(
  tool: McpTool,
  name: string,
  context: McpToolContext,
): ToolDefinition | undefined {
  const schema = inputSchemaOf(tool.inputSchema);
  if (!schema) return undefined;
  const annotations = tool.annotations as Record<string, unknown> | undefined;
  const mcp: Record<string, unknown> = {
    ...(context.server !== undefined ? { server: context.server } : {}),
    tool: tool.name,
    ...(annotations !== undefined ? { annotations } : {}),
  };
  const title = typeof tool.title === "string" ? tool.title : annotations?.title;
  const owner = `mcpServer("${context.label}"): tool ${JSON.stringify(tool.name)}`;
  try {
    return createToolDefinition({
      owner,
      name,
      description:
        typeof tool.description === "string"
          ? tool.description
          : typeof title === "string"
            ? title
            : "",
      inputSchema: schema,
      options: {
        timeoutMs: context.timeoutMs,
        timeoutBehavior: "error_result",
        metadata: { mcp },
        ...(context.security ? { security: context.security } : {}),
        ...(typeof title === "string" ? { label: title } : {}),
        // A hint only changes scheduling (overlap in mode "safe"), never a permission.
        ...(annotations?.readOnlyHint === true ? { isConcurrencySafe: () => true } : {}),
      },
      runtime: {
        validate: lazyValidator(schema, owner),
        execute: (input: unknown, ctx: ToolContext) => context.call(tool.name, input, ctx),
        toResult: toolResultFromReturn,
        timeoutBehavior: "error_result",
      },
    });
  } catch {
    // The server described something no model API takes (say, a non-object input): left out.
    return undefined;
  }
}

/** The schema the model sees: the server's, `type: "object"` when missing, without `$schema`. */
function inputSchemaOf(raw: unknown): JsonSchema | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return { type: "object" };
  const { $schema: _dropped, ...schema } = raw as JsonSchema;
  if (schema.type === undefined) return { type: "object", ...schema };
  return schema.type === "object" ? schema : undefined;
}

/**
 * Compiled on the first call, not when listed (a server may list many tools the model never
 * calls). A schema skein cannot compile leaves the checking to the server.
 */
function lazyValidator(
  schema: JsonSchema,
  owner: string,
): (input: unknown) => ValidationOutcome | Promise<ValidationOutcome> {
  let compiled: CompiledSchema | null | undefined;
  return (input) => {
    if (compiled === undefined) {
      try {
        compiled = compileJsonSchema(schema, owner);
      } catch {
        compiled = null;
      }
    }
    return compiled ? compiled.validate(input) : { ok: true, value: input };
  };
}
