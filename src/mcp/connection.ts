// One connection to an MCP server: the v2 client over stdio or streamable HTTP, its tool list
// (tools/list, every page), and whether it is still usable.

import type { Client, Tool } from "@modelcontextprotocol/client";
import { type Hold, holdOf } from "./child.ts";
import { McpServerError } from "./errors.ts";
import type { McpServerSpec } from "./options.ts";
import { loadClientSdk, skeinVersion } from "./sdk.ts";

/** A tool as `tools/list` described it. */
export type McpTool = Tool;

export interface Connection {
  readonly client: Client;
  /** False once the transport closed or a call found the connection broken: the next call reconnects. */
  alive: boolean;
  /** The server sent `notifications/tools/list_changed` since the list was fetched. */
  stale: boolean;
  /** A call timed out here: the next call pings first, and reconnects when the ping fails. */
  suspect?: boolean;
  tools: McpTool[];
  /** Progress callbacks of the calls in flight, by the progress token each call sent. */
  readonly progress: Map<string, (progress: McpProgress) => void>;
  /** Runs a request's `work` with a stdio server's process keeping the app alive (child.ts). */
  hold: Hold;
  /** Errors the transport reported (a line that is not JSON-RPC, a message past its read buffer). */
  transportErrors: { count: number; last?: string };
  /** Lists the tools again (every page), bounded by the server's timeout and `signal`. */
  list(signal?: AbortSignal): Promise<McpTool[]>;
  close(): Promise<void>;
}

export interface McpProgress {
  progress: number;
  total?: number;
  message?: string;
}

/**
 * Starts (or reaches) the server, initialises, and lists its tools, all within `timeoutMs`. On
 * failure nothing is left running.
 */
export async function openConnection(
  spec: McpServerSpec,
  label: string,
  events: { onToolsChanged(): void; signal?: AbortSignal },
): Promise<Connection> {
  const { sdk, stdio } = await loadClientSdk();
  const client = new sdk.Client({ name: "skein", version: skeinVersion() }, { capabilities: {} });
  const transport =
    spec.type === "stdio"
      ? new stdio.StdioClientTransport({
          command: spec.command,
          args: spec.args,
          ...(spec.env ? { env: spec.env } : {}),
          ...(spec.cwd !== undefined ? { cwd: spec.cwd } : {}),
          stderr: spec.stderr,
        })
      : new sdk.StreamableHTTPClientTransport(spec.url, {
          ...(spec.headers ? { requestInit: { headers: spec.headers } } : {}),
        });

  let closing: Promise<void> | undefined;
  const { hold, release } = holdOf(transport);
  const connection: Connection = {
    client,
    alive: true,
    stale: false,
    tools: [],
    progress: new Map(),
    hold,
    transportErrors: { count: 0 },
    list: (signal) =>
      hold(async () => {
        // A change announced while this list is in flight marks it stale again.
        connection.stale = false;
        const tools = await bounded(spec.timeoutMs, signal, (bound) =>
          listAllTools(client, { signal: bound, timeout: spec.timeoutMs }),
        );
        connection.tools = tools;
        return tools;
      }),
    close: () => {
      connection.alive = false;
      // Held: an app awaiting close() with nothing else to wait for still sees the process end.
      closing ??= hold(async () => {
        // An HTTP session is ended on the server too (DELETE), not only forgotten here.
        if (spec.type === "http")
          await (transport as { terminateSession?: () => Promise<void> })
            .terminateSession?.()
            .catch(() => {});
        await client.close().catch(() => {});
      }).finally(release);
      return closing;
    },
  };
  client.onclose = () => {
    connection.alive = false;
  };
  // Transport noise (a line on stdout that is not JSON-RPC, a failed SSE reconnect) is not fatal
  // by itself: calls that get no answer end by their timeout, broken sessions by their error,
  // which then says what the transport reported.
  client.onerror = (error) => {
    connection.transportErrors.count += 1;
    connection.transportErrors.last = error instanceof Error ? error.message : String(error);
  };
  // Progress is routed here rather than through the SDK's onprogress, which handles a response
  // before the notifications that arrived just ahead of it and so drops them: notification
  // handlers run one microtask after they arrive, still before the call's caller resumes.
  client.setNotificationHandler("notifications/progress", (notification) => {
    const { progressToken, progress, total, message } = notification.params;
    const report = connection.progress.get(String(progressToken));
    if (!report || typeof progress !== "number") return;
    report({
      progress,
      ...(typeof total === "number" ? { total } : {}),
      ...(typeof message === "string" ? { message } : {}),
    });
  });
  client.setNotificationHandler("notifications/tools/list_changed", () => {
    connection.stale = true;
    events.onToolsChanged();
  });

  try {
    // The process starts referenced; it is let go once the handshake and the list are done.
    await hold(async () => {
      await bounded(spec.timeoutMs, events.signal, (bound) =>
        client.connect(transport, { signal: bound, timeout: spec.timeoutMs }),
      );
      await connection.list(events.signal);
    });
    return connection;
  } catch (error) {
    await connection.close();
    if (events.signal?.aborted) throw events.signal.reason;
    throw new McpServerError(connectFailure(label, spec, error), { cause: error });
  }
}

/** Accepts any JSON: the tool list is checked entry by entry, so one odd tool costs only itself. */
const ANY_RESULT = {
  "~standard": { version: 1 as const, vendor: "skein", validate: (value: unknown) => ({ value }) },
};

/** Most pages followed for one list (a server whose cursor never ends). */
const MAX_PAGES = 1_000;

/** tools/list, following nextCursor, keeping each entry that has a name. */
async function listAllTools(
  client: Client,
  options: { signal: AbortSignal; timeout: number },
): Promise<McpTool[]> {
  const tools: McpTool[] = [];
  const cursors = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = (await client.request(
      { method: "tools/list", params: cursor === undefined ? {} : { cursor } },
      ANY_RESULT,
      options,
    )) as { tools?: unknown; nextCursor?: unknown } | null;
    if (typeof result !== "object" || result === null || !Array.isArray(result.tools))
      throw new Error(
        `its tools/list answer is not a tool list: ${JSON.stringify(result)?.slice(0, 200)}`,
      );
    for (const entry of result.tools)
      if (typeof entry === "object" && entry !== null && typeof entry.name === "string")
        tools.push(entry as McpTool);
    const next = result.nextCursor;
    if (typeof next !== "string" || next === "") return tools;
    if (cursors.has(next))
      throw new Error(`its tools/list repeats the cursor ${JSON.stringify(next)}`);
    cursors.add(next);
    cursor = next;
  }
  throw new Error(`its tools/list has more than ${MAX_PAGES} pages`);
}

/** Runs `work` with a signal that aborts after `timeoutMs` or when `signal` does. */
async function bounded<T>(
  timeoutMs: number,
  signal: AbortSignal | undefined,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new TimeoutReason(timeoutMs)), timeoutMs);
  const forward = () => controller.abort(signal?.reason);
  if (signal?.aborted) forward();
  else signal?.addEventListener("abort", forward, { once: true });
  try {
    return await work(controller.signal);
  } catch (error) {
    // The SDK reports an abort in words of its own; the reason says which bound it was.
    if (controller.signal.aborted && controller.signal.reason instanceof TimeoutReason)
      throw controller.signal.reason;
    throw error;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", forward);
  }
}

class TimeoutReason extends Error {
  override name = "TimeoutError";
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
  }
}

function connectFailure(label: string, spec: McpServerSpec, error: unknown): string {
  const where =
    spec.type === "stdio" ? `started with ${JSON.stringify(spec.command)}` : `at ${spec.url.href}`;
  if (error instanceof TimeoutReason)
    return `MCP server "${label}" (${where}) did not connect and list its tools within ${error.timeoutMs} ms (timeoutMs).`;
  const code = (error as { code?: unknown } | null)?.code;
  if (code === "ENOENT")
    return `MCP server "${label}" could not be started: the command ${JSON.stringify(spec.type === "stdio" ? spec.command : "")} was not found (check it is installed and on PATH).`;
  const message = error instanceof Error ? error.message : String(error);
  return `MCP server "${label}" (${where}) could not be connected: ${message}`;
}
