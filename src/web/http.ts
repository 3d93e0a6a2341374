// What chatHandler and agUiHandler share: JSON errors, bounded bodies, the session id check,
// authorisation, and the runs live in this process (for reconnecting streams).

import { isValidSessionId } from "../sessions/validate.ts";

/** Who may read or drive a session: `false` is a 403, and nothing is read or written. */
export type Authorize = (request: Request, sessionId: string) => boolean | Promise<boolean>;

/** The default limit of a request body: 1 MB. */
export const DEFAULT_BODY_LIMIT = 1_000_000;

/** A refusal, as a JSON body `{ error: { code, message } }`. */
export function jsonError(status: number, code: string, message: string): Response {
  return new Response(JSON.stringify({ error: { code, message } }), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
  });
}

export class HttpRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }

  response(): Response {
    return jsonError(this.status, this.code, this.message);
  }
}

/** The body as JSON: 413 over `limit` bytes (read no further), 400 when it is not a JSON object. */
export async function readJsonBody(request: Request, limit: number): Promise<Record<string, any>> {
  const declared = Number(request.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > limit)
    throw new HttpRefusal(413, "body_too_large", `The request body is over ${limit} bytes.`);
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        throw new HttpRefusal(413, "body_too_large", `The request body is over ${limit} bytes.`);
      }
      chunks.push(value);
    }
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new HttpRefusal(400, "malformed_body", "The request body is not UTF-8 text.");
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new HttpRefusal(400, "malformed_body", "The request body is not valid JSON.");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new HttpRefusal(400, "malformed_body", "The request body must be a JSON object.");
  return body as Record<string, any>;
}

export function checkSessionId(value: unknown, field: string): string {
  if (!isValidSessionId(value))
    throw new HttpRefusal(
      400,
      "bad_session_id",
      `${field} must be a session id: 1-128 characters from A-Z, a-z, 0-9, ".", "_", ":" and "-".`,
    );
  return value;
}

export async function checkAuthorized(
  authorize: Authorize | undefined,
  request: Request,
  sessionId: string,
): Promise<void> {
  if (!authorize) return;
  let allowed: unknown;
  try {
    allowed = await authorize(request, sessionId);
  } catch {
    allowed = false;
  }
  if (allowed !== true)
    throw new HttpRefusal(403, "forbidden", "This request may not read or drive this session.");
}

/**
 * A run live in this process: the bytes it streamed so far, from its message's start, and whoever
 * follows it. The run goes on when a follower goes away (a dropped connection); a reconnect
 * replays what was sent and then follows live.
 */
export class LiveRun {
  private readonly parts: Uint8Array[] = [];
  private ended = false;
  private readonly waiters = new Set<() => void>();

  push(part: Uint8Array): void {
    this.parts.push(part);
    this.wake();
  }

  end(): void {
    this.ended = true;
    this.wake();
  }

  get done(): boolean {
    return this.ended;
  }

  private wake(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }

  /** A stream of everything sent so far, then live, until the run's stream ends. */
  follow(): ReadableStream<Uint8Array> {
    let index = 0;
    let wake: (() => void) | undefined;
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        for (;;) {
          if (index < this.parts.length) {
            const available = this.parts.slice(index);
            index = this.parts.length;
            controller.enqueue(available.length === 1 ? available[0]! : Buffer.concat(available));
            return;
          }
          if (this.ended) {
            controller.close();
            return;
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
            this.waiters.add(resolve);
          });
        }
      },
      cancel: () => {
        if (wake) {
          this.waiters.delete(wake);
          wake();
        }
      },
    });
  }
}

/** Reads a stream into a LiveRun, to its end, whatever its followers do. */
export async function pump(live: LiveRun, source: ReadableStream<Uint8Array>): Promise<void> {
  const reader = source.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      live.push(value);
    }
  } finally {
    live.end();
  }
}
