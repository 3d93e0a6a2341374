import { createBareAgent, openai, tool } from "skein";
import { z } from "zod";

const weather = tool(
  "get_weather",
  "Get the current weather in a city",
  z.object({ city: z.string() }),
  async ({ city }) => `Sunny, 21 °C in ${city}.`,
  { isConcurrencySafe: () => true },
);

// A reasoning model on OpenAI's Responses API (the default for OpenAI's own host: `api` only
// says so). Its reasoning items go back with its calls on every turn, encrypted, as they came.
const agent = createBareAgent({
  model: openai({ model: "gpt-5-mini", api: "responses" }), // OPENAI_API_KEY
  tools: [weather],
  modelSettings: { reasoning: { effort: "medium", summary: "auto" } },
});

const result = await agent.run("Paris or Oslo this weekend? Check one city, then the other.");
for (const step of result.steps)
  console.log(`turn: ${step.toolCalls.map((call) => call.name).join(", ") || "answer"}`);
console.log(result.result);

// Reasoning tokens are output tokens; costUsd is undefined for a model with no known price.
const { outputTokens, reasoningTokens = 0, costUsd } = result.usage;
console.log(`${outputTokens} output tokens (${reasoningTokens} reasoning)`);
console.log(costUsd === undefined ? "cost unknown" : `cost $${costUsd.toFixed(6)}`);
