// `skein dev`: the HTTP plumbing of the inspector: errors as statuses, bodies, headers.

import type { IncomingMessage, ServerResponse } from "node:http";
import {
  ConfigurationError,
  ResumeError,
  RewindError,
  SessionConflictError,
  SessionError,
  SkeinError,
} from "../../index.ts";
import { isValidSessionId } from "../../sessions/validate.ts";

/** The largest POST body read (a steering message, a set of answers). */
export const BODY_LIMIT = 64 * 1024;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A session id from the path, checked against the store's charset (400 otherwise). */
export function sessionIdOf(raw: string | undefined): string {
  let id: string;
  try {
    id = decodeURIComponent(raw ?? "");
  } catch {
    throw new HttpError(400, "the session id is not valid URL text.");
  }
  if (!isValidSessionId(id))
    throw new HttpError(
      400,
      'a session id is 1-128 characters from A-Z, a-z, 0-9, ".", "_", ":" and "-".',
    );
  return id;
}

export async function readJson(request: IncomingMessage): Promise<unknown> {
  const type = request.headers["content-type"] ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type))
    throw new HttpError(415, "send the body as JSON (Content-Type: application/json).");
  const declared = Number(request.headers["content-length"] ?? 0);
  if (declared > BODY_LIMIT) throw new HttpError(413, `the body is over ${BODY_LIMIT} bytes.`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT) throw new HttpError(413, `the body is over ${BODY_LIMIT} bytes.`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new HttpError(400, "the body is not valid JSON.");
  }
}

export function field(body: unknown, name: string): unknown {
  return typeof body === "object" && body !== null && !Array.isArray(body)
    ? (body as Record<string, unknown>)[name]
    : undefined;
}

export const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

export function send(response: ServerResponse, status: number, type: string, body: string): void {
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    "content-type": type,
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(body),
  });
  response.end(body);
}

export function json(response: ServerResponse, status: number, value: unknown): void {
  send(response, status, "application/json; charset=utf-8", JSON.stringify(value));
}

export function statusOf(error: unknown): [number, string] {
  if (error instanceof HttpError) return [error.status, error.message];
  if (error instanceof SessionError)
    return [error.code === "not_found" ? 404 : error.code === "damaged" ? 422 : 409, error.message];
  if (error instanceof ConfigurationError) return [400, error.message];
  if (
    error instanceof ResumeError ||
    error instanceof RewindError ||
    error instanceof SessionConflictError
  )
    return [409, error.message];
  return [500, messageOf(error)];
}

export function messageOf(error: unknown): string {
  if (error instanceof Error)
    return SkeinError.isInstance(error) ? error.message : `${error.name}: ${error.message}`;
  return String(error);
}
