import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * Seals bind a call waiting for approval to what was shown for approval: its id, tool name and
 * input (DESIGN: approvals are bound to call id, name and a hash of the canonical input). The
 * seal is an HMAC, so a state edited before `resume` (another input, another tool, another id)
 * is refused before anything runs. The reason is sealed too, so a call waiting for approval cannot be
 * passed off as one merely held behind another. Each seal also covers its batch (`batchDigest`), so
 * the calls around an approval cannot be duplicated, dropped, added, reordered or re-answered.
 * Without `approvalSecret` the key lives and dies with the process.
 */
const processKey = randomBytes(32);

/** What a seal covers: a held call must not turn into one that skips its own approval. */
export interface SealedCall {
  sessionId: string;
  id: string;
  name: string;
  input: unknown;
  reason: string;
  /** `batchDigest` of the batch the call belongs to. */
  batch: string;
}

export function sealCall(secret: string | undefined, call: SealedCall): string {
  return sealValue(secret, callTuple(call));
}

/** What a call's seal is computed over. */
export function callTuple(call: SealedCall): unknown[] {
  return [call.sessionId, call.id, call.name, call.reason, call.input, call.batch];
}

/**
 * A hash of a paused batch as the state stores it: the assistant message that asked for it and
 * every call (order, status, input, result), the seals left out. Calls waiting for the app's
 * output carry no seal (they resume in any process), so a batch of only those is checked by its
 * shape alone (state-check.ts).
 */
export function batchDigest(message: unknown, calls: readonly unknown[]): string {
  const unsealed = calls.map((call) => {
    if (typeof call !== "object" || call === null) return call;
    const { seal: _seal, ...rest } = call as Record<string, unknown>;
    return rest;
  });
  return createHash("sha256")
    .update(canonicalJson([message, unsealed]))
    .digest("base64url");
}

/** An HMAC of a JSON value's canonical text. */
export function sealValue(secret: string | undefined, value: unknown): string {
  return createHmac("sha256", secret ?? processKey)
    .update(canonicalJson(value))
    .digest("base64url");
}

export function sealMatches(secret: string | undefined, value: unknown, seal: unknown): boolean {
  if (typeof seal !== "string") return false;
  const expected = Buffer.from(sealValue(secret, value));
  const given = Buffer.from(seal);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * JSON with object keys sorted, so equal values always give equal text. Built as one string (it
 * runs for every logged tool call): the text is that of the first form, which mapped and joined
 * (`undefined` and functions as `null` in arrays, left out of objects when `undefined`, and an
 * array's holes as nothing between its commas).
 */
export function canonicalJson(value: unknown): string {
  if (typeof value !== "object" || value === null) return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    let text = "[";
    for (let index = 0; index < value.length; index++) {
      if (index > 0) text += ",";
      if (index in value) text += canonicalJson(value[index]);
    }
    return `${text}]`;
  }
  const keys = Object.keys(value).sort();
  let text = "{";
  for (const key of keys) {
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined) continue;
    if (text.length > 1) text += ",";
    text += `${JSON.stringify(key)}:${canonicalJson(item)}`;
  }
  return `${text}}`;
}
