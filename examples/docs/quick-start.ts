import { createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { z } from "zod";

const weather = tool(
  "get_weather",
  "Get the weather for a city",
  z.object({ city: z.string() }),
  async ({ city }) => `It's sunny in ${city}.`, // city: string, from the schema
  { isConcurrencySafe: () => true },
);

// A scripted model plays the model's side: first a tool call, then the answer.
const model = scriptedModel([
  { toolCalls: [{ name: "get_weather", input: { city: "Tokyo" } }] },
  { text: "It is sunny in Tokyo." },
]);

const agent = createBareAgent({ model, tools: [weather] });

for await (const event of agent.stream("What's the weather in Tokyo?")) {
  if (event.type === "tool_end") console.log(event.name, "->", event.result.content);
  if (event.type === "result") console.log(event.subtype, event.result);
}
