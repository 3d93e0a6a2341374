/**
 * The HTTP benchmarks' workload, shared by skein and the plain fetch loop: one small tool, the
 * mock server's script, and skein's side of it. The plain side is plain-fetch.ts; both send
 * byte-identical request bodies (`checkSameRequests` there verifies it), so the mock server does
 * the same work for each.
 */
import type { Agent, SDKResultMessage } from "skein";
import type { MockTurn } from "skein/testing";
import { z } from "zod";
import { skein } from "./support.ts";

export type Protocol = "anthropic" | "openai";
export const PROTOCOLS: readonly Protocol[] = ["anthropic", "openai"];

export const MODEL = "mock-model";
export const API_KEY = "bench";
export const PROMPT = "What is the weather like in the cities I visit this month?";
export const FINAL_TEXT =
  "It is sunny and mild everywhere on your route, between 18 and 24 degrees, so pack light clothes and a thin jacket for the evenings.";

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

export const weatherTool = skein.tool(
  TOOL.name,
  TOOL.description,
  z.object({ city: z.string() }),
  getWeather,
  { isConcurrencySafe: () => true },
);

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

/** The base URL each protocol's client is given: Anthropic's excludes `/v1`, OpenAI's includes it. */
export const baseURL = (url: string, protocol: Protocol) =>
  protocol === "anthropic" ? url : `${url}/v1`;

/** One agent for all the runs of a measure, as a server would keep one. */
export function skeinAgent(url: string, protocol: Protocol): Agent {
  const options = { baseURL: baseURL(url, protocol), apiKey: API_KEY, model: MODEL };
  const model = protocol === "anthropic" ? skein.anthropic(options) : skein.openai(options);
  return skein.createBareAgent({ model, tools: [weatherTool], maxTurns: 1_000 });
}

export async function runSkein(agent: Agent): Promise<void> {
  checkResult(await agent.run(PROMPT));
}

function checkResult(result: SDKResultMessage): void {
  if (result.subtype !== "success" || result.result !== FINAL_TEXT)
    throw new Error(`bench: a skein run ended with ${JSON.stringify(result).slice(0, 300)}`);
}
