/**
 * When an attempt that failed is tried again, and after how long (RELIABILITY contract 2): the
 * transport's retry policy.
 */
import {
  APIConnectionError,
  APIError,
  InternalServerError,
  OverloadedError,
  ProtocolError,
  RateLimitError,
} from "../core/errors.ts";

/** RELIABILITY contract 2: connection errors, 408, 409, 429, 5xx and overloaded errors are retried; `x-should-retry` decides first. */
export function shouldRetry(error: unknown): boolean {
  if (error instanceof APIConnectionError) return true;
  if (error instanceof ProtocolError) return error.retryable === true;
  if (!(error instanceof APIError)) return false;
  const header = error.headers["x-should-retry"];
  if (header === "true") return true;
  if (header === "false") return false;
  // A 429 that says the account is out of credit: trying again cannot help (design/models.md).
  if (error.type === "insufficient_quota") return false;
  // These are only made for retryable answers, with or without a status (an error event inside a stream has none).
  if (
    error instanceof OverloadedError ||
    error instanceof RateLimitError ||
    error instanceof InternalServerError
  )
    return true;
  const status = error.status;
  return (
    status === 408 || status === 409 || status === 429 || (status !== undefined && status >= 500)
  );
}

/** `retry-after-ms`, then `retry-after` (seconds or an HTTP date), within the cap; else exponential backoff with jitter. */
export function retryDelay(error: unknown, attempt: number, maxRetryDelayMs: number): number {
  const headers = error instanceof APIError ? error.headers : {};
  const fromHeaders = parseRetryAfter(headers["retry-after-ms"], headers["retry-after"]);
  if (fromHeaders !== undefined && fromHeaders >= 0 && fromHeaders <= maxRetryDelayMs)
    return fromHeaders;
  const base = Math.min(500 * 2 ** (attempt - 1), 8_000);
  return Math.round(base * (1 - Math.random() * 0.25));
}

function parseRetryAfter(
  milliseconds: string | undefined,
  seconds: string | undefined,
): number | undefined {
  if (milliseconds !== undefined && Number.isFinite(Number.parseFloat(milliseconds)))
    return Number.parseFloat(milliseconds);
  if (seconds === undefined) return undefined;
  const asNumber = Number.parseFloat(seconds);
  if (Number.isFinite(asNumber)) return asNumber * 1000;
  const date = Date.parse(seconds);
  return Number.isFinite(date) ? date - Date.now() : undefined;
}

export function sleep(milliseconds: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, milliseconds);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
