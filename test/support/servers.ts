/**
 * Servers on 127.0.0.1 for tests: mock model servers and raw HTTP servers, each closed (with every
 * connection still open) by its `close…` function, which a file calls in `afterEach`; and ports.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import { type AddressInfo, createServer as createNetServer, type Server } from "node:net";
import { type MockServer, type MockServerOptions, mockServer } from "skein/testing";

/** Listens on a free port of 127.0.0.1 and resolves with the port. */
export async function listenLocal(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

/** Closes a server: resolves once it no longer listens. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A port on 127.0.0.1 with nothing listening: taken from the OS, then released. */
export async function closedPort(): Promise<number> {
  const server = createNetServer();
  const port = await listenLocal(server);
  await closeServer(server);
  return port;
}

// ---------------------------------------------------------------------------------------------
// Mock model servers

const mockServers: MockServer[] = [];

/** A mock model server, closed by `closeMockServers`. */
export async function openMockServer(options: MockServerOptions): Promise<MockServer> {
  const server = await mockServer(options);
  mockServers.push(server);
  return server;
}

export async function closeMockServers(): Promise<void> {
  await Promise.all(mockServers.splice(0).map((server) => server.close()));
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP servers: for the bytes the mock server cannot produce (exact SSE text, a redirect, a
// stream that never ends) and plain answers. Each test writes its answer itself.

export interface RawRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (undefined when there is none). */
  body: any;
}

export interface RawServer {
  url: string;
  requests: RawRequest[];
}

const rawServers: (() => Promise<void>)[] = [];

/** `answer` writes the response; it may leave it open (the connection is closed at cleanup). */
export async function rawServer(
  answer: (request: RawRequest, response: ServerResponse) => void,
): Promise<RawServer> {
  const requests: RawRequest[] = [];
  const server = createServer((incoming, response) => {
    let text = "";
    incoming.setEncoding("utf8");
    incoming.on("data", (chunk: string) => {
      text += chunk;
    });
    incoming.on("end", () => {
      const request: RawRequest = {
        method: incoming.method ?? "",
        url: incoming.url ?? "",
        headers: incoming.headers,
        body: text ? JSON.parse(text) : undefined,
      };
      requests.push(request);
      answer(request, response);
    });
  });
  const port = await listenLocal(server);
  rawServers.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return { url: `http://127.0.0.1:${port}`, requests };
}

export async function closeRawServers(): Promise<void> {
  await Promise.all(rawServers.splice(0).map((close) => close()));
}
