/**
 * OpenAI strict mode for tool schemas: the schema the endpoint is sent, and the input the tool
 * is given back (its own schema's view).
 */

/**
 * Strict mode wants every object closed (`additionalProperties: false`) with every property
 * required; optional ones become nullable, and `restoreOptionals` removes those nulls again
 * before validation, so the tool sees the input its own schema describes.
 */
export function strictSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strictSchema);
  if (typeof schema !== "object" || schema === null) return schema;
  const source = schema as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(source)) {
    if (key === "properties" || key === "$defs" || key === "definitions") {
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([name, inner]) => [
          name,
          strictSchema(inner),
        ]),
      );
    } else if (
      key === "items" ||
      key === "anyOf" ||
      key === "oneOf" ||
      key === "allOf" ||
      key === "prefixItems"
    ) {
      out[key] = strictSchema(value);
    } else out[key] = value;
  }
  if (
    source.type === "object" &&
    typeof source.properties === "object" &&
    source.properties !== null
  ) {
    const required = new Set(Array.isArray(source.required) ? (source.required as string[]) : []);
    const properties = out.properties as Record<string, unknown>;
    for (const name of Object.keys(properties)) {
      if (!required.has(name)) properties[name] = { anyOf: [properties[name], { type: "null" }] };
    }
    out.required = Object.keys(properties);
    out.additionalProperties = false;
  }
  return out;
}

/** Drops the nulls strict mode made the model send for optional properties (the original schema's view). */
export function restoreOptionals(input: unknown, schema: unknown): unknown {
  if (typeof input !== "object" || input === null || typeof schema !== "object" || schema === null)
    return input;
  const source = schema as Record<string, unknown>;
  if (Array.isArray(input)) {
    return source.items ? input.map((item) => restoreOptionals(item, source.items)) : input;
  }
  const properties = (source.properties ?? {}) as Record<string, unknown>;
  const required = new Set(Array.isArray(source.required) ? (source.required as string[]) : []);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input as Record<string, unknown>)) {
    if (value === null && Object.hasOwn(properties, key) && !required.has(key)) continue;
    out[key] = Object.hasOwn(properties, key) ? restoreOptionals(value, properties[key]) : value;
  }
  return out;
}
