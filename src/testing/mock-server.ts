import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ConfigurationError, describeThrown } from "../core/errors.ts";
import { assertKnownOptions, describeValue } from "../core/options.ts";
import { anthropicWire } from "./mock/anthropic-wire.ts";
import { checkTurn, withoutFaults } from "./mock/check-turn.ts";
import { createGeminiWire } from "./mock/gemini-wire.ts";
import { openaiWire } from "./mock/openai-wire.ts";
import { type ErrorContext, planTurn, type RequestContext, type Wire } from "./mock/plan.ts";
import { type Playback, playBody, playStream, sleep } from "./mock/play.ts";
import { createResponsesWire, responsesTurnIndex } from "./mock/responses-wire.ts";
import type {
  MockErrorSpec,
  MockProtocol,
  MockRequest,
  MockScriptRequest,
  MockServer,
  MockServerOptions,
  MockTurn,
} from "./mock/types.ts";

const OPTION_KEYS: ReadonlySet<string> = new Set(["script", "models", "validate"]);

/** Gemini's call path: `/v1beta/models/{model}:streamGenerateContent` (or `:generateContent`). */
const GEMINI_CALL = /^\/v1beta\/models\/([^/:]+):(streamGenerateContent|generateContent)$/;

/**
 * A local HTTP server on 127.0.0.1 (a free port) that speaks the Anthropic Messages API at `url`,
 * the OpenAI Chat Completions API at `url + "/v1"` and the Gemini API at `url` (`POST
 * /v1beta/models/{model}:streamGenerateContent?alt=sse`), streamed or not, plays a script and
 * injects the faults a turn asks for. See `MockTurn` for the script and its faults.
 *
 * @example
 * ```ts
 * import { anthropic, createBareAgent } from "skein";
 * import { mockServer } from "skein/testing";
 *
 * // The first attempt gets a 429; the retry gets the answer.
 * const server = await mockServer({ script: [{ status: 429, times: 1, text: "hi" }] });
 * const agent = createBareAgent({ model: anthropic({ baseURL: server.url, apiKey: "test" }) });
 * console.log((await agent.run("hello")).result); // hi
 * await server.close();
 * ```
 */
export async function mockServer(options: MockServerOptions): Promise<MockServer> {
  assertKnownOptions("mockServer()", options, OPTION_KEYS);
  const { script } = options ?? {};
  if (Array.isArray(script)) {
    script.forEach((turn, index) => {
      checkTurn(turn, `mockServer(): script[${index}]`);
    });
  } else if (typeof script !== "function") {
    throw new ConfigurationError(
      "mockServer(): script must be an array of turns or a function ({ body, protocol }) => turn.",
    );
  }
  if (options.validate !== undefined && typeof options.validate !== "boolean") {
    throw new ConfigurationError(
      `mockServer(): validate must be a boolean, received ${describeValue(options.validate)}.`,
    );
  }
  const state: ServerState = {
    options: {
      script,
      models: options.models ?? ["mock-model"],
      validate: options.validate ?? true,
    },
    requests: [],
    attempts: new Map(),
    seq: 0,
    closing: new AbortController(),
    wires: {
      anthropic: anthropicWire,
      openai: openaiWire,
      "openai-responses": createResponsesWire(new Map()),
      gemini: createGeminiWire(new Map()),
    },
  };
  const server = createServer((request, response) => {
    handle(state, request, response).catch((error: unknown) => {
      // A bug in the mock must not hang the client: answer 500 if still possible, else drop.
      const { message } = describeThrown(error);
      if (!response.headersSent) response.writeHead(500, { "content-type": "text/plain" });
      response.end(`mockServer: internal error: ${message}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: state.requests,
    close() {
      closed ??= new Promise<void>((resolve) => {
        state.closing.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

interface ServerState {
  options: Required<MockServerOptions>;
  requests: MockRequest[];
  /** Requests seen per turn index, for `times`. */
  attempts: Map<number, number>;
  seq: number;
  closing: AbortController;
  /** Each protocol's wire; Gemini's remembers the signatures this server gave. */
  wires: Record<MockProtocol, Wire>;
}

async function handle(state: ServerState, request: IncomingMessage, response: ServerResponse) {
  const raw = await readBody(request);
  const url = new URL(request.url ?? "/", "http://127.0.0.1");
  const method = request.method ?? "GET";
  const headers = headersOf(request);
  const body = parseBody(raw);
  const protocol = protocolOf(url.pathname, headers);
  const record: MockRequest = { protocol, method, path: url.pathname + url.search, headers, body };
  state.requests.push(record);
  state.seq += 1;
  const lifetime = new AbortController();
  response.once("close", () => lifetime.abort());
  const signal = AbortSignal.any([lifetime.signal, state.closing.signal]);
  const wire = state.wires[protocol];
  const requestId = `req_mock_${state.seq}`;
  const errorContext: ErrorContext = { model: undefined, requestId, method, path: url.pathname };
  const sendError = (status: number, spec: MockErrorSpec, extra: Record<string, string> = {}) =>
    sendJson(response, status, wire.errorBody(status, spec, errorContext), {
      [wire.requestIdHeader]: requestId,
      ...extra,
    });

  const isModels = method === "GET" && /^\/v1\/models(\/[^/]+)?\/?$/.test(url.pathname);
  if (isModels) {
    const id = decodeURIComponent(url.pathname.split("/")[3] ?? "");
    if (!id) return sendJson(response, 200, wire.models(state.options.models), {});
    if (state.options.models.includes(id)) return sendJson(response, 200, wire.model(id), {});
    return sendError(404, { message: `model: ${id} not found` });
  }
  const path = url.pathname.replace(/\/+$/, "");
  const gemini = protocol === "gemini" ? GEMINI_CALL.exec(path) : undefined;
  const isCall =
    method === "POST" && (protocol === "gemini" ? gemini !== null : path === CALL_PATHS[protocol]);
  if (!isCall) return sendError(404, {});

  if (raw.length > 0 && typeof body !== "object") {
    return sendError(400, { message: "mockServer: the request body is not valid JSON." });
  }
  const history =
    protocol === "gemini"
      ? body?.contents
      : protocol === "openai-responses"
        ? body?.input
        : body?.messages;
  if (!Array.isArray(history)) {
    return sendError(
      400,
      protocol === "gemini"
        ? { message: "* GenerateContentRequest.contents: contents is not specified" }
        : protocol === "openai-responses"
          ? { message: "Missing required parameter: 'input'.", param: "input" }
          : { message: "messages: Field required (an array of messages)." },
    );
  }
  errorContext.model = gemini
    ? decodeURIComponent(gemini[1]!)
    : typeof body.model === "string"
      ? body.model
      : undefined;
  // What the real API refuses is refused here too, before the script is asked.
  const refused = state.options.validate ? wire.validate(body, errorContext.model) : undefined;
  if (refused) return sendError(400, refused, { "x-should-retry": "false" });
  const replyRole = protocol === "gemini" ? "model" : "assistant";
  const index =
    protocol === "openai-responses"
      ? responsesTurnIndex(history)
      : history.filter((message: any) => message?.role === replyRole).length;
  const attempt = (state.attempts.get(index) ?? 0) + 1;
  state.attempts.set(index, attempt);
  record.turn = index;
  record.attempt = attempt;

  // A script that cannot answer is the test's mistake: say so, and tell clients not to retry.
  const noRetry = { "x-should-retry": "false" };
  let turn: MockTurn;
  try {
    turn = await turnFor(state.options.script, { protocol, body, headers, index, attempt });
  } catch (error) {
    return sendError(500, { message: describeThrown(error).message }, noRetry);
  }
  if (turn.times !== undefined && attempt > turn.times) turn = withoutFaults(turn);
  const streamed = gemini ? gemini[2] === "streamGenerateContent" : body.stream === true;
  await respond({
    state,
    protocol,
    wire,
    turn,
    body,
    raw,
    index,
    streamed,
    errorContext,
    signal,
    response,
    sendError,
  });
}

interface Answer {
  state: ServerState;
  protocol: MockProtocol;
  wire: Wire;
  streamed: boolean;
  turn: MockTurn;
  body: any;
  raw: Buffer;
  index: number;
  errorContext: ErrorContext;
  signal: AbortSignal;
  response: ServerResponse;
  sendError: (status: number, spec: MockErrorSpec, extra?: Record<string, string>) => void;
}

async function respond(answer: Answer): Promise<void> {
  const { turn, wire, response, signal, errorContext } = answer;
  if (turn.dropConnection) {
    response.socket?.resetAndDestroy();
    return;
  }
  if (turn.hang) return sleep(Number.POSITIVE_INFINITY, signal);
  if (turn.delayMs) await sleep(turn.delayMs, signal);
  if (signal.aborted) return;

  const headers = { [wire.requestIdHeader]: errorContext.requestId, ...turn.headers };
  const playback: Playback = { response, turn, headers, signal };
  const contentType = turn.contentType ?? "text/html; charset=utf-8";
  if (turn.rawBody !== undefined) {
    return playBody(playback, { status: turn.status ?? 200, body: turn.rawBody, contentType });
  }
  if (turn.status !== undefined && turn.status >= 400) {
    if (turn.html) {
      return playBody(playback, { status: turn.status, body: htmlPage(turn.status), contentType });
    }
    const body = JSON.stringify(wire.errorBody(turn.status, turn.error ?? {}, errorContext));
    return playBody(playback, { status: turn.status, body, contentType: "application/json" });
  }
  const context: RequestContext = {
    protocol: answer.protocol,
    seq: answer.state.seq,
    index: answer.index,
    model: errorContext.model ?? "mock-model",
    requestBytes: answer.raw.length,
    includeUsage: answer.body.stream_options?.include_usage === true,
  };
  const plan = planTurn(turn, context);
  if (answer.streamed) return playStream(playback, plan, wire.events(plan, context), wire);
  const body = JSON.stringify(wire.message(plan));
  return playBody(playback, { status: 200, body, contentType: "application/json" });
}

async function turnFor(
  script: MockServerOptions["script"],
  request: MockScriptRequest,
): Promise<MockTurn> {
  if (typeof script === "function") {
    const turn = await script(request);
    checkTurn(turn, `mockServer(): the script function's turn ${request.index}`);
    return turn;
  }
  const turn = script[request.index];
  if (turn === undefined) {
    throw new Error(
      `mockServer: this request carries ${request.index} assistant messages, so it asks for turn ${request.index + 1}, but the script has only ${script.length} turns. Add a turn, or end the run earlier.`,
    );
  }
  return turn;
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks)));
    request.on("error", reject);
  });
}

function parseBody(raw: Buffer): any {
  if (raw.length === 0) return undefined;
  const text = raw.toString("utf8");
  try {
    return JSON.parse(text);
  } catch {
    return text; // kept as text in `requests`; the handler answers 400
  }
}

function headersOf(request: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}

/** By path where it tells (`/v1/messages`, `/v1/chat/...`, `/v1beta/`), else by the client's auth headers. */
/** The model call's path of each protocol but Gemini's (whose path names the model). */
const CALL_PATHS: Record<MockProtocol, string> = {
  anthropic: "/v1/messages",
  openai: "/v1/chat/completions",
  "openai-responses": "/v1/responses",
  gemini: "",
};

function protocolOf(pathname: string, headers: Record<string, string>): MockProtocol {
  if (pathname.startsWith("/v1beta/")) return "gemini";
  if (pathname.startsWith("/v1/messages")) return "anthropic";
  if (pathname.startsWith("/v1/responses")) return "openai-responses";
  if (pathname.startsWith("/v1/chat/")) return "openai";
  return "x-api-key" in headers || "anthropic-version" in headers ? "anthropic" : "openai";
}

function sendJson(
  response: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string>,
): void {
  const body = JSON.stringify(value);
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
    ...headers,
  });
  response.end(body);
}

/** The page a proxy such as nginx answers with when the upstream fails (P3). */
function htmlPage(status: number): string {
  const title = `${status} ${STATUS_TEXT[status] ?? "Error"}`;
  return `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${title}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n`;
}

const STATUS_TEXT: Record<number, string> = {
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Temporarily Unavailable",
  504: "Gateway Time-out",
};
