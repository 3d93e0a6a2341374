/**
 * A JSON Schema as Anthropic's structured outputs take it. Constrained decoding supports a subset
 * of JSON Schema, and requires every object to be closed: the documented limits ("JSON Schema
 * limitations" on https://platform.claude.com/docs/en/build-with-claude/structured-outputs) are
 * no numeric limits (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`),
 * no string lengths (`minLength`, `maxLength`), no array limits beyond `minItems` 0 or 1, a fixed
 * set of string formats, and `additionalProperties: false` on every object. The official SDKs
 * adapt a schema the same way before sending it: each object is closed, `oneOf` becomes `anyOf`,
 * and what the API cannot enforce moves into the description, where the model still reads it.
 * Nothing is lost: the engine validates the answer against the original schema.
 */

type Schema = Record<string, unknown>;

const UNSUPPORTED: ReadonlySet<string> = new Set([
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "maxItems",
  "minProperties",
  "maxProperties",
]);

const FORMATS: ReadonlySet<string> = new Set([
  "date-time",
  "time",
  "date",
  "duration",
  "email",
  "hostname",
  "uri",
  "ipv4",
  "ipv6",
  "uuid",
]);

/** Keywords whose value is a map of schemas. */
const SCHEMA_MAPS: ReadonlySet<string> = new Set(["properties", "$defs", "definitions"]);
/** Keywords whose value is a list of schemas. */
const SCHEMA_LISTS: ReadonlySet<string> = new Set(["anyOf", "allOf", "prefixItems"]);

export function anthropicOutputSchema(schema: Schema): Schema {
  return adapt(schema) as Schema;
}

function adapt(node: unknown): unknown {
  if (typeof node !== "object" || node === null || Array.isArray(node)) return node;
  const schema = node as Schema;
  const out: Schema = {};
  const notes: string[] = [];
  const note = (key: string, value: unknown) => notes.push(`${key}: ${JSON.stringify(value)}`);
  for (const [key, value] of Object.entries(schema)) {
    if (SCHEMA_MAPS.has(key) && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, adapt(sub)]));
    } else if ((SCHEMA_LISTS.has(key) || key === "oneOf") && Array.isArray(value)) {
      // `oneOf` is not supported; for an answer that is checked afterwards, `anyOf` is as good.
      const list = value.map(adapt);
      if (key === "oneOf") out.anyOf = [...((out.anyOf as unknown[]) ?? []), ...list];
      else out[key] = list;
    } else if (key === "items") {
      out.items = Array.isArray(value) ? value.map(adapt) : adapt(value);
    } else if (key === "additionalProperties") {
      // Set below for every object; a schema that allowed more says so in its description.
      if (value !== false && isObjectSchema(schema)) note(key, value);
      else if (!isObjectSchema(schema)) out[key] = value;
    } else if (UNSUPPORTED.has(key)) {
      note(key, value);
    } else if (key === "minItems" && value !== 0 && value !== 1) {
      note(key, value);
    } else if (key === "format" && !(typeof value === "string" && FORMATS.has(value))) {
      note(key, value);
    } else out[key] = value;
  }
  if (isObjectSchema(schema)) out.additionalProperties = false;
  if (notes.length) {
    const limits = `{${notes.join(", ")}}`;
    out.description =
      typeof out.description === "string" && out.description
        ? `${out.description}\n\n${limits}`
        : limits;
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isObjectSchema(schema: Schema): boolean {
  const type = schema.type;
  return (
    type === "object" ||
    (Array.isArray(type) && type.includes("object")) ||
    (type === undefined && isObject(schema.properties))
  );
}
