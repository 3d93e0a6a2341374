/**
 * Shared pieces of the provider conformance suite: the two protocols as the suite's table, the
 * mock servers each test opens (closed in `afterEach`), and small collectors.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";
import {
  type Agent,
  type AgentEvent,
  type AnthropicOptions,
  anthropic,
  type Model,
  type ModelRequest,
  type ModelStreamEvent,
  openai,
  type RunOptions,
  type SDKResultMessage,
  type ToolDefinition,
  tool,
} from "skein";
import type { MockScript, MockServer } from "skein/testing";
import { z } from "zod";
import { openMockServer } from "../support/servers.ts";

/** The options both factories accept. */
export type SharedOptions = Pick<
  AnthropicOptions,
  | "apiKey"
  | "model"
  | "headers"
  | "maxTokens"
  | "maxRetries"
  | "maxRetryDelayMs"
  | "timeoutMs"
  | "idleTimeoutMs"
  | "totalTimeoutMs"
  | "fetch"
>;

export interface Protocol {
  name: "anthropic" | "openai";
  make(url: string, options?: SharedOptions): Model;
  /**
   * Stream positions (SSE events sent, see `StreamPosition`) in a turn with text and no thinking:
   * `afterWords(n)` is just after the n-th text delta.
   */
  afterWords(words: number): number;
  /** In a turn with tool calls only: just after the first call's block/chunk was opened. */
  toolOpenedAt: number;
  /** In a turn with `words` words of text, then tool calls: just after the first call was opened. */
  toolOpenedAfterText(words: number): number;
}

export const PROTOCOLS: Protocol[] = [
  {
    name: "anthropic",
    make: (url, options) => anthropic({ baseURL: url, apiKey: "test", ...options }),
    // message_start, ping, content_block_start, then one delta per word.
    afterWords: (words) => 3 + words,
    // message_start, ping, content_block_start(tool_use), input_json_delta "".
    toolOpenedAt: 4,
    // message_start, ping, content_block_start, the words, content_block_stop, content_block_start.
    toolOpenedAfterText: (words) => 5 + words,
  },
  {
    name: "openai",
    make: (url, options) => openai({ baseURL: `${url}/v1`, apiKey: "test", ...options }),
    // The role chunk, then one chunk per word.
    afterWords: (words) => 1 + words,
    // The role chunk, the chunk with the call's id and name.
    toolOpenedAt: 2,
    toolOpenedAfterText: (words) => 2 + words,
  },
];

/** Short limits, so a fault costs milliseconds; retry waits come from `retry-after-ms` headers. */
export const FAST: SharedOptions = {
  maxRetryDelayMs: 2_000,
  timeoutMs: 2_000,
  idleTimeoutMs: 2_000,
};

/** A `retry-after-ms` small enough to keep a retrying test fast. */
export const RETRY_SOON = { "retry-after-ms": "5" };

/** A mock server playing `script`, closed by `closeMockServers` (call it in `afterEach`). */
export function serve(script: MockScript): Promise<MockServer> {
  return openMockServer({ script });
}

/** Runs the agent through `stream()`, collecting every event; the last is the result. */
export async function collect(
  agent: Agent,
  prompt = "hi",
  options: RunOptions = {},
): Promise<{ events: AgentEvent[]; result: SDKResultMessage }> {
  const events: AgentEvent[] = [];
  for await (const event of agent.stream(prompt, options)) events.push(event);
  const result = events.at(-1) as SDKResultMessage;
  if (result?.type !== "result") throw new Error("the stream did not end with a result");
  return { events, result };
}

export function ofType<TType extends AgentEvent["type"]>(events: AgentEvent[], type: TType) {
  return events.filter((event) => event.type === type) as Extract<AgentEvent, { type: TType }>[];
}

/** Calls the Model's own `stream()` once and collects its events. */
export async function streamModel(
  model: Model,
  request: Partial<ModelRequest> = {},
  signal: AbortSignal = new AbortController().signal,
): Promise<ModelStreamEvent[]> {
  const events: ModelStreamEvent[] = [];
  const full: ModelRequest = {
    system: "",
    messages: [{ role: "user", content: "hi" }],
    tools: [],
    ...request,
  };
  for await (const event of model.stream(full, { signal })) events.push(event);
  return events;
}

/** `echo`: records each input's text and answers `echo: <text>`. Not concurrency-safe. */
export function echoTool(
  seen: string[] = [],
  options: { safe?: boolean } = {},
): ToolDefinition<{ text: string }> {
  return tool(
    "echo",
    "Echo the text back",
    z.object({ text: z.string() }),
    async ({ text }) => {
      seen.push(text);
      return `echo: ${text}`;
    },
    options.safe ? { isConcurrencySafe: () => true } : undefined,
  );
}

/** The message bodies of every request the server received, in order. */
export function bodies(server: MockServer): any[] {
  return server.requests.map((request) => request.body);
}

/**
 * A TCP relay in front of a server, so a test can see when the client closes its connection
 * (the mock server does not report it). `closed` counts client connections that ended.
 */
export async function relay(target: string): Promise<{
  url: string;
  opened: number;
  closed: number;
  whenClosed(): Promise<void>;
  close(): Promise<void>;
}> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const waiting: (() => void)[] = [];
  const state = { opened: 0, closed: 0 };
  const server: Server = createServer((client) => {
    state.opened++;
    sockets.add(client);
    const upstream = createConnection({ host: hostname, port: Number(port) });
    sockets.add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("error", () => {});
    upstream.on("error", () => client.destroy());
    client.on("close", () => {
      state.closed++;
      upstream.destroy();
      for (const wake of waiting.splice(0)) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    get opened() {
      return state.opened;
    },
    get closed() {
      return state.closed;
    },
    whenClosed: () => new Promise<void>((resolve) => waiting.push(resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
