/**
 * skein's side of the HTTP workload, from a loaded skein module: in the bench process that is
 * dist/ (support.ts), in a W3 child the same dist/ loaded by that child, so that the child's
 * memory holds skein only on skein's side.
 */
import type { Agent, SDKResultMessage } from "skein";
import {
  API_KEY,
  baseURL,
  FINAL_TEXT,
  getWeather,
  MODEL,
  PROMPT,
  type Protocol,
  TOOL,
} from "./http-workload.ts";
import { weatherInput } from "./weather-schema.ts";

export interface SkeinSide {
  /** One agent for all the runs of a measure, as a server would keep one. */
  agent(url: string, protocol: Protocol): Agent;
  /** One run of the workload's prompt; throws unless it ends with the script's final text. */
  run(agent: Agent): Promise<void>;
}

export function skeinSide(skein: typeof import("skein")): SkeinSide {
  const weatherTool = skein.tool(TOOL.name, TOOL.description, weatherInput, getWeather, {
    isConcurrencySafe: () => true,
  });
  return {
    agent(url, protocol) {
      const options = { baseURL: baseURL(url, protocol), apiKey: API_KEY, model: MODEL };
      const model =
        protocol === "anthropic"
          ? skein.anthropic(options)
          : protocol === "gemini"
            ? skein.google(options)
            : protocol === "responses"
              ? skein.openai({ ...options, api: "responses" })
              : skein.openai({ ...options, api: "chat" });
      return skein.createBareAgent({ model, tools: [weatherTool], maxTurns: 1_000 });
    },
    async run(agent) {
      checkResult(await agent.run(PROMPT));
    },
  };
}

function checkResult(result: SDKResultMessage): void {
  if (result.subtype !== "success" || result.result !== FINAL_TEXT)
    throw new Error(`bench: a skein run ended with ${JSON.stringify(result).slice(0, 300)}`);
}
