import { createRequire } from "node:module";
import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { Ajv2020, ErrorObject, ValidateFunction } from "ajv/dist/2020.js";
import { ConfigurationError, describeThrown } from "../core/errors.ts";
import { coerceToSchema } from "./coerce.ts";

export type JsonSchema = Record<string, unknown>;

export interface ValidationIssue {
  /** Field path inside the input; empty for the input as a whole. */
  path: (string | number)[];
  message: string;
}

export type ValidationOutcome =
  | { ok: true; value: unknown }
  | { ok: false; issues: ValidationIssue[] };

/** A schema compiled once per tool: the JSON Schema the model sees, and a validator that coerces narrowly. */
export interface CompiledSchema {
  readonly jsonSchema: JsonSchema;
  validate(input: unknown): ValidationOutcome | Promise<ValidationOutcome>;
}

const require = createRequire(import.meta.url);

/**
 * ajv (about 4 MB resident) is loaded by the first JSON Schema compiled, not by `import("skein")`:
 * an agent whose tools all use Zod or another Standard Schema never needs it. Both packages are
 * CommonJS, so `require` loads them synchronously, where a tool is defined.
 */
let sharedAjv: Ajv2020 | undefined;
function ajv(): Ajv2020 {
  if (!sharedAjv) {
    const { Ajv2020 } = require("ajv/dist/2020.js") as typeof import("ajv/dist/2020.js");
    // ajv-formats' default export arrives either wrapped or bare.
    const formats = require("ajv-formats") as { default?: unknown };
    const addFormats = (formats.default ?? formats) as (ajv: Ajv2020) => void;
    sharedAjv = new Ajv2020({ allErrors: true, strict: false, validateSchema: true });
    addFormats(sharedAjv);
  }
  return sharedAjv;
}

export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { "~standard"?: { validate?: unknown } })["~standard"]?.validate === "function"
  );
}

/** The JSON Schema of a Zod (3 or 4) or Standard Schema validator, as the model should see it. */
export function jsonSchemaOf(schema: StandardSchemaV1, owner: string): JsonSchema {
  const standard = schema["~standard"] as StandardSchemaV1.Props & {
    jsonSchema?: {
      input(options: { target: string; libraryOptions?: Record<string, unknown> }): JsonSchema;
    };
  };
  try {
    if (standard.jsonSchema) {
      return clean(
        standard.jsonSchema.input({
          target: "draft-2020-12",
          libraryOptions: { unrepresentable: "any" },
        }),
      );
    }
    if ("_zod" in (schema as object)) {
      // Zod 4 before it implemented Standard JSON Schema (including zod@3.25's "zod/v4").
      const core = require("zod/v4/core") as { toJSONSchema(s: unknown, o: unknown): JsonSchema };
      return clean(core.toJSONSchema(schema, { io: "input", unrepresentable: "any" }));
    }
    if (standard.vendor === "zod") return clean(zod3JsonSchema(schema));
  } catch (error) {
    if (error instanceof ConfigurationError) throw error;
    throw new ConfigurationError(
      `${owner}: its schema could not be turned into JSON Schema (${describeThrown(error).message}). Use types that JSON Schema can express.`,
    );
  }
  throw new ConfigurationError(
    `${owner}: the ${standard.vendor} schema has no JSON Schema form, which the model needs. Use Zod, or a Standard Schema library that implements Standard JSON Schema, or give JSON Schema as "parameters".`,
  );
}

function zod3JsonSchema(schema: unknown): JsonSchema {
  let convert: (s: unknown, o: unknown) => JsonSchema;
  try {
    convert = (require("zod-to-json-schema") as { zodToJsonSchema: typeof convert })
      .zodToJsonSchema;
  } catch {
    throw new ConfigurationError(
      "Zod 3 schemas need the optional peer zod-to-json-schema (npm install zod-to-json-schema), or use Zod 4.",
    );
  }
  return convert(schema, { target: "jsonSchema7", $refStrategy: "none" });
}

/** Drops `$schema`, which providers reject. */
function clean(schema: JsonSchema): JsonSchema {
  const { $schema: _drop, ...rest } = schema;
  return rest;
}

/** Compiles a Standard Schema validator (Zod included): its own validation, JSON Schema for coercion. */
export function compileStandardSchema(schema: StandardSchemaV1, owner: string): CompiledSchema {
  const jsonSchema = jsonSchemaOf(schema, owner);
  const validateOnce = (input: unknown): ValidationOutcome | Promise<ValidationOutcome> => {
    const result = schema["~standard"].validate(input);
    return result instanceof Promise ? result.then(fromStandardResult) : fromStandardResult(result);
  };
  return { jsonSchema, validate: withCoercion(jsonSchema, validateOnce) };
}

function fromStandardResult(result: StandardSchemaV1.Result<unknown>): ValidationOutcome {
  if (!result.issues) return { ok: true, value: result.value };
  return {
    ok: false,
    issues: result.issues.map((issue) => ({
      path: (issue.path ?? []).map((segment) =>
        typeof segment === "object"
          ? (segment.key as string | number)
          : (segment as string | number),
      ),
      message: issue.message,
    })),
  };
}

/** Compiles a plain JSON Schema with ajv, once. An invalid schema is an assembly error. */
export function compileJsonSchema(schema: JsonSchema, owner: string): CompiledSchema {
  const jsonSchema = clean(schema);
  let check: ValidateFunction;
  try {
    check = ajv().compile(jsonSchema);
  } catch (error) {
    throw new ConfigurationError(`${owner}: invalid JSON Schema: ${describeThrown(error).message}`);
  }
  const validateOnce = (input: unknown): ValidationOutcome =>
    check(input)
      ? { ok: true, value: input }
      : { ok: false, issues: (check.errors ?? []).map(fromAjvError) };
  return { jsonSchema, validate: withCoercion(jsonSchema, validateOnce) };
}

/** Any object: what a `defineTool` without `parameters` accepts. */
export const ANY_OBJECT_SCHEMA: JsonSchema = { type: "object", additionalProperties: true };

/**
 * Validates as is first; only when that fails, coerces strings the schema wants as numbers or
 * booleans and validates again. Same outcome as coercing first (coercion never touches a value
 * the schema accepts), without a schema walk on the hot path.
 */
function withCoercion(
  jsonSchema: JsonSchema,
  validateOnce: (input: unknown) => ValidationOutcome | Promise<ValidationOutcome>,
): (input: unknown) => ValidationOutcome | Promise<ValidationOutcome> {
  return (input) => {
    const first = validateOnce(input);
    const retry = (outcome: ValidationOutcome) => {
      if (outcome.ok) return outcome;
      const coerced = coerceToSchema(input, jsonSchema);
      return coerced === input ? outcome : validateOnce(coerced);
    };
    return first instanceof Promise ? first.then(retry) : retry(first);
  };
}

function fromAjvError(error: ErrorObject): ValidationIssue {
  const path = error.instancePath
    .split("/")
    .slice(1)
    .map((segment) => segment.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment));
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "required":
      return {
        path: [...path, String(params.missingProperty)],
        message: "",
      };
    case "additionalProperties":
      return {
        path: [...path, String(params.additionalProperty)],
        message: "unknown field, not in the schema: remove it",
      };
    case "type":
      return { path, message: `expected ${String(params.type)}` };
    case "enum":
      return { path, message: `expected one of ${JSON.stringify(params.allowedValues)}` };
    case "const":
      return { path, message: `expected ${JSON.stringify(params.allowedValue)}` };
    default:
      return { path, message: error.message ?? `does not satisfy "${error.keyword}"` };
  }
}

/** Renders issues so a model can fix its call in one try: every field path, what was expected, what it sent. */
export function formatValidationIssues(
  toolName: string,
  input: unknown,
  issues: ValidationIssue[],
): string {
  const lines = issues.map((issue) => {
    const where = issue.path.length ? formatPath(issue.path) : "(input)";
    // Zod says "Invalid input: expected number, received string"; the prefix adds nothing here.
    const expected = issue.message
      .replace(/^Invalid input:\s*/i, "")
      .replace(/,\s*received \w+$/i, "");
    const found = valueAt(input, issue.path);
    if (!found.present)
      return `- ${where}: required field is missing${expected ? ` (${expected})` : ""}`;
    return `- ${where}: ${expected}; received ${describeReceived(found.value)}`;
  });
  return `Invalid input for tool "${toolName}":\n${lines.join("\n")}\nFix these fields and call the tool again.`;
}

function formatPath(path: (string | number)[]): string {
  let text = "";
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else
      text += /^[A-Za-z_$][\w$]*$/.test(segment)
        ? text
          ? `.${segment}`
          : segment
        : `[${JSON.stringify(segment)}]`;
  }
  return text;
}

function valueAt(input: unknown, path: (string | number)[]): { present: boolean; value?: unknown } {
  let value: unknown = input;
  for (const segment of path) {
    if (typeof value !== "object" || value === null || !Object.hasOwn(value, segment))
      return { present: false };
    value = (value as Record<string | number, unknown>)[segment];
  }
  return value === undefined ? { present: false } : { present: true, value };
}

function describeReceived(value: unknown): string {
  const kind = Array.isArray(value) ? "array" : value === null ? "null" : typeof value;
  let shown: string;
  try {
    shown = JSON.stringify(value) ?? String(value);
  } catch {
    shown = String(value);
  }
  if (shown.length > 80) shown = `${shown.slice(0, 80)}…`;
  return `${kind} ${shown}`;
}
