import { messageForModel } from "../core/errors.ts";
import { type BuiltinPermission, markBuiltin } from "../tools/builtin-mark.ts";
import { createToolDefinition } from "../tools/definition.ts";
import { toolResultFromReturn } from "../tools/result.ts";
import { compileJsonSchema, type JsonSchema } from "../tools/schema.ts";
import type {
  ToolContext,
  ToolDefinition,
  ToolHandlerReturn,
  ToolSecurity,
} from "../tools/types.ts";

/**
 * A failure a built-in reports to the model as an error result, with a message written for the
 * model: it says what was wrong and what to do, and never echoes a host path outside the workspace.
 */
export class BuiltinToolError extends Error {
  override name = "BuiltinToolError";
}

export interface BuiltinSpec<TInput> {
  name: string;
  description: string;
  /** The JSON Schema the model sees (Claude Code's field names). */
  schema: JsonSchema;
  security: ToolSecurity;
  concurrencySafe: boolean;
  permission: BuiltinPermission<TInput>;
  timeoutMs?: number;
  handler(input: TInput, context: ToolContext): Promise<ToolHandlerReturn>;
}

/** Builds a built-in tool on the same path as `tool()`; a thrown `BuiltinToolError` is an error result. */
export function defineBuiltin<TInput>(spec: BuiltinSpec<TInput>): ToolDefinition<TInput> {
  const owner = `builtin("${spec.name}")`;
  const compiled = compileJsonSchema(spec.schema, owner);
  const definition = createToolDefinition({
    owner,
    name: spec.name,
    description: spec.description,
    inputSchema: compiled.jsonSchema,
    options: {
      security: spec.security,
      ...(spec.concurrencySafe ? { isConcurrencySafe: () => true } : {}),
      // Tools that only read (Read, LS, Glob, Grep) may run again after a crash.
      ...(spec.permission.kind === "read" ? { idempotent: true } : {}),
      ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
    },
    runtime: {
      validate: compiled.validate,
      execute: async (input, context) => {
        try {
          return await spec.handler(input as TInput, context);
        } catch (error) {
          if (error instanceof BuiltinToolError) return { content: error.message, isError: true };
          return { content: `${spec.name} failed: ${messageForModel(error)}`, isError: true };
        }
      },
      toResult: toolResultFromReturn,
      timeoutBehavior: "error_result",
    },
  });
  markBuiltin(definition, { permission: spec.permission });
  return definition as ToolDefinition<TInput>;
}
