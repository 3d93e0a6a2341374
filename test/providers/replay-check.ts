/**
 * What a reasoning model gave and what came back, read from the bytes a recording proxy saw: for
 * OpenAI Responses the reasoning items (with their encrypted content), for Gemini the thought
 * signatures on their parts. `expectReplayed` checks every model request against every reply the
 * server finished before it: each earlier turn is in the request, in its place, its reasoning
 * item or signature byte for byte (the JSON text the server sent is in the request's text).
 */
import { expect } from "vitest";
import type { Exchange } from "../support/recording-proxy.ts";

export interface ReplayWire {
  name: "openai-responses" | "gemini";
  /** The model calls among the exchanges. */
  isModelCall(exchange: Exchange): boolean;
  /** The turn a request asks for: how many earlier replies its transcript holds. */
  turnOf(body: any): number;
  /** A reply that finished (its stream reached the protocol's end). */
  finished(exchange: Exchange): boolean;
  /** The request's earlier turns, one entry per reply, as the request carries them. */
  turnsIn(body: any): unknown[];
  /** How a finished reply must come back in a later request, and the texts that must be in it verbatim. */
  expected(exchange: Exchange): { turn: unknown; verbatim: string[] };
  /** The opaque reasoning data of a reply (item JSON, signatures), to count and to look for. */
  opaque(exchange: Exchange): string[];
}

/** `data:` payloads of an SSE body, parsed, with their `event:` names. */
export function sseEvents(text: string): { event?: string; data: any }[] {
  const events: { event?: string; data: any }[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
    }
    if (data.length === 0 || data[0] === "[DONE]") continue;
    try {
      events.push({ ...(event ? { event } : {}), data: JSON.parse(data.join("\n")) });
    } catch {
      // A block cut by a kill: not a finished reply anyway.
    }
  }
  return events;
}

const isModelItem = (item: any) =>
  item?.type === "reasoning" ||
  item?.type === "function_call" ||
  (item?.role === "assistant" && (item.type === undefined || item.type === "message"));

function responsesItems(exchange: Exchange): any[] {
  const items: any[] = [];
  for (const { data } of sseEvents(exchange.response))
    if (data?.type === "response.output_item.done") items[data.output_index] = data.item;
  return items.filter(Boolean);
}

export const RESPONSES_REPLAY: ReplayWire = {
  name: "openai-responses",
  isModelCall: (exchange) => exchange.path.startsWith("/v1/responses"),
  turnOf: (body) => RESPONSES_REPLAY.turnsIn(body).length,
  finished: (exchange) =>
    sseEvents(exchange.response).some(({ data }) => data?.type === "response.completed"),
  turnsIn(body) {
    const turns: unknown[][] = [];
    let inReply = false;
    for (const item of body.input as any[]) {
      const own = isModelItem(item);
      if (own && !inReply) turns.push([]);
      if (own) turns.at(-1)!.push(item);
      inReply = own;
    }
    return turns;
  },
  expected(exchange) {
    const verbatim: string[] = [];
    const turn = responsesItems(exchange).map((item) => {
      if (item.type === "reasoning") {
        verbatim.push(JSON.stringify(item));
        return item;
      }
      if (item.type === "message")
        return {
          role: "assistant",
          content: item.content.map((part: any) => ({ type: "output_text", text: part.text })),
        };
      return {
        type: "function_call",
        id: item.id,
        call_id: item.call_id,
        name: item.name,
        arguments: item.arguments,
      };
    });
    return { turn, verbatim };
  },
  opaque: (exchange) =>
    responsesItems(exchange)
      .filter((item) => item.type === "reasoning")
      .map((item) => JSON.stringify(item)),
};

function geminiParts(exchange: Exchange): any[] {
  return sseEvents(exchange.response).flatMap(
    ({ data }) => data?.candidates?.[0]?.content?.parts ?? [],
  );
}

/** A model turn's parts as the test compares them: calls whole, and every signature where it sits. */
function geminiShape(parts: any[]): unknown[] {
  return parts.flatMap((part): unknown[] => {
    if (part.functionCall)
      return [
        { call: part.functionCall.name, args: part.functionCall.args, sig: part.thoughtSignature },
      ];
    if (part.thoughtSignature !== undefined)
      return [{ text: part.thought === true ? "thought" : "text", sig: part.thoughtSignature }];
    return [];
  });
}

export const GEMINI_REPLAY: ReplayWire = {
  name: "gemini",
  isModelCall: (exchange) => exchange.path.includes(":streamGenerateContent"),
  turnOf: (body) => GEMINI_REPLAY.turnsIn(body).length,
  finished: (exchange) =>
    sseEvents(exchange.response).some(({ data }) =>
      data?.candidates?.some((candidate: any) => candidate.finishReason),
    ) && exchange.ended,
  turnsIn: (body) =>
    (body.contents as any[])
      .filter((content) => content.role === "model")
      .map((content) => geminiShape(content.parts)),
  expected(exchange) {
    const parts = geminiParts(exchange);
    const verbatim = parts
      .filter((part) => part.thoughtSignature !== undefined)
      .map((part) => `"thoughtSignature":${JSON.stringify(part.thoughtSignature)}`);
    return { turn: geminiShape(parts), verbatim };
  },
  opaque: (exchange) =>
    geminiParts(exchange)
      .filter((part) => part.thoughtSignature !== undefined)
      .map((part) => part.thoughtSignature as string),
};

/**
 * Every model request carries each earlier turn as the server gave it (the reply the server
 * finished last for that turn before the request), in order, in its place, byte for byte.
 * Returns, per request, how many opaque pieces (reasoning items, signatures) it carried back.
 */
export function expectReplayed(wire: ReplayWire, exchanges: readonly Exchange[]): number[] {
  const calls = exchanges.filter((exchange) => wire.isModelCall(exchange));
  const carried: number[] = [];
  calls.forEach((call, index) => {
    const body = JSON.parse(call.request);
    const turns = wire.turnsIn(body);
    let count = 0;
    turns.forEach((turn, position) => {
      const source = calls
        .slice(0, index)
        .filter((earlier) => wire.finished(earlier))
        .findLast((earlier) => wire.turnOf(JSON.parse(earlier.request)) === position);
      expect(
        source,
        `request ${index}: no reply the server gave for turn ${position}`,
      ).toBeDefined();
      const expected = wire.expected(source!);
      expect(turn, `request ${index}, turn ${position}`).toEqual(expected.turn);
      for (const text of expected.verbatim) {
        expect(call.request, `request ${index}, turn ${position}: sent verbatim`).toContain(text);
        count++;
      }
    });
    carried.push(count);
  });
  return carried;
}

/** Every opaque piece (reasoning item, signature) the server gave in a finished reply. */
export function opaqueGiven(wire: ReplayWire, exchanges: readonly Exchange[]): string[] {
  return exchanges
    .filter((exchange) => wire.isModelCall(exchange) && wire.finished(exchange))
    .flatMap((exchange) => wire.opaque(exchange));
}
