// The `inputSchema` of a Vercel ai tool, compiled as skein compiles any tool's schema.

import { ConfigurationError, describeThrown, messageForModel } from "../core/errors.ts";
import {
  type CompiledSchema,
  compileJsonSchema,
  compileStandardSchema,
  isStandardSchema,
  type JsonSchema,
  type ValidationIssue,
  type ValidationOutcome,
} from "../tools/schema.ts";
import { describeArgument, isObject } from "./shape.ts";

/** ai marks the schemas its `jsonSchema()` / `zodSchema()` build with this registered symbol. */
const AI_SCHEMA = Symbol.for("vercel.ai.schema");

/** What ai assumes for a tool without `inputSchema` (its `asSchema(undefined)`). */
const NO_INPUT: JsonSchema = { type: "object", properties: {}, additionalProperties: false };

type AiValidate = (
  value: unknown,
) =>
  | { success: boolean; value?: unknown; error?: unknown }
  | PromiseLike<{ success: boolean; value?: unknown; error?: unknown }>;

/**
 * A Standard Schema (Zod) is compiled as `tool()` compiles it. ai's own schema objects
 * (`jsonSchema(...)`, `zodSchema(...)`, a `lazySchema` function returning one) give their JSON
 * Schema to ajv for validation and coercion; their own `validate`, when they carry one, then runs
 * on the coerced input, as ai would run it.
 */
export function compileAiSdkSchema(schema: unknown, owner: string): CompiledSchema {
  if (schema === undefined || schema === null) return compileJsonSchema(NO_INPUT, owner);
  if (isStandardSchema(schema)) return compileStandardSchema(schema, owner);
  let resolved: unknown = schema;
  if (typeof schema === "function") {
    try {
      resolved = (schema as () => unknown)();
    } catch (error) {
      throw new ConfigurationError(
        `${owner}: its lazy inputSchema threw when called (${describeThrown(error).message}).`,
      );
    }
    if (isStandardSchema(resolved)) return compileStandardSchema(resolved, owner);
  }
  if (!isObject(resolved) || !(AI_SCHEMA in resolved || "jsonSchema" in resolved)) {
    throw new ConfigurationError(
      `${owner}: inputSchema must be a Zod (or other Standard Schema) schema or ai's jsonSchema(...); received ${describeArgument(resolved)}.`,
    );
  }
  let jsonSchema: unknown;
  try {
    jsonSchema = resolved.jsonSchema;
  } catch (error) {
    throw new ConfigurationError(
      `${owner}: its inputSchema could not produce JSON Schema (${describeThrown(error).message}).`,
    );
  }
  if (!isObject(jsonSchema)) {
    throw new ConfigurationError(
      `${owner}: its inputSchema's JSON Schema must be an object, received ${describeArgument(jsonSchema)}.`,
    );
  }
  const compiled = compileJsonSchema(jsonSchema, owner);
  const own = resolved.validate;
  if (own === undefined || own === null) return compiled;
  if (typeof own !== "function") {
    throw new ConfigurationError(
      `${owner}: its inputSchema's validate must be a function, received ${describeArgument(own)}.`,
    );
  }
  return {
    jsonSchema: compiled.jsonSchema,
    validate: (input) => {
      const first = compiled.validate(input);
      const then = (outcome: ValidationOutcome) =>
        outcome.ok ? runOwnValidate(own as AiValidate, outcome.value) : outcome;
      return first instanceof Promise ? first.then(then) : then(first);
    },
  };
}

async function runOwnValidate(validate: AiValidate, value: unknown): Promise<ValidationOutcome> {
  try {
    const result = await validate(value);
    if (result.success) return { ok: true, value: "value" in result ? result.value : value };
    return { ok: false, issues: issuesOf(result.error) };
  } catch (error) {
    return { ok: false, issues: issuesOf(error) };
  }
}

/** A Zod error's `issues`, ai's TypeValidationError's `cause` (Standard Schema issues), or its message. */
function issuesOf(error: unknown): ValidationIssue[] {
  const listed = isObject(error) || error instanceof Error ? listedIssues(error) : undefined;
  return listed ?? [{ path: [], message: messageForModel(error) }];
}

function listedIssues(error: object): ValidationIssue[] | undefined {
  const { issues, cause } = error as { issues?: unknown; cause?: unknown };
  const list = Array.isArray(issues) ? issues : Array.isArray(cause) ? cause : undefined;
  if (!list?.length || !list.every((issue) => isObject(issue) && typeof issue.message === "string"))
    return undefined;
  return list.map((issue: { path?: unknown; message: string }) => ({
    path: (Array.isArray(issue.path) ? issue.path : []).map((segment: unknown) =>
      isObject(segment) ? (segment.key as string | number) : (segment as string | number),
    ),
    message: issue.message,
  }));
}
