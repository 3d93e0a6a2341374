import { anthropic, createAgent, openai } from "skein";

// A model name: the protocol comes from the name, the key from the environment.
export const claude = createAgent({ model: "claude-sonnet-4-6" }); // ANTHROPIC_API_KEY
export const gpt = createAgent({ model: "gpt-5-mini" }); // OPENAI_API_KEY

// Any other server: apiKey and baseURL go beside the name. A bare name speaks the Anthropic
// protocol (as DeepSeek's Anthropic endpoint expects); `openai:` chooses Chat Completions.
export const deepseek = createAgent({
  model: "deepseek-v4-flash",
  apiKey: process.env.DEEPSEEK_API_KEY,
  baseURL: "https://api.deepseek.com/anthropic",
});
export const ollama = createAgent({
  model: "openai:qwen3:8b",
  baseURL: "http://localhost:11434/v1",
});

// Or a provider object, which takes the provider options below.
export const thinker = createAgent({
  model: anthropic({
    model: "claude-sonnet-4-6",
    maxTokens: 16_000,
    thinking: { type: "enabled", budget_tokens: 8_000 },
  }),
});
export const vllm = createAgent({
  model: openai({ baseURL: "http://localhost:8000/v1", model: "Qwen/Qwen3-8B" }),
});
