/**
 * Tools written for other SDKs (Vercel ai, OpenAI Agents JS), run by skein unchanged. Neither SDK
 * is a dependency: their tools are read by shape.
 * @module skein/adapters
 */
export type { AiSdkTool, AiSdkToolExecutionOptions } from "./ai-sdk.ts";
export { fromAiSdkTools } from "./ai-sdk.ts";
export type { OpenAIAgentsTool, OpenAIAgentsToolCallDetails } from "./openai-agents.ts";
export { fromOpenAIAgentsTools } from "./openai-agents.ts";
export type { AdaptedToolOptions } from "./shape.ts";
