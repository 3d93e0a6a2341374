/**
 * Plays streams that real providers sent, as other projects recorded them (see
 * fixtures/README.md): each fixture line is one event's JSON, exactly as recorded. The SSE
 * framing around those lines (event names, line endings, comments, how the bytes are cut into
 * writes) is ours, and each test says which it uses.
 */
import { readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { type RawServer, rawServer } from "../support/servers.ts";

/** The recorded events of a fixture, one JSON text per line. */
export function fixture(name: string): string[] {
  const text = readFileSync(new URL(`./fixtures/${name}.chunks.txt`, import.meta.url), "utf8");
  return text.split("\n").filter((line) => line.trim() !== "");
}

/** A fixture that holds several Anthropic messages, split at each message_start. */
export function messagesIn(lines: string[]): string[][] {
  const messages: string[][] = [];
  for (const line of lines) {
    if (JSON.parse(line).type === "message_start") messages.push([]);
    messages.at(-1)!.push(line);
  }
  return messages;
}

/** The recorded events of one content block (by its index), parsed. */
export function eventsOf(lines: string[], index: number): any[] {
  return lines.map((line) => JSON.parse(line)).filter((event) => event.index === index);
}

export interface Framing {
  /** End lines with CRLF, as some proxies do. */
  crlf?: boolean;
  /** An SSE comment between events, as OpenRouter sends to keep a connection alive. */
  comment?: string;
}

/** Anthropic framing: each event named after its `type`, as the API sends them. */
export function anthropicSse(lines: string[], framing: Framing = {}): string {
  const end = framing.crlf ? "\r\n" : "\n";
  return lines
    .map((line) => {
      const event = `event: ${JSON.parse(line).type}${end}data: ${line}${end}${end}`;
      return framing.comment ? `: ${framing.comment}${end}${end}${event}` : event;
    })
    .join("");
}

/** OpenAI framing: `data:` lines, then `data: [DONE]` unless `done` is false. */
export function openaiSse(lines: string[], framing: Framing & { done?: boolean } = {}): string {
  const end = framing.crlf ? "\r\n" : "\n";
  const events = [...lines, ...(framing.done === false ? [] : ["[DONE]"])];
  return events
    .map((line) => {
      const event = `data: ${line}${end}${end}`;
      return framing.comment ? `: ${framing.comment}${end}${end}${event}` : event;
    })
    .join("");
}

/**
 * A server that answers the request for turn N (N assistant messages in it) with `answers[N]`,
 * written in writes of `pieceBytes` (a tick apart, so each is its own chunk: events, lines and
 * multi-byte characters are cut wherever the byte count falls), or whole.
 */
export function serveTurns(answers: string[], pieceBytes?: number): Promise<RawServer> {
  return rawServer((request, response) => {
    const turn = request.body.messages.filter(
      (message: { role: string }) => message.role === "assistant",
    ).length;
    const answer = answers[turn];
    if (answer === undefined) {
      response.writeHead(500, { "content-type": "text/plain", "x-should-retry": "false" });
      response.end(`no answer recorded for turn ${turn}`);
      return;
    }
    void writeInPieces(response, answer, pieceBytes);
  });
}

async function writeInPieces(
  response: ServerResponse,
  text: string,
  pieceBytes?: number,
): Promise<void> {
  response.writeHead(200, { "content-type": "text/event-stream" });
  const bytes = Buffer.from(text);
  const size = pieceBytes ?? bytes.length;
  for (let start = 0; start < bytes.length; start += size) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve));
    if (response.destroyed) return;
    response.write(bytes.subarray(start, start + size));
  }
  response.end();
}
