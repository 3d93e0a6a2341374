import type { ToolResultContentBlock } from "../core/messages.ts";
import type { JsonSchema, ValidationOutcome } from "./schema.ts";

/** What a tool returns: text or content blocks for the model, plus what only the app sees. */
export interface ToolResult {
  content: string | ToolResultContentBlock[];
  isError?: boolean;
  /** Structured data for logs and UIs, on `tool_end`; never sent to the model. */
  details?: unknown;
  /** End the run after this batch with `subtype: "success"`. */
  endTurn?: boolean;
  /** Stop after this batch, but only if every result of the batch sets it. */
  terminate?: boolean;
  /**
   * Carried to `SDKResultMessage.structuredResult` when `endTurn` is set. With `output`, the
   * run's answer when this result ends the run (`endTurn`, `terminate`, a hook's stop), if the
   * schema accepts it; otherwise the model is asked again.
   */
  structuredResult?: unknown;
}

export type ToolSecurity = {
  network: "none" | "loopback" | "private" | "unrestricted";
  filesystem?: "none" | "workspace" | "unrestricted";
  sideEffects?: "none" | "workspace" | "external";
};

/** A tool call as the batch policy and `ToolContext.call` see it. */
export interface ToolCall {
  id: string;
  name: string;
  input: unknown;
  kind: "tool" | "agent_tool";
}

/** A permission decision, in the Claude Agent SDK's shape. */
export type PermissionResult =
  | boolean
  | { behavior: "allow"; updatedInput?: unknown }
  | { behavior: "deny"; message: string };

export type ApprovalHandler = (
  name: string,
  input: unknown,
  options: {
    signal: AbortSignal;
    callId: string;
    sessionId: string;
    reason?: string;
    /** For a call of a child run (an agent tool's): the agent tool call that started that run. */
    parentCallId?: string;
  },
) => PermissionResult | Promise<PermissionResult>;

/** Asks the user something on a tool's behalf (filled by the CLI and apps; undefined otherwise). */
export type InputHandler = (question: string, options: { signal: AbortSignal }) => Promise<string>;

export interface SandboxPolicy {
  kind: string;
  available: boolean;
  network: string;
  filesystem: string;
  writable: string[];
}

/** Background task registry (filled by the built-in tools issue). */
export interface BackgroundTasks {
  start(task: {
    id?: string;
    description?: string;
    run(signal: AbortSignal): Promise<unknown>;
  }): string;
  get(
    id: string,
  ):
    | { id: string; status: "running" | "done" | "failed" | "stopped"; output?: unknown }
    | undefined;
  stop(id: string): boolean;
}

/** A custom event a tool sends with `ctx.emit`. Namespaced (`"app.progress"`), so it can never shadow a built-in event. */
export interface CustomEvent {
  type: `${string}.${string}` | `${string}:${string}`;
  [key: string]: unknown;
}

/** Per-call services the engine hands a handler. */
export interface ToolContext {
  callId: string;
  call: ToolCall;
  sessionId: string;
  /** Aborted when the run is aborted or the tool's timeout fires; `signal.reason` tells which. */
  signal: AbortSignal;
  /** Sends a custom event to the run's stream. */
  emit(event: CustomEvent): void;
  /** Reports progress: a `tool_update` event and a preliminary result. Ignored once the call ended. */
  update(partial: unknown): void;
  approval?: ApprovalHandler;
  input?: InputHandler;
  sandbox?: SandboxPolicy;
  background?: BackgroundTasks;
  recordSnapshot?: (snapshot: { path: string; content: string | null }) => void | Promise<void>;
  /**
   * JSON values a tool keeps for the rest of the run, shared by the run's calls and carried in a
   * paused state (Read records what it read here, so Edit can refuse a stale file after resume).
   * Keys are namespaced by convention (`"skein.read:src/a.ts"`).
   */
  runData: RunData;
}

/** A run's key/value store of JSON values (`ToolContext.runData`). */
export interface RunData {
  get(key: string): unknown;
  /** Stores a JSON value; `undefined` removes the key. */
  set(key: string, value: unknown): void;
}

/** What a `tool()` handler may return (or an async generator that yields progress and returns this). */
export type ToolHandlerReturn = string | ToolResultContentBlock[] | ToolResult;

type MaybePromise<T> = T | Promise<T>;

export type ToolHandler<TInput> = (
  input: TInput,
  context: ToolContext,
) => MaybePromise<ToolHandlerReturn> | AsyncGenerator<unknown, ToolHandlerReturn, undefined>;

export type ExecutionMode = "parallel" | "sequential";
export type TimeoutBehavior = "error_result" | "fail_run";

/** Options both front doors (`tool()` and `defineTool()`) share. */
export interface ToolOptions<TInput = unknown> {
  /** True when this call may overlap others in mode "safe". Throwing or false: it runs alone. */
  isConcurrencySafe?: ((input: TInput) => boolean) | undefined;
  /** "sequential" makes any batch this tool is in run one call at a time. */
  executionMode?: ExecutionMode | undefined;
  /** Calls that share a key never overlap, in any mode (say, the file path). */
  resourceKeys?: ((input: TInput) => readonly string[]) | undefined;
  timeoutMs?: number | undefined;
  timeoutBehavior?: TimeoutBehavior | undefined;
  /** UI label; never sent to the model. */
  label?: string | undefined;
  /** Rewrites the raw arguments before validation. */
  prepareArguments?: ((raw: Record<string, unknown>) => Record<string, unknown>) | undefined;
  /** Host-owned annotation, passed through to the definition; never read, never sent to the model. */
  metadata?: Record<string, unknown> | undefined;
  security?: ToolSecurity | undefined;
  /** Cap on the text of one result sent to the model (default: the agent's, 100,000). */
  maxResultChars?: number | undefined;
  /** The string permission rule patterns match against (permissions issue). */
  ruleContent?: ((input: TInput) => string) | undefined;
  /**
   * True when running the call again with the same input leaves the same outcome. A session run
   * interrupted while such a call ran runs it again; any other tool's interrupted call is answered
   * "outcome unknown" instead. Default false.
   */
  idempotent?: boolean | undefined;
}

export const toolRuntime: unique symbol = Symbol.for("skein.toolRuntime");

/**
 * Set by the engine on a child agent's ToolContext (internal): paths the rules of the agents above
 * it hide from LS, Glob and Grep, as `(workspaceRelativePath, toolName) => boolean`.
 */
export const SEARCH_FILTER: unique symbol = Symbol("skein.searchFilter");

/** The engine's view of a tool; one shape whichever front door built it. */
export interface ToolRuntime {
  validate(input: unknown): ValidationOutcome | Promise<ValidationOutcome>;
  /** Runs the tool; undefined for `execute: false`. */
  execute?: (input: unknown, context: ToolContext) => unknown;
  /** Turns what `execute`, `onToolCalled` or the app returned into a ToolResult (throws to report a bad value). */
  toResult(value: unknown): ToolResult | Promise<ToolResult>;
  /** `onToolCalled`: null pauses; undefined continues; anything else is the output. */
  onCalled?: (input: unknown, context: ToolContext) => unknown;
  /** Validates or transforms the app's response on resume. */
  onResponse?: (response: unknown, input: unknown) => unknown;
  isConcurrencySafe?: (input: unknown) => boolean;
  resourceKeys?: (input: unknown) => readonly string[];
  prepareArguments?: (raw: Record<string, unknown>) => Record<string, unknown>;
  timeoutBehavior: TimeoutBehavior;
  /**
   * The tool's own say on approval (ai's and OpenAI Agents' `needsApproval`, read by the
   * adapters): true sends the call to approval as an ask rule would (deny rules still come
   * first); false leaves it to the rules. Checked after `beforeToolCall`, with the final input.
   */
  needsApproval?: (input: unknown, context: { callId: string; signal: AbortSignal }) => unknown;
}

/** What `tool()` and `defineTool()` return. */
export interface ToolDefinition<TInput = any> {
  name: string;
  description: string;
  /** The JSON Schema sent to the model, produced once. */
  inputSchema: JsonSchema;
  label?: string;
  metadata?: Record<string, unknown>;
  security?: ToolSecurity;
  executionMode: ExecutionMode;
  timeoutMs?: number;
  maxResultChars?: number;
  ruleContent?: (input: TInput) => string;
  /** Present (true) only when the tool declared it. */
  idempotent?: boolean;
  readonly [toolRuntime]: ToolRuntime;
}
