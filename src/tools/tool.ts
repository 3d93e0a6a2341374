import type { StandardSchemaV1 } from "@standard-schema/spec";
import { ConfigurationError } from "../core/errors.ts";
import { assertKnownOptions, describeValue, TOOL_OPTION_KEYS } from "../core/options.ts";
import { createToolDefinition } from "./definition.ts";
import { toolResultFromReturn } from "./result.ts";
import { compileStandardSchema, isStandardSchema } from "./schema.ts";
import type { ToolContext, ToolDefinition, ToolHandler, ToolOptions } from "./types.ts";

/**
 * Defines a tool from a Zod (or any Standard Schema) schema. The handler gets
 * the parsed input, typed from the schema, and returns a string, content blocks, a `ToolResult`,
 * or an async generator whose yields are progress and whose return is the result.
 *
 * @example
 * ```ts
 * import { createBareAgent, tool } from "skein";
 * import { z } from "zod";
 *
 * const add = tool(
 *   "add",
 *   "Adds two numbers",
 *   z.object({ a: z.number(), b: z.number() }),
 *   async ({ a, b }) => String(a + b), // a and b are numbers, from the schema
 *   { isConcurrencySafe: () => true },
 * );
 * const agent = createBareAgent({ model: "claude-sonnet-4-6", tools: [add] });
 * console.log((await agent.run("What is 2 + 40?")).result);
 * ```
 */
export function tool<TSchema extends StandardSchemaV1>(
  name: string,
  description: string,
  schema: TSchema,
  handler: ToolHandler<StandardSchemaV1.InferOutput<TSchema>>,
  options?: ToolOptions<StandardSchemaV1.InferOutput<TSchema>>,
): ToolDefinition<StandardSchemaV1.InferOutput<TSchema>> {
  const owner = typeof name === "string" ? `tool("${name}")` : "tool()";
  assertKnownOptions("ToolOptions", options, TOOL_OPTION_KEYS);
  if (!isStandardSchema(schema)) {
    throw new ConfigurationError(
      `${owner}: the schema must be a Zod schema or a Standard Schema validator, received ${describeValue(schema)}.`,
    );
  }
  if (typeof handler !== "function") {
    throw new ConfigurationError(
      `${owner}: the handler must be a function, received ${describeValue(handler)}.`,
    );
  }
  const compiled = compileStandardSchema(schema, owner);
  return createToolDefinition({
    owner,
    name,
    description,
    inputSchema: compiled.jsonSchema,
    options: options ?? {},
    runtime: {
      validate: compiled.validate,
      execute: handler as (input: unknown, context: ToolContext) => unknown,
      toResult: toolResultFromReturn,
      timeoutBehavior: options?.timeoutBehavior ?? "error_result",
    },
  });
}
