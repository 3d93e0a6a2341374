/**
 * The HTTP benchmarks' workload, shared by skein and the plain fetch loop: one small tool and the
 * mock server's script. skein's side is skein-side.ts, the plain side plain-fetch.ts; both send
 * byte-identical request bodies (`checkSameRequests` verifies it), so the mock server does the
 * same work for each. Nothing here loads skein: the W3 child runs this file for the plain side,
 * whose memory must hold only what a plain loop loads.
 */
import type { MockTurn } from "skein/testing";

export type Protocol = "anthropic" | "openai" | "responses" | "gemini";
/** The protocols of W3's workload. */
export const PROTOCOLS: readonly Protocol[] = ["anthropic", "openai"];
/** The protocols of the HTTP benchmarks (4) and (5). */
export const HTTP_PROTOCOLS: readonly Protocol[] = ["anthropic", "openai", "responses", "gemini"];

export const MODEL = "mock-model";
export const API_KEY = "bench";
export const PROMPT = "What is the weather like in the cities I visit this month?";
export const FINAL_TEXT =
  "It is sunny and mild everywhere on your route, between 18 and 24 degrees, so pack light clothes and a thin jacket for the evenings.";

/**
 * The system prompt skein sends when its tools may run in parallel (skein's PARALLEL_CALLS_HINT),
 * written out as a plain loop's author would; `checkSameRequests` catches any drift.
 */
export const SYSTEM =
  "You may call several tools in one reply when the calls do not depend on each other; they can run at the same time. When a call needs the result of an earlier call, make it in a later reply, after you have seen that result.";

const CITIES = ["Paris", "Lisbon", "Oslo", "Vienna", "Dublin"];

/** A realistic small tool: a lookup that answers with a short string. */
export async function getWeather({ city }: { city: string }): Promise<string> {
  return `Sunny, 21 °C in ${city}.`;
}
export const TOOL = {
  name: "get_weather",
  description: "Get the current weather in a city.",
  inputSchema: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
  },
} as const;

/** `turns` turns of a few words of text and one tool call each, then a closing text turn. */
export function toolTurnsScript(turns: number): MockTurn[] {
  const script: MockTurn[] = [];
  for (let turn = 0; turn < turns; turn++) {
    const city = CITIES[turn % CITIES.length]!;
    script.push({
      text: `Let me look up the weather in ${city} first.`,
      toolCalls: [{ name: TOOL.name, input: { city } }],
    });
  }
  script.push({ text: FINAL_TEXT });
  return script;
}

/** The base URL each protocol's client is given: Anthropic's and Gemini's exclude `/v1`, OpenAI's (both APIs) includes it. */
export const baseURL = (url: string, protocol: Protocol) =>
  protocol === "openai" || protocol === "responses" ? `${url}/v1` : url;
