// toNodeHandler: a web-standard handler served from node:http, Express or Fastify's raw request.

import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";

/**
 * `(request: Request) => Promise<Response>` as a `(req, res)` handler for `node:http`, Express
 * (`app.all("/api/chat*", toNodeHandler(handler))`) or Fastify's raw objects. The response is
 * streamed; a client that goes away cancels the body (a chat's run goes on for a reconnect).
 */
export function toNodeHandler(
  handler: (request: Request) => Promise<Response>,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    const controller = new AbortController();
    res.on("close", () => controller.abort());
    let response: Response;
    try {
      const host = req.headers.host ?? "localhost";
      // Express keeps the path before its router's mount point in `originalUrl`.
      const path = (req as { originalUrl?: string }).originalUrl ?? req.url ?? "/";
      const url = new URL(path, `http://${host}`);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        if (value === undefined) continue;
        if (Array.isArray(value)) for (const each of value) headers.append(name, each);
        else headers.set(name, value);
      }
      const hasBody = req.method !== "GET" && req.method !== "HEAD";
      response = await handler(
        new Request(url, {
          method: req.method ?? "GET",
          headers,
          body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : null,
          signal: controller.signal,
          // Node's Request needs it for a streamed body.
          duplex: "half",
        } as RequestInit),
      );
    } catch {
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json; charset=utf-8" });
        res.end(JSON.stringify({ error: { code: "internal", message: "The request failed." } }));
      }
      return;
    }
    const outHeaders: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      outHeaders[name] = value;
    });
    res.writeHead(response.status, response.statusText, outHeaders);
    if (!response.body) {
      res.end();
      return;
    }
    res.flushHeaders();
    const reader = response.body.getReader();
    const stop = () => void reader.cancel().catch(() => {});
    res.on("close", stop);
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (!res.write(value))
          await new Promise<void>((resolve) => {
            res.once("drain", resolve);
            res.once("close", resolve);
          });
        if (res.destroyed) break;
      }
    } catch {
      // the client went away, or the body failed: nothing more to write
    } finally {
      res.off("close", stop);
      res.end();
    }
  };
}
