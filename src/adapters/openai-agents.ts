// Function tools written for OpenAI Agents JS (`tool({ name, description, parameters, execute })`),
// run by skein unchanged: through the tool's own `invoke`, so its parsing and errorFunction apply.

import { ConfigurationError } from "../core/errors.ts";
import { createToolDefinition } from "../tools/definition.ts";
import { toolResultFromData } from "../tools/result.ts";
import { compileJsonSchema } from "../tools/schema.ts";
import type { ToolContext, ToolDefinition, ToolOptions } from "../tools/types.ts";
import {
  type AdaptedToolOptions,
  adaptedToolOptions,
  describeArgument,
  isObject,
  readNeedsApproval,
} from "./shape.ts";

/** The `details` skein passes to `invoke` (a subset of agents-core's `ToolCallDetails`). */
export interface OpenAIAgentsToolCallDetails {
  toolCall: { type: "function_call"; callId: string; name: string; arguments: string };
  signal: AbortSignal;
}

/**
 * The shape of an OpenAI Agents tool, as skein reads it. Function tools (`type: "function"`) carry
 * `name`, `description`, JSON Schema `parameters` and `invoke`; any other type is a hosted or
 * runner-driven tool, which skein refuses. `needsApproval` sends a call to skein's approval when it
 * answers true; `isEnabled` and guardrails are not read.
 */
export interface OpenAIAgentsTool {
  type: string;
  name?: string | undefined;
  description?: string | undefined;
  parameters?: unknown | undefined;
  invoke?: ((runContext: any, input: string, details?: any) => unknown) | undefined;
  /** `tool()` always makes it a function `(runContext, input, callId) => Promise<boolean>`. */
  needsApproval?: boolean | ((runContext: any, input: any, callId?: string) => unknown) | undefined;
}

/**
 * Turns `@openai/agents` function tools into skein tools. Each keeps its name, description and the
 * JSON Schema in `parameters`; skein validates (and coerces) the input first, then calls the
 * tool's own `invoke({ context: undefined }, JSON.stringify(input), { toolCall, signal })`. What
 * `invoke` returns is sent as is when a string, else as JSON text; a failing `execute` comes back
 * as the text of the tool's errorFunction, as in that SDK (not as an error result).
 */
export function fromOpenAIAgentsTools(
  tools: readonly OpenAIAgentsTool[],
  options?: AdaptedToolOptions,
): ToolDefinition[] {
  const shared = adaptedToolOptions("fromOpenAIAgentsTools()", options);
  if (!Array.isArray(tools)) {
    const hint = isObject(tools)
      ? typeof tools.invoke === "function"
        ? " (this looks like one tool: wrap it in an array)"
        : " (a record of Vercel ai tools goes to fromAiSdkTools)"
      : "";
    throw new ConfigurationError(
      `fromOpenAIAgentsTools(): expected an array of OpenAI Agents tools, received ${describeArgument(tools)}${hint}.`,
    );
  }
  const seen = new Set<string>();
  return tools.map((tool, index) => {
    const adapted = adapt(tool, index, shared);
    if (seen.has(adapted.name)) {
      throw new ConfigurationError(
        `fromOpenAIAgentsTools(): two tools are named "${adapted.name}"; a name must be unique.`,
      );
    }
    seen.add(adapted.name);
    return adapted;
  });
}

function adapt(tool: unknown, index: number, shared: ToolOptions<unknown>): ToolDefinition {
  const name = isObject(tool) && typeof tool.name === "string" ? tool.name : undefined;
  const owner = `fromOpenAIAgentsTools(): tool ${name === undefined ? index : `"${name}"`}`;
  if (!isObject(tool)) {
    throw new ConfigurationError(
      `${owner}: expected a function tool made with tool({ name, description, parameters, execute }), received ${describeArgument(tool)}.`,
    );
  }
  if (tool.type !== "function") {
    throw new ConfigurationError(`${owner}: ${whyNotAFunctionTool(tool.type)}`);
  }
  const invoke = tool.invoke;
  if (typeof invoke !== "function") {
    throw new ConfigurationError(
      `${owner}: a function tool needs its invoke function (made by tool() of @openai/agents); received ${describeArgument(invoke)}.`,
    );
  }
  if (!isObject(tool.parameters)) {
    throw new ConfigurationError(
      `${owner}: parameters must be the tool's JSON Schema object, received ${describeArgument(tool.parameters)}.`,
    );
  }
  // Called as the runner calls it: the run context (skein has none to give), the parsed input.
  const needsApproval = readNeedsApproval(owner, tool, (check, input, context) =>
    check.call(tool, { context: undefined }, input, context.callId),
  );
  const compiled = compileJsonSchema(tool.parameters, owner);
  return createToolDefinition({
    owner,
    name: tool.name,
    description: tool.description ?? "",
    inputSchema: compiled.jsonSchema,
    options: shared,
    runtime: {
      validate: compiled.validate,
      execute: (input: unknown, context: ToolContext) => {
        const args = JSON.stringify(input);
        const details: OpenAIAgentsToolCallDetails = {
          toolCall: {
            type: "function_call",
            callId: context.callId,
            name: context.call.name,
            arguments: args,
          },
          signal: context.signal,
        };
        // Called as the OpenAI Agents runner calls it, as a method of the tool.
        return (invoke as (runContext: unknown, input: string, details: unknown) => unknown).call(
          tool,
          { context: undefined },
          args,
          details,
        );
      },
      toResult: toolResultFromData,
      timeoutBehavior: "error_result",
      ...(needsApproval ? { needsApproval } : {}),
    },
  });
}

function whyNotAFunctionTool(type: unknown): string {
  switch (type) {
    case "hosted_tool":
      return "this is a hosted tool, which runs on OpenAI's servers, not in your process; skein runs function tools only.";
    case "computer":
    case "shell":
    case "apply_patch":
      return `this is a ${type} tool, which the OpenAI Agents runner drives itself; skein runs function tools only (skein's own built-ins cover the shell and file edits).`;
    default:
      return `expected a function tool (type "function"), received type ${describeArgument(type)}.`;
  }
}
