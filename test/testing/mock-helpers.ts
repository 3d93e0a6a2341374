import { request as httpRequest } from "node:http";
import { createParser } from "eventsource-parser";
import type { MockProtocol } from "skein/testing";

/** What a client sends, per protocol, with `messages` holding `assistantTurns` assistant messages. */
export function bodyFor(
  protocol: MockProtocol,
  options: {
    stream?: boolean;
    assistantTurns?: number;
    model?: string;
    includeUsage?: boolean;
  } = {},
): Record<string, unknown> {
  const messages: unknown[] = [{ role: "user", content: "hello" }];
  for (let turn = 0; turn < (options.assistantTurns ?? 0); turn += 1) {
    messages.push(
      { role: "assistant", content: `answer ${turn}` },
      { role: "user", content: "more" },
    );
  }
  const body: Record<string, unknown> = {
    model: options.model ?? (protocol === "anthropic" ? "claude-test" : "gpt-test"),
    messages,
  };
  if (protocol === "anthropic") body.max_tokens = 1024;
  if (options.stream) body.stream = true;
  if (options.includeUsage) body.stream_options = { include_usage: true };
  return body;
}

export function endpoint(url: string, protocol: MockProtocol): string {
  return protocol === "anthropic" ? `${url}/v1/messages` : `${url}/v1/chat/completions`;
}

export function headersFor(protocol: MockProtocol): Record<string, string> {
  return protocol === "anthropic"
    ? {
        "content-type": "application/json",
        "x-api-key": "test-key",
        "anthropic-version": "2023-06-01",
      }
    : { "content-type": "application/json", authorization: "Bearer test-key" };
}

/** POSTs a model call the way the protocol's clients do. */
export function call(
  url: string,
  protocol: MockProtocol,
  options: Parameters<typeof bodyFor>[1] & { signal?: AbortSignal } = {},
): Promise<Response> {
  return fetch(endpoint(url, protocol), {
    method: "POST",
    headers: headersFor(protocol),
    body: JSON.stringify(bodyFor(protocol, options)),
    signal: options.signal ?? null,
  });
}

/** A response's JSON body, loosely typed for assertions. */
export async function json(response: Response | Promise<Response>): Promise<any> {
  return (await response).json();
}

export interface ParsedEvent {
  event: string | undefined;
  data: string;
}

/**
 * Reads a whole SSE body with the parser skein's clients use; comments are collected apart.
 * `onProgress` sees what was read so far after each event or comment.
 */
export async function readSse(
  response: Response,
  onProgress?: (read: { events: ParsedEvent[]; comments: string[] }) => void,
): Promise<{ events: ParsedEvent[]; comments: string[]; error?: Error }> {
  const events: ParsedEvent[] = [];
  const comments: string[] = [];
  const parser = createParser({
    onEvent: (message) => {
      events.push({ event: message.event, data: message.data });
      onProgress?.({ events, comments });
    },
    onComment: (comment) => {
      comments.push(comment);
      onProgress?.({ events, comments });
    },
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(chunk, { stream: true }));
    }
    return { events, comments };
  } catch (error) {
    return { events, comments, error: error as Error };
  }
}

/** The JSON payloads of a stream's events (`[DONE]` kept as the string). */
export function payloads(events: readonly ParsedEvent[]): any[] {
  return events.map((event) => (event.data === "[DONE]" ? event.data : JSON.parse(event.data)));
}

/** A raw HTTP client that keeps the body's chunks as they arrived, undecoded. */
export function rawPost(
  url: string,
  protocol: MockProtocol,
  body: Record<string, unknown>,
): Promise<{ status: number; headers: Record<string, unknown>; chunks: Buffer[] }> {
  return new Promise((resolve, reject) => {
    const target = new URL(endpoint(url, protocol));
    const request = httpRequest(
      target,
      { method: "POST", headers: headersFor(protocol), agent: false },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, chunks }),
        );
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(JSON.stringify(body));
  });
}

/** Resolves with what the next read gives, or "timeout" when nothing arrives within `ms`. */
export async function readWithin(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  ms: number,
): Promise<string | "timeout" | "done"> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), ms);
  });
  try {
    const result = await Promise.race([reader.read(), timeout]);
    if (result === "timeout") return result;
    return result.done ? "done" : new TextDecoder().decode(result.value);
  } finally {
    clearTimeout(timer);
  }
}
