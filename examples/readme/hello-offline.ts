import { anthropic, createBareAgent, tool } from "skein";
import { mockServer } from "skein/testing";
import { z } from "zod";

const weather = tool(
  "get_weather",
  "Get the weather for a city",
  z.object({ city: z.string() }),
  async ({ city }) => `It's sunny in ${city}.`,
);

// A local server on 127.0.0.1 plays the model: first it calls the tool, then it answers.
const server = await mockServer({
  script: [
    { toolCalls: [{ name: "get_weather", input: { city: "Tokyo" } }] },
    { text: "It's sunny in Tokyo today." },
  ],
});
const agent = createBareAgent({
  model: anthropic({ baseURL: server.url, apiKey: "offline" }),
  tools: [weather],
});
const result = await agent.run("What's the weather in Tokyo?");
console.log(result.result);
await server.close();
