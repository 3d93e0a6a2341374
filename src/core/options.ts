import { ConfigurationError } from "./errors.ts";

/**
 * Strict option checking, in one place (DESIGN decision 9). Every options object rejects unknown
 * keys at assembly time so that an old SDK with a new option fails fast instead of silently
 * ignoring it.
 */
export function assertKnownOptions(
  prefix: string,
  options: unknown,
  known: ReadonlySet<string>,
): void {
  if (options === undefined) return;
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new ConfigurationError(
      `${prefix}: options must be an object, received ${describeValue(options)}.`,
    );
  }
  for (const key of Object.keys(options)) {
    if (!known.has(key)) {
      throw new ConfigurationError(
        `${prefix}: unknown option "${key}". Check for a typo, or upgrade the SDK if this option was added in a newer version.`,
      );
    }
  }
}

export function assertPositiveInteger(prefix: string, name: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new ConfigurationError(
      `${prefix}: ${name} must be a positive integer, received ${describeValue(value)}.`,
    );
  }
}

export function assertFunction(prefix: string, name: string, value: unknown): void {
  if (value !== undefined && typeof value !== "function") {
    throw new ConfigurationError(
      `${prefix}: ${name} must be a function, received ${describeValue(value)}.`,
    );
  }
}

export function assertOneOf(
  prefix: string,
  name: string,
  value: unknown,
  allowed: readonly string[],
): void {
  if (value === undefined) return;
  if (typeof value !== "string" || !allowed.includes(value)) {
    throw new ConfigurationError(
      `${prefix}: ${name} must be one of ${allowed.map((a) => `"${a}"`).join(", ")}, received ${describeValue(value)}.`,
    );
  }
}

export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string")
    return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint")
    return String(value);
  return typeof value === "object" ? "an object" : typeof value;
}

export const AGENT_OPTION_KEYS: ReadonlySet<string> = new Set([
  "id",
  "model",
  "apiKey",
  "baseURL",
  "modelName",
  "pricing",
  "systemPrompt",
  "tools",
  "maxTurns",
  "maxDepth",
  "toolConcurrency",
  "toolExecution",
  "toolBatchPolicy",
  "hooks",
  "maxResultChars",
  "allowedTools",
  "disallowedTools",
  "cwd",
  "permissions",
  "approval",
  "preset",
  "approvalSecret",
  "sessionStore",
  "modelSettings",
  "context",
  "output",
  "outputRetries",
  "mcpServers",
  "tracer",
  "permissionMode",
  "maxStopContinuations",
  "maxBudgetUsd",
  "maxTotalTokens",
  "maxToolCalls",
  "guardrails",
  "skills",
]);

export const PERMISSION_KEYS: ReadonlySet<string> = new Set(["allow", "ask", "deny"]);

export const QUERY_OPTION_KEYS: ReadonlySet<string> = new Set([
  ...AGENT_OPTION_KEYS,
  "prompt",
  "signal",
  "sessionId",
  "steering",
]);

export const TOOL_OPTION_KEYS: ReadonlySet<string> = new Set([
  "isConcurrencySafe",
  "executionMode",
  "resourceKeys",
  "timeoutMs",
  "timeoutBehavior",
  "label",
  "prepareArguments",
  "metadata",
  "security",
  "maxResultChars",
  "ruleContent",
  "idempotent",
]);

export const DEFINE_TOOL_KEYS: ReadonlySet<string> = new Set([
  ...TOOL_OPTION_KEYS,
  "id",
  "description",
  "parameters",
  "validator",
  "outputSchema",
  "execute",
  "onToolCalled",
  "onResponseReceived",
]);

export const RUN_OPTION_KEYS: ReadonlySet<string> = new Set([
  "signal",
  "sessionId",
  "messages",
  "steering",
  "permissionMode",
  "maxBudgetUsd",
  "maxTotalTokens",
  "maxToolCalls",
]);
export const RESUME_OPTION_KEYS: ReadonlySet<string> = new Set([
  "signal",
  "toolOutputs",
  "approvals",
  "steering",
  "permissionMode",
]);
export const MODEL_SETTINGS_KEYS: ReadonlySet<string> = new Set([
  "temperature",
  "topP",
  "stopSequences",
  "toolChoice",
  "maxOutputTokens",
  "reasoning",
]);
export const CONTEXT_KEYS: ReadonlySet<string> = new Set([
  "window",
  "threshold",
  "target",
  "summarize",
]);
export const SUMMARIZE_KEYS: ReadonlySet<string> = new Set(["model", "instructions"]);
export const TOOL_CONCURRENCY_KEYS: ReadonlySet<string> = new Set(["mode", "maxConcurrency"]);
export const TOOL_EXECUTION_KEYS: ReadonlySet<string> = new Set(["toolConcurrency"]);
export const HOOK_KEYS: ReadonlySet<string> = new Set([
  "beforeModelCall",
  "beforeToolCall",
  "afterToolCall",
  "onToolResult",
  "userPromptSubmit",
  "sessionStart",
  "sessionEnd",
  "stop",
  "preCompact",
  "subagentStart",
  "subagentStop",
]);
export const SECURITY_KEYS: ReadonlySet<string> = new Set(["network", "filesystem", "sideEffects"]);
