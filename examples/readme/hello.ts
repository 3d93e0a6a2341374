import { createBareAgent, tool } from "skein";
import { z } from "zod";

const weather = tool(
  "get_weather",
  "Get the weather for a city",
  z.object({ city: z.string() }),
  async ({ city }) => `It's sunny in ${city}.`,
);

const agent = createBareAgent({ model: "claude-sonnet-4-6", tools: [weather] });
const result = await agent.run("What's the weather in Tokyo?");
console.log(result.result);
