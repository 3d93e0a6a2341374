// What an attempt (attempt.ts) makes of a fetch's answer: whether it is a Response at all, what
// a failed fetch or read means, and an error body read up to a limit.

import {
  APIConnectionError,
  APITimeoutError,
  describeThrown,
  ProtocolError,
} from "../core/errors.ts";

/** What an attempt reads of a Response: a user's fetch may return anything. */
export function isResponse(value: unknown): value is Response {
  // Node's own fetch answers with its Response: no need to look at it getter by getter.
  if (value instanceof Response) return true;
  const response = value as Response | null;
  return (
    typeof response === "object" &&
    response !== null &&
    typeof response.ok === "boolean" &&
    typeof response.status === "number" &&
    typeof response.headers?.get === "function" &&
    (response.body === null || typeof response.body?.getReader === "function")
  );
}

/** What a failed fetch or read means: our own timeout, the caller's abort, or a broken connection. */
export function connectionError(
  error: unknown,
  signal: AbortSignal,
  url: string,
  phase: "connect" | "read",
): unknown {
  if (signal.aborted && signal.reason instanceof APITimeoutError) return signal.reason;
  if (signal.aborted) return signal.reason ?? error;
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  const detail = cause?.code ?? cause?.message ?? describeThrown(error).message;
  if (/redirect/i.test(detail)) {
    // Not retried: the same request gets the same redirect.
    return new ProtocolError(
      `The model API at ${new URL(url).origin} answered with a redirect, which skein does not follow (it could carry the key to another host). Set the base URL to where it redirects.`,
      { cause: error },
    );
  }
  const origin = new URL(url).origin;
  const message =
    phase === "connect"
      ? `Could not reach the model API at ${origin} (${detail}).`
      : `The connection to the model API at ${origin} broke while the reply was streaming (${detail}).`;
  return new APIConnectionError(message, { cause: error });
}

/**
 * The body as text, at most `limit` bytes (an error page can be large, and the model needs only
 * its start); what arrived until the attempt was aborted (`waitFor` rejects), if it was.
 */
export async function readCapped(
  response: Response,
  limit: number,
  waitFor: <T>(promise: PromiseLike<T>) => Promise<T>,
): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await waitFor(reader.read());
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    // Timed out or cut: what arrived is still worth showing.
  }
  await waitFor(reader.cancel()).catch(() => {});
  return new TextDecoder().decode(Buffer.concat(chunks).subarray(0, limit));
}
