// Tools written for Vercel ai (`tool({ description, inputSchema, execute })`), run by skein unchanged.

import { ConfigurationError } from "../core/errors.ts";
import { createToolDefinition } from "../tools/definition.ts";
import type { ToolContext, ToolDefinition, ToolOptions } from "../tools/types.ts";
import { aiSdkToolResult, fromModelOutput } from "./ai-sdk-output.ts";
import { compileAiSdkSchema } from "./ai-sdk-schema.ts";
import {
  type AdaptedToolOptions,
  adaptedToolOptions,
  describeArgument,
  isAsyncIterable,
  isObject,
  lastYieldIsResult,
  looksLikeOpenAIAgentsTool,
  readNeedsApproval,
} from "./shape.ts";

/** What skein passes as `execute`'s second argument (ai's `ToolExecutionOptions`). */
export interface AiSdkToolExecutionOptions {
  /** The id of the model's tool call. */
  toolCallId: string;
  /** Always `[]`: skein does not hand the transcript to a tool. */
  messages: never[];
  /** Aborted when the run is aborted or the call times out. */
  abortSignal: AbortSignal;
}

/**
 * The shape of a tool made with ai's `tool()` (ai 5 and 6), as skein reads it. Other keys of ai's
 * tools (`providerOptions`, `onInputStart`, ...) are not read.
 */
export interface AiSdkTool {
  type?: string | undefined;
  description?: string | undefined;
  /** A Zod (or other Standard Schema) schema, or ai's `jsonSchema(...)` / `zodSchema(...)`. */
  inputSchema?: unknown | undefined;
  execute?: ((input: any, options: AiSdkToolExecutionOptions) => unknown) | undefined;
  /**
   * True, or a function of the validated input that answers true, sends the call to skein's
   * approval (the agent's `approval` handler, or a paused run), as an ask rule would.
   */
  needsApproval?:
    | boolean
    | ((input: any, options: { toolCallId: string; messages: never[] }) => unknown);
  /** What the model is sent instead of the output as JSON: ai's `ToolResultOutput`. */
  toModelOutput?:
    | ((options: { toolCallId: string; input: any; output: any }) => unknown)
    | undefined;
}

/** The iterable's yields as they come, then its result through `convert`. */
async function* thenLast(
  results: AsyncGenerator<unknown, unknown, undefined>,
  convert: (output: unknown) => Promise<unknown>,
): AsyncGenerator<unknown, unknown, undefined> {
  return convert(yield* results);
}

/**
 * Turns the record Vercel ai's `generateText({ tools })` takes into skein tools: each key is the
 * tool's name. Input is validated and coerced as for any skein tool, then `execute(input,
 * { toolCallId, messages: [], abortSignal })` runs; a string result is sent as is, anything else
 * as JSON text; an async iterable's yields are progress and its last yield is the result.
 */
export function fromAiSdkTools(
  tools: Readonly<Record<string, AiSdkTool>>,
  options?: AdaptedToolOptions,
): ToolDefinition[] {
  const shared = adaptedToolOptions("fromAiSdkTools()", options);
  if (!isObject(tools) || tools instanceof Map || isToolItself(tools)) {
    const hint = Array.isArray(tools)
      ? " (an array of OpenAI Agents tools goes to fromOpenAIAgentsTools)"
      : looksLikeOpenAIAgentsTool(tools)
        ? " (this is an OpenAI Agents function tool: pass [tool] to fromOpenAIAgentsTools)"
        : isToolItself(tools)
          ? " (this looks like one tool: put it in a record under its name, { name: tool })"
          : "";
    throw new ConfigurationError(
      `fromAiSdkTools(): expected the record generateText({ tools }) takes, tools keyed by name, received ${describeArgument(tools)}${hint}.`,
    );
  }
  return Object.entries(tools).map(([name, tool]) => adapt(name, tool, shared));
}

/** A lone ai tool passed where the record was expected: it has `execute` or `inputSchema` of its own. */
function isToolItself(value: unknown): boolean {
  return (
    isObject(value) &&
    (typeof value.execute === "function" ||
      "inputSchema" in value ||
      looksLikeOpenAIAgentsTool(value))
  );
}

function adapt(name: string, tool: unknown, shared: ToolOptions<unknown>): ToolDefinition {
  const owner = `fromAiSdkTools("${name}")`;
  if (!isObject(tool)) {
    throw new ConfigurationError(
      `${owner}: expected a tool made with ai's tool({ description, inputSchema, execute }), received ${describeArgument(tool)}.`,
    );
  }
  if (looksLikeOpenAIAgentsTool(tool)) {
    throw new ConfigurationError(
      `${owner}: this is an OpenAI Agents function tool; pass it to fromOpenAIAgentsTools([...]) instead.`,
    );
  }
  if (tool.type === "provider" || tool.type === "provider-defined") {
    const id = typeof tool.id === "string" ? ` (${tool.id})` : "";
    throw new ConfigurationError(
      `${owner}: this is a provider-defined tool${id}, which the provider's own API runs or defines; skein runs function tools only. Write it as a tool with inputSchema and execute, or leave it out.`,
    );
  }
  if (tool.type !== undefined && tool.type !== "function" && tool.type !== "dynamic") {
    throw new ConfigurationError(
      `${owner}: unknown tool type ${describeArgument(tool.type)}; skein runs ai's function and dynamic tools.`,
    );
  }
  if (tool.inputSchema === undefined && "parameters" in tool) {
    throw new ConfigurationError(
      `${owner}: it has "parameters" but no "inputSchema": that is ai 4's tool shape. ai 5 and later name the schema inputSchema; rename the key.`,
    );
  }
  const execute = tool.execute;
  if (typeof execute !== "function") {
    throw new ConfigurationError(
      `${owner}: the tool has no execute function, so there is nothing for skein to run (ai leaves such tools to the app). Give it execute, or use skein's defineTool({ execute: false }) to have the run pause for the app's answer.`,
    );
  }
  const description = tool.description ?? "";
  const needsApproval = readNeedsApproval(owner, tool, (check, input, context) =>
    check.call(tool, input, { toolCallId: context.callId, messages: [] }),
  );
  const toModelOutput = tool.toModelOutput;
  if (toModelOutput !== undefined && typeof toModelOutput !== "function") {
    throw new ConfigurationError(
      `${owner}: toModelOutput must be a function ({ toolCallId, input, output }) => output for the model, received ${describeArgument(toModelOutput)}.`,
    );
  }
  const compiled = compileAiSdkSchema(tool.inputSchema, owner);
  return createToolDefinition({
    owner,
    name,
    description,
    inputSchema: compiled.jsonSchema,
    options: shared,
    runtime: {
      validate: compiled.validate,
      execute: (input: unknown, context: ToolContext) => {
        const options: AiSdkToolExecutionOptions = {
          toolCallId: context.callId,
          messages: [],
          abortSignal: context.signal,
        };
        // Called as ai calls it, as a method of the tool.
        const returned = (execute as (input: unknown, options: unknown) => unknown).call(
          tool,
          input,
          options,
        );
        const forModel =
          toModelOutput &&
          (async (output: unknown) =>
            fromModelOutput(
              await toModelOutput.call(tool, { toolCallId: context.callId, input, output }),
              output,
            ));
        if (isAsyncIterable(returned)) {
          const results = lastYieldIsResult(returned, context.signal);
          return forModel ? thenLast(results, forModel) : results;
        }
        return forModel ? Promise.resolve(returned).then(forModel) : returned;
      },
      toResult: aiSdkToolResult,
      timeoutBehavior: "error_result",
      ...(needsApproval ? { needsApproval } : {}),
    },
  });
}
