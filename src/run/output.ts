// Typed final output (design/interactive.md, "Typed output"): the schema compiled once, the
// `final_output` tool offered where the model has no native structured output, and answers
// checked against the schema.

import { ConfigurationError } from "../core/errors.ts";
import { describeValue } from "../core/options.ts";
import { createToolDefinition } from "../tools/definition.ts";
import { toolResultFromReturn } from "../tools/result.ts";
import {
  type CompiledSchema,
  compileJsonSchema,
  compileStandardSchema,
  formatValidationIssues,
  isStandardSchema,
  type ValidationIssue,
} from "../tools/schema.ts";
import type { ToolDefinition } from "../tools/types.ts";

export const FINAL_OUTPUT = "final_output";
export const DEFAULT_OUTPUT_RETRIES = 2;

/** What the engine keeps of `output`. */
export interface OutputSpec {
  schema: CompiledSchema;
  retries: number;
  /** The `final_output` tool (offered to models without native structured output). */
  tool: ToolDefinition;
}

export function resolveOutput(
  prefix: string,
  output: unknown,
  retries: unknown,
  toolNames: Iterable<string>,
): OutputSpec | undefined {
  if (
    retries !== undefined &&
    (typeof retries !== "number" || !Number.isInteger(retries) || retries < 0)
  )
    throw new ConfigurationError(
      `${prefix}: outputRetries must be a non-negative integer, received ${describeValue(retries)}.`,
    );
  if (output === undefined) return undefined;
  const schema = compileOutput(prefix, output);
  if ([...toolNames].includes(FINAL_OUTPUT))
    throw new ConfigurationError(
      `${prefix}: a tool is named "${FINAL_OUTPUT}", the name output uses for the model's answer; rename the tool.`,
    );
  const tool = createToolDefinition({
    owner: prefix,
    name: FINAL_OUTPUT,
    description:
      "Gives your final answer. Call it once, when you are done, with the answer as its input; the run ends when the answer is valid.",
    inputSchema: schema.jsonSchema,
    options: {},
    runtime: {
      validate: schema.validate,
      // The validated answer: the loop ends the run with it (and its JSON as the result text).
      execute: (input) => ({ content: "Output accepted.", endTurn: true, structuredResult: input }),
      toResult: toolResultFromReturn,
      timeoutBehavior: "error_result",
    },
  });
  return { schema, retries: (retries as number | undefined) ?? DEFAULT_OUTPUT_RETRIES, tool };
}

function compileOutput(prefix: string, output: unknown): CompiledSchema {
  const wrong = () =>
    new ConfigurationError(
      `${prefix}: output must be a Zod object schema, a Standard Schema with JSON Schema (an object), or a JSON Schema with type "object", received ${describeValue(output)}.`,
    );
  let compiled: CompiledSchema;
  if (isStandardSchema(output)) compiled = compileStandardSchema(output, `${prefix}: output`);
  else if (typeof output === "object" && output !== null && !Array.isArray(output))
    compiled = compileJsonSchema(output as Record<string, unknown>, `${prefix}: output`);
  else throw wrong();
  if (compiled.jsonSchema.type !== "object") throw wrong();
  return compiled;
}

/** An answer given as text (native structured output): parsed as JSON, then validated. */
export async function checkTextAnswer(
  spec: OutputSpec,
  text: string,
): Promise<{ ok: true; value: unknown } | { ok: false; errors: string }> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return {
      ok: false,
      errors: `Your answer is not JSON. Answer with only a JSON value that matches the output schema.`,
    };
  }
  const outcome = await spec.schema.validate(parsed);
  if (outcome.ok) return { ok: true, value: outcome.value };
  return { ok: false, errors: describeIssues(parsed, outcome.issues) };
}

export function describeIssues(answer: unknown, issues: ValidationIssue[]): string {
  return formatValidationIssues(FINAL_OUTPUT, answer, issues)
    .replace(
      `Invalid input for tool "${FINAL_OUTPUT}":`,
      "Your answer does not match the output schema:",
    )
    .replace("Fix these fields and call the tool again.", "Fix these fields and answer again.");
}
