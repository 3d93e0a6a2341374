import { anthropic, createBareAgent, google, openai } from "../index.ts";
import { type MockTurn, mockServer } from "../testing/index.ts";
import { getWeather, planTrip } from "./demo-tools.ts";
import type { ProviderName } from "./provider.ts";
import { createRenderer } from "./render.ts";
import { runAgent } from "./run-agent.ts";
import type { Terminal } from "./terminal.ts";

export const DEMO_PROMPT = "Where should I go for three days: Lisbon, Oslo, Kyoto or Atlantis?";
const DEMO_MODEL = "skein-demo";

const CLIENT_NAMES: Record<ProviderName, string> = {
  anthropic: "Anthropic",
  openai: "OpenAI",
  google: "Gemini",
};

/**
 * What the model says, turn by turn, played by skein's mock server. The server picks the turn
 * from the number of assistant messages in the request, as a stateless model would.
 */
const DEMO_SCRIPT: MockTurn[] = [
  {
    text: "I'll check the weather in all four cities at once.",
    toolCalls: ["Lisbon", "Oslo", "Kyoto", "Atlantis"].map((city) => ({
      name: "get_weather",
      input: { city },
    })),
    usage: { inputTokens: 412, outputTokens: 96 },
  },
  {
    text: "Lisbon is the warmest (Atlantis has no station). Planning three days there.",
    // "3" as a string, as models sometimes send it: the schema wants an integer, so it is coerced.
    toolCalls: [{ name: "plan_trip", input: { city: "Lisbon", days: "3" } }],
    usage: { inputTokens: 243, outputTokens: 71, cacheReadInputTokens: 412 },
  },
  {
    text: "Go to Lisbon: sunny and 24 °C. Day 1, the old town on foot; day 2, a museum and the riverside; day 3, a day trip out of town.",
    usage: { inputTokens: 93, outputTokens: 58, cacheReadInputTokens: 655 },
  },
].map((turn) => ({ ...turn, gapMs: 12 })); // a word every 12 ms, so the answer visibly streams

/**
 * `skein demo`: an example agent whose model is skein's mock server on 127.0.0.1, reached through
 * the real HTTP provider client. Always offline: it ignores keys and base URLs in the environment.
 */
export async function runDemo(options: {
  provider: ProviderName;
  json: boolean;
  terminal: Terminal;
}): Promise<number> {
  const { terminal } = options;
  const server = await mockServer({ script: DEMO_SCRIPT, models: [DEMO_MODEL] });
  try {
    const model =
      options.provider === "openai"
        ? openai({ baseURL: `${server.url}/v1`, apiKey: "demo", model: DEMO_MODEL })
        : options.provider === "google"
          ? google({ baseURL: server.url, apiKey: "demo", model: DEMO_MODEL })
          : anthropic({ baseURL: server.url, apiKey: "demo", model: DEMO_MODEL });
    const agent = createBareAgent({
      model,
      systemPrompt: "You help people pick a city for a short trip.",
      tools: [getWeather, planTrip],
      toolConcurrency: { mode: "safe", maxConcurrency: 4 },
    });
    const renderer = createRenderer({ json: options.json, terminal });
    const { bold, dim } = terminal.colors;
    renderer.notice(
      `${bold("skein demo (offline)")}: no API key, no network. skein's mock server at ${server.url} plays the model,\n` +
        `reached through the real ${CLIENT_NAMES[options.provider]} HTTP client. The tools are real code: four weather\n` +
        `lookups overlap and one fails, a planner reports progress, and the "3" the model sends as a string\n` +
        `reaches the planner as the number 3.\n`,
    );
    renderer.notice(dim(`> ${DEMO_PROMPT}`));
    return await runAgent({
      agent,
      prompt: DEMO_PROMPT,
      logged: false,
      renderer,
      terminal,
      failure: { provider: options.provider, modelId: DEMO_MODEL },
    });
  } finally {
    await server.close();
  }
}
