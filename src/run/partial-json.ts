// What a tool call's arguments parse to so far (`tool_input_delta.partialInput`), by partial-json.

import { Allow, parse } from "partial-json";

/** The best-effort parse of JSON text cut anywhere; undefined while nothing parses. */
export function parsePartial(text: string): unknown {
  if (text.trim() === "") return undefined;
  try {
    return parse(text, Allow.ALL);
  } catch {
    return undefined;
  }
}
