/**
 * createAgent, tool and the rest of skein's core.
 * @module skein
 */
export type { Agent, AgentDefinition, AgentRun } from "./agents/agent.ts";
export type { AgentToolOptions, DelegateInput, DelegateToolOptions } from "./agents/agent-tool.ts";
export { agentTool, delegateTool } from "./agents/agent-tool.ts";
export { createAgent, createBareAgent, defineAgent } from "./agents/assemble.ts";
export type { FileAgentDefinition } from "./agents/file-agent.ts";
export { type LoadAgentsOptions, loadAgents } from "./agents/load-agents.ts";
export type { Mailbox, MailboxMessage, MailboxPost } from "./agents/mailbox.ts";
export { createMailbox } from "./agents/mailbox.ts";
export type { QueryOptions } from "./agents/query.ts";
export { query } from "./agents/query.ts";
export type { RunNextOptions } from "./agents/run-next.ts";
export { type CommandHookOptions, commandHook } from "./builtin/hook-command.ts";
export {
  AbortError,
  APIConnectionError,
  APIError,
  APITimeoutError,
  AuthenticationError,
  BadRequestError,
  ConfigurationError,
  ConflictError,
  ContentFilterError,
  ContextWindowError,
  HookError,
  InternalServerError,
  ModelError,
  NotFoundError,
  OutputValidationError,
  OverloadedError,
  PermissionDeniedError,
  ProtocolError,
  RateLimitError,
  ResumeError,
  RewindError,
  RunEndedError,
  ScriptExhaustedError,
  SessionConflictError,
  SessionError,
  SessionStoreError,
  SkeinError,
  ToolTimeoutError,
  UnprocessableEntityError,
} from "./core/errors.ts";
export type {
  ContentBlock,
  ImageBlock,
  Message,
  ProviderData,
  ReasoningBlock,
  TextBlock,
  ThinkingBlock,
  ToolResultBlock,
  ToolResultContentBlock,
  ToolUseBlock,
  Usage,
} from "./core/messages.ts";
export type { SessionInfo, SessionStore } from "./core/session-store.ts";
export type { AnthropicOptions } from "./model/anthropic.ts";
export { anthropic } from "./model/anthropic.ts";
export type { GoogleOptions } from "./model/google.ts";
export { google } from "./model/google.ts";
export type {
  IncompleteToolCall,
  Model,
  ModelRequest,
  ModelSettings,
  ModelStreamEvent,
  ModelToolSpec,
  StopReason,
} from "./model/model.ts";
export type { OpenAIOptions } from "./model/openai.ts";
export { openai } from "./model/openai.ts";
export type { ModelPrice, PriceTable } from "./model/pricing.ts";
export { MODEL_PRICES, PRICES_TAKEN } from "./model/pricing.ts";
export type {
  ReasoningEffort,
  ReasoningSettings,
  ReasoningSummary,
} from "./model/reasoning.ts";
export type {
  AgentHooks,
  AgentOptions,
  ConcurrencyMode,
  ContextOptions,
  HookEntry,
  HookPlaceContext,
  ModelCallChange,
  ModelCallContext,
  OutputOf,
  OutputSchema,
  PreCompactContext,
  ResumeOptions,
  RunOptions,
  SessionEndContext,
  SessionStartContext,
  SessionTarget,
  Steering,
  StopContext,
  SubagentContext,
  SubagentStopContext,
  ToolBatchDecision,
  ToolBatchPolicy,
  ToolHookContext,
  ToolResultHookContext,
  UserPromptSubmitContext,
} from "./run/agent-options.ts";
export type { Restrictions } from "./run/config.ts";
export { PARALLEL_CALLS_HINT } from "./run/config.ts";
export { PERMISSION_MODES, type PermissionMode } from "./run/policy.ts";
export { createSteering } from "./run/steering.ts";
export type { McpServerStatus } from "./run/tool-source.ts";
export type {
  AgentEvent,
  ErrorInfo,
  PendingToolCall,
  QueuedMessage,
  RunEvent,
  RunState,
  SDKResultMessage,
  Step,
  StepToolCall,
} from "./run/types.ts";
export type { Prompt } from "./run/user-content.ts";
export { forkSession, type LoadedSession, loadSession } from "./sessions/fork.ts";
export { memoryStore } from "./sessions/memory-store.ts";
export type { RewindResult } from "./sessions/rewind.ts";
export type { DefineToolOptions, Validator } from "./tools/define-tool.ts";
export { defineTool } from "./tools/define-tool.ts";
export type { JsonSchema, ValidationIssue } from "./tools/schema.ts";
export { tool } from "./tools/tool.ts";
export type {
  ApprovalHandler,
  BackgroundTasks,
  CustomEvent,
  ExecutionMode,
  InputHandler,
  PermissionResult,
  RunData,
  SandboxPolicy,
  TimeoutBehavior,
  ToolCall,
  ToolContext,
  ToolDefinition,
  ToolHandler,
  ToolHandlerReturn,
  ToolOptions,
  ToolResult,
  ToolSecurity,
} from "./tools/types.ts";
