// Seed 002 (zh), "自定义工具" (custom tools): "定义工具" (define a tool).
// biome-ignore-all assist/source/organizeImports: the seed imports query/tool and anthropic on two lines.
import { query, tool } from "skein";
import { anthropic } from "skein";
import { z } from "zod";

const weather = tool(
  "get_weather",
  "Get the weather for a city",
  z.object({ city: z.string() }),
  async ({ city }) => `It's sunny in ${city}.`,
);

for await (const ev of query({
  prompt: "What's the weather in Tokyo?",
  model: anthropic({ apiKey: process.env.ANTHROPIC_API_KEY }),
  modelName: "claude-sonnet-4-6",
  tools: [weather],
  allowedTools: ["get_weather", "read_file"],
})) {
  if (ev.type === "text_delta") process.stdout.write(ev.text);
}

export { weather };
