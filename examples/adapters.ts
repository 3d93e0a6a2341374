// skein's own example: tools written for other SDKs, run unchanged. One tool was written with
// Vercel ai's tool() (its async generator's yields are progress, the last one the result), the
// other with OpenAI Agents JS's tool(); skein validates and coerces the model's input for both.
// It runs offline: a scripted model plays the model's side. Run it with `npx tsx examples/adapters.ts`.
import path from "node:path";
import { tool as agentsTool } from "@openai/agents-core"; // what `@openai/agents` exports as tool
import { tool as aiTool } from "ai";
import { createBareAgent } from "skein";
import { fromAiSdkTools, fromOpenAIAgentsTools } from "skein/adapters";
import { scriptedModel } from "skein/testing";
import { z } from "zod";

// Written for Vercel ai: a record, each key the tool's name.
const aiTools = {
  forecast: aiTool({
    description: "The forecast for a city, for the next few days",
    inputSchema: z.object({ city: z.string(), days: z.number().int().min(1).max(7) }),
    async *execute({ city, days }, { toolCallId }) {
      yield { status: `looking up ${city} (${toolCallId})` };
      yield { city, days, outlook: "sunny, then rain" };
    },
  }),
};

// Written for OpenAI Agents JS: an array of function tools.
const agentsTools = [
  agentsTool({
    name: "convert_temperature",
    description: "Converts degrees Celsius to Fahrenheit",
    parameters: z.object({ celsius: z.number() }),
    execute: async ({ celsius }) => `${celsius} °C is ${(celsius * 9) / 5 + 32} °F`,
  }),
];

export async function main(log: (line: string) => void = console.log): Promise<void> {
  const agent = createBareAgent({
    model: scriptedModel([
      {
        toolCalls: [
          // Models send numbers as strings at times: skein coerces "3" to 3 for both tools.
          { name: "forecast", input: { city: "Lisbon", days: "3" } },
          { name: "convert_temperature", input: { celsius: "21" } },
        ],
      },
      { text: "Lisbon: sunny, then rain; 21 °C is 69.8 °F." },
    ]),
    tools: [...fromAiSdkTools(aiTools), ...fromOpenAIAgentsTools(agentsTools)],
  });
  for await (const event of agent.stream("What is the weather in Lisbon, in Fahrenheit?")) {
    if (event.type === "tool_update") log(`${event.name} … ${JSON.stringify(event.update)}`);
    if (event.type === "tool_end") log(`${event.name} -> ${event.result.content}`);
    if (event.type === "result") log(`${event.subtype}: ${event.result}`);
  }
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();
