// What every session store shares: argument checks, and the wrapping of backend failures.
import { ConfigurationError, SessionStoreError, SkeinError } from "../core/errors.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";

const SESSION_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const READ_OPTION_KEYS: ReadonlySet<string> = new Set(["after"]);

export function isValidSessionId(value: unknown): value is string {
  return typeof value === "string" && SESSION_ID.test(value);
}

/** A session id is 1-128 characters of `[A-Za-z0-9._:-]`: safe in file names, URLs and logs. */
export function assertSessionId(prefix: string, value: unknown): asserts value is string {
  if (!isValidSessionId(value)) {
    throw new ConfigurationError(
      `${prefix}: session id ${describeValue(value)} is not valid. Use 1-128 characters from A-Z, a-z, 0-9, ".", "_", ":" and "-".`,
    );
  }
}

export function assertSeq(prefix: string, value: unknown): asserts value is number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new ConfigurationError(
      `${prefix}: seq must be a positive integer (the session's last seq + 1, or 1 for a new session), received ${describeValue(value)}.`,
    );
  }
}

/**
 * Entries are a non-empty array of strings, each well-formed Unicode without NUL: the strings
 * every store can keep byte for byte (Postgres TEXT refuses NUL; SQLite and Postgres would turn
 * a lone surrogate into U+FFFD). Returns a copy, so a caller mutating its array mid-append
 * changes nothing.
 */
export function checkEntries(prefix: string, value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new ConfigurationError(
      `${prefix}: entries must be a non-empty array of strings, received ${describeValue(value)}.`,
    );
  }
  const entries: unknown[] = value.slice();
  for (let index = 0; index < entries.length; index++) {
    const entry = entries[index];
    if (typeof entry !== "string") {
      throw new ConfigurationError(
        `${prefix}: entries[${index}] must be a string, received ${describeValue(entry)}.`,
      );
    }
    if (entry.includes("\0")) {
      throw new ConfigurationError(
        `${prefix}: entries[${index}] contains a NUL character (U+0000), which session stores cannot keep. Escape it (JSON text writes it as \\u0000).`,
      );
    }
    if (!(entry as unknown as { isWellFormed(): boolean }).isWellFormed()) {
      throw new ConfigurationError(
        `${prefix}: entries[${index}] contains a lone surrogate (not valid Unicode), which session stores cannot keep byte for byte. Escape it (JSON.stringify does).`,
      );
    }
  }
  return entries as string[];
}

/** Reads `{ after }` (default 0), strictly checked. */
export function readAfter(prefix: string, options: unknown): number {
  assertKnownOptions(prefix, options, READ_OPTION_KEYS);
  const after = (options as { after?: unknown } | undefined)?.after;
  if (after === undefined) return 0;
  if (typeof after !== "number" || !Number.isSafeInteger(after) || after < 0) {
    throw new ConfigurationError(
      `${prefix}: after must be a non-negative integer (a seq), received ${describeValue(after)}.`,
    );
  }
  return after;
}

/** What a backend threw, as a `SessionStoreError` naming the action (skein's own errors pass through). */
export function storeFailure(action: string, error: unknown): SkeinError {
  if (SkeinError.isInstance(error)) return error;
  const reason = error instanceof Error ? error.message : String(error);
  return new SessionStoreError(`${action} failed: ${reason}`, { cause: error });
}

/** `lease`, `renew` and `release` take a session id, a non-empty owner and (but release) a ttl. */
export function assertLease(
  prefix: string,
  sessionId: unknown,
  owner: unknown,
  ttlMs?: unknown,
): void {
  assertSessionId(prefix, sessionId);
  if (typeof owner !== "string" || owner === "")
    throw new ConfigurationError(
      `${prefix}: owner must be a non-empty string, received ${describeValue(owner)}.`,
    );
  if (
    ttlMs !== undefined &&
    (typeof ttlMs !== "number" || !Number.isSafeInteger(ttlMs) || ttlMs < 1)
  )
    throw new ConfigurationError(
      `${prefix}: ttlMs must be a positive whole number of milliseconds, received ${describeValue(ttlMs)}.`,
    );
}
