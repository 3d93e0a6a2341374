// Seeds 000 (zh) and 001 (en), "Tools" / "工具": "Define a tool" / "定义工具".
// Both pages show the same code; only the import lines differ from the seed.
// biome-ignore-all format: the seed's code is kept exactly as the page prints it.
import { createAgent, tool } from "skein";
import { z } from "zod/v4";

const calculator = tool(
  "calculator",
  "Evaluate a simple arithmetic expression",
  z.object({
    expr: z.string(),
  }),
  async input => {
    return { content: String(Function(`return ${input.expr}`)()) };
  },
);

const agent = createAgent({
  apiKey: process.env.DEEPSEEK_API_KEY,
  baseURL: "https://api.deepseek.com/anthropic",
  model: "deepseek-v4-flash",
  tools: [calculator],
});

export { agent, calculator };
