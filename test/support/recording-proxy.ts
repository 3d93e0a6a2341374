/**
 * An HTTP proxy on 127.0.0.1 in front of a server (a mockServer), recording every exchange as
 * text: the request body exactly as the client sent it, and the response body exactly as the
 * server sent it (for a stream, as much as was sent before either side went away). Tests read
 * what the model server gave and what the client sent back, byte for byte, across processes.
 */
import { createServer, request as httpRequest } from "node:http";
import { listenLocal } from "./servers.ts";

export interface Exchange {
  method: string;
  /** The path with its query string. */
  path: string;
  /** The request body as sent. */
  request: string;
  /** The response status (0 until the headers arrived). */
  status: number;
  /** The response body as sent so far. */
  response: string;
  /** True once the response ended as the server ended it (not cut by either side). */
  ended: boolean;
}

export interface RecordingProxy {
  url: string;
  exchanges: Exchange[];
  close(): Promise<void>;
}

export async function recordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const exchanges: Exchange[] = [];
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      const body = Buffer.concat(chunks);
      const exchange: Exchange = {
        method: incoming.method ?? "GET",
        path: incoming.url ?? "/",
        request: body.toString("utf8"),
        status: 0,
        response: "",
        ended: false,
      };
      exchanges.push(exchange);
      const headers = { ...incoming.headers, host: upstream.host };
      const forward = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: exchange.method,
          path: exchange.path,
          headers,
          agent: false,
        },
        (answer) => {
          exchange.status = answer.statusCode ?? 0;
          outgoing.writeHead(exchange.status, answer.headers);
          answer.setEncoding("utf8");
          answer.on("data", (text: string) => {
            exchange.response += text;
            outgoing.write(text);
          });
          answer.on("end", () => {
            exchange.ended = true;
            outgoing.end();
          });
          answer.on("error", () => outgoing.destroy());
          answer.on("aborted", () => outgoing.destroy());
        },
      );
      forward.on("error", () => outgoing.destroy());
      // The client went away (killed, or gave up): so does the upstream request.
      outgoing.on("close", () => forward.destroy());
      forward.end(body);
    });
  });
  const port = await listenLocal(server as unknown as import("node:net").Server);
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
