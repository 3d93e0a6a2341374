/**
 * A deep copy of `value` that `JSON.stringify` always accepts: BigInts become strings, cycles
 * and unreadable values become markers, functions and symbols are left out (as JSON does), and
 * `toJSON` is honoured (Dates, Buffers). Used for run states, which must survive JSON whatever a
 * tool put in its `details` or progress.
 */
export function toJsonValue(value: unknown, ancestors: Set<object> = new Set()): unknown {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value === "bigint") return value.toString();
  if (typeof value !== "object") return undefined;
  if (ancestors.has(value)) return "[Circular]";
  try {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === "function") return toJsonValue(toJSON.call(value), ancestors);
    ancestors.add(value);
    if (Array.isArray(value)) return value.map((item) => toJsonValue(item, ancestors) ?? null);
    const copy: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const item = toJsonValue((value as Record<string, unknown>)[key], ancestors);
      if (item !== undefined) copy[key] = item;
    }
    return copy;
  } catch {
    return "[unreadable]";
  } finally {
    ancestors.delete(value);
  }
}
