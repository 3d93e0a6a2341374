// skein/adapters: tools written for other SDKs, run by skein unchanged (design/mcp.md). Neither
// SDK is a dependency: their tools are read by shape.
export type { AiSdkTool, AiSdkToolExecutionOptions } from "./ai-sdk.ts";
export { fromAiSdkTools } from "./ai-sdk.ts";
export type { OpenAIAgentsTool, OpenAIAgentsToolCallDetails } from "./openai-agents.ts";
export { fromOpenAIAgentsTools } from "./openai-agents.ts";
export type { AdaptedToolOptions } from "./shape.ts";
