import type { JsonSchema } from "./schema.ts";

/**
 * Narrow coercion (DESIGN decision 8): a string becomes a number, an integer or a boolean where
 * the schema wants one and does not also accept a string. Nothing else is converted: a number
 * never becomes a string, an object never anything. Returns the same value when nothing changed,
 * and copies only along the paths it changes.
 */
export function coerceToSchema(
  value: unknown,
  schema: JsonSchema,
  root: JsonSchema = schema,
  depth = 0,
): unknown {
  if (depth > 64) return value;
  const resolved = resolveRef(schema, root);
  if (!resolved) return value;

  for (const key of ["anyOf", "oneOf"] as const) {
    const branches = resolved[key];
    if (Array.isArray(branches)) {
      if (typeof value === "string" && branches.some((b) => acceptsString(b as JsonSchema, root)))
        return value;
      for (const branch of branches) {
        if (!discriminatorsMatch(value, branch as JsonSchema, root)) continue;
        const coerced = coerceToSchema(value, branch as JsonSchema, root, depth + 1);
        if (coerced !== value) return coerced;
      }
    }
  }
  if (Array.isArray(resolved.allOf)) {
    let current = value;
    for (const branch of resolved.allOf)
      current = coerceToSchema(current, branch as JsonSchema, root, depth + 1);
    if (current !== value) return current;
  }

  if (typeof value === "string") return coerceString(value, typesOf(resolved));
  if (Array.isArray(value)) return coerceArray(value, resolved, root, depth);
  if (typeof value === "object" && value !== null)
    return coerceObject(value as Record<string, unknown>, resolved, root, depth);
  return value;
}

/** Decimal numerals only: "0x10", "0b11", "Infinity" and "" stay strings. */
const DECIMAL = /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

/**
 * A branch of a union is a candidate only if the object's discriminating fields (a `const`, or a
 * one-value `enum`) agree with it, so `{ kind: "label", count: "3" }` is read by the "label" branch.
 */
function discriminatorsMatch(value: unknown, branch: JsonSchema, root: JsonSchema): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return true;
  const resolved = resolveRef(branch, root);
  const properties =
    resolved && isSchema(resolved.properties)
      ? (resolved.properties as Record<string, JsonSchema>)
      : {};
  for (const [key, propertySchema] of Object.entries(properties)) {
    const property = resolveRef(propertySchema, root);
    if (!property || !Object.hasOwn(value, key)) continue;
    const fixed =
      property.const !== undefined
        ? [property.const]
        : Array.isArray(property.enum) && property.enum.length === 1
          ? property.enum
          : undefined;
    if (fixed && !fixed.includes((value as Record<string, unknown>)[key])) return false;
  }
  return true;
}

function coerceString(value: string, types: Set<string>): unknown {
  if (types.size === 0 || types.has("string")) return value;
  const trimmed = value.trim();
  if (types.has("integer") && /^-?\d+$/.test(trimmed)) return Number(trimmed);
  if (types.has("number") && DECIMAL.test(trimmed)) return Number(trimmed);
  if (types.has("boolean") && (trimmed === "true" || trimmed === "false"))
    return trimmed === "true";
  return value;
}

function coerceArray(
  value: unknown[],
  schema: JsonSchema,
  root: JsonSchema,
  depth: number,
): unknown {
  const prefix = Array.isArray(schema.prefixItems) ? (schema.prefixItems as JsonSchema[]) : [];
  const items = isSchema(schema.items) ? schema.items : undefined;
  let copy: unknown[] | undefined;
  for (let index = 0; index < value.length; index++) {
    const itemSchema = prefix[index] ?? items;
    if (!itemSchema) continue;
    const coerced = coerceToSchema(value[index], itemSchema, root, depth + 1);
    if (coerced !== value[index]) {
      copy ??= value.slice();
      copy[index] = coerced;
    }
  }
  return copy ?? value;
}

function coerceObject(
  value: Record<string, unknown>,
  schema: JsonSchema,
  root: JsonSchema,
  depth: number,
): unknown {
  const properties = isSchema(schema.properties)
    ? (schema.properties as Record<string, JsonSchema>)
    : {};
  const additional = isSchema(schema.additionalProperties)
    ? schema.additionalProperties
    : undefined;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const propertySchema = Object.hasOwn(properties, key) ? properties[key] : additional;
    if (!propertySchema) continue;
    const coerced = coerceToSchema(value[key], propertySchema, root, depth + 1);
    if (coerced !== value[key]) {
      copy ??= { ...value };
      copy[key] = coerced;
    }
  }
  return copy ?? value;
}

function typesOf(schema: JsonSchema): Set<string> {
  const type = schema.type;
  if (typeof type === "string") return new Set([type]);
  if (Array.isArray(type)) return new Set(type.filter((t): t is string => typeof t === "string"));
  return new Set();
}

function acceptsString(schema: JsonSchema, root: JsonSchema): boolean {
  const resolved = resolveRef(schema, root);
  if (!resolved) return false;
  const types = typesOf(resolved);
  return (
    types.has("string") ||
    (types.size === 0 &&
      !resolved.anyOf &&
      !resolved.oneOf &&
      resolved.const === undefined &&
      !resolved.enum)
  );
}

/** Follows a local `$ref` (`#/$defs/...`, `#/definitions/...`); anything else is left uncoerced. */
function resolveRef(schema: JsonSchema, root: JsonSchema): JsonSchema | undefined {
  let current: JsonSchema | undefined = schema;
  for (let hops = 0; current && typeof current.$ref === "string" && hops < 16; hops++) {
    const ref: string = current.$ref as string;
    if (!ref.startsWith("#")) return undefined;
    let target: unknown = root;
    for (const part of ref.slice(1).split("/").filter(Boolean)) {
      const key = decodeURIComponent(part).replace(/~1/g, "/").replace(/~0/g, "~");
      target =
        isSchema(target) && Object.hasOwn(target, key) ? (target as JsonSchema)[key] : undefined;
    }
    current = isSchema(target) ? target : undefined;
  }
  return current;
}

function isSchema(value: unknown): value is JsonSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
