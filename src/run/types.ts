import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { Message, ToolResultBlock, Usage } from "../core/messages.ts";
import type { SessionStore } from "../core/session-store.ts";
import type { Model, ModelSettings } from "../model/model.ts";
import type { JsonSchema } from "../tools/schema.ts";
import type {
  ApprovalHandler,
  CustomEvent,
  PermissionResult,
  ToolCall,
  ToolDefinition,
  ToolResult,
} from "../tools/types.ts";
import type { McpServerStatus, ToolSource } from "./tool-source.ts";
import type { Prompt } from "./user-content.ts";

// ---------------------------------------------------------------- batch policy

export type ToolBatchDecision =
  | { allowed: true }
  | {
      allowed: false;
      code?: string;
      message: string;
      conflictingToolCallIds?: string[];
      suggestedNextStep?: string;
    };

/** Sees every call of a model response before any handler runs (seeds 000/001). */
export interface ToolBatchPolicy {
  validate(batch: { toolCalls: ToolCall[] }): ToolBatchDecision | Promise<ToolBatchDecision>;
}

// ---------------------------------------------------------------- hooks

/** What `beforeModelCall` sees before each model call. */
export interface ModelCallContext {
  /** Equals the `turn_start` event's `turn`. */
  turn: number;
  /** The full transcript, in a new array: return replacements, do not mutate its messages. */
  messages: Message[];
  /** Names of the tools sent by default. */
  tools: string[];
  model: Model;
  modelSettings: ModelSettings;
  /** The run's usage so far. */
  usage: Usage;
  sessionId: string;
  signal: AbortSignal;
}

/** What `beforeModelCall` may change, for this call only. */
export interface ModelCallChange {
  messages?: Message[];
  /** A subset of `context.tools`. */
  tools?: string[];
  model?: Model;
  /** Merged over the agent's, key by key. */
  modelSettings?: ModelSettings;
}

export interface ToolHookContext {
  callId: string;
  name: string;
  input: unknown;
  sessionId: string;
  signal: AbortSignal;
}

export interface ToolResultHookContext extends ToolHookContext {
  result: ToolResult;
  isError: boolean;
}

/**
 * Hooks decide; events observe. Each hook is awaited, in call order, never concurrently
 * (DESIGN decision 5). A throwing `beforeToolCall`/`afterToolCall` becomes that call's error
 * result; a throwing `onToolResult` leaves the result alone and emits `hook_error`.
 */
export interface AgentHooks {
  /**
   * Awaited before every model call (after `turn_start`, resumed runs included): may replace the
   * messages sent for this call only, narrow the tools, or swap the model or its settings.
   */
  beforeModelCall?: (
    context: ModelCallContext,
  ) => void | ModelCallChange | Promise<void | ModelCallChange>;
  /**
   * Return `{ block: true, reason }` to stop the call, `{ input }` to replace its input (validated
   * again), or `{ ask: reason }` to send it to approval as an ask rule would.
   */
  beforeToolCall?: (
    context: ToolHookContext,
  ) =>
    | void
    | { block: true; reason?: string }
    | { input: unknown }
    | { ask: string }
    | Promise<void | { block: true; reason?: string } | { input: unknown } | { ask: string }>;
  /** Return `{ result }` to replace the result, or `{ stop: true }` to end the run after this batch. */
  afterToolCall?: (
    context: ToolResultHookContext,
  ) =>
    | void
    | { result: ToolResult | string }
    | { stop: true }
    | Promise<void | { result: ToolResult | string } | { stop: true }>;
  /** Observes each final result, in call order. */
  onToolResult?: (context: ToolResultHookContext) => void | Promise<void>;
}

// ---------------------------------------------------------------- events

export interface ErrorInfo {
  name: string;
  message: string;
  status?: number;
  /** The provider's request id, when it gave one. */
  requestId?: string;
  /** HTTP attempts made (1 + retries), for errors from a provider. */
  attempts?: number;
}

/** The events of a run's own stream; `AgentEvent` adds `parentCallId` to those from child runs. */
export type RunEvent =
  | {
      type: "run_start";
      sessionId: string;
      resumed: boolean;
      /** With a session store: the checkpoint just before this run's prompt (`rewindFiles`). */
      checkpointId?: string;
    }
  | { type: "turn_start"; turn: number }
  | { type: "text_delta"; text: string }
  | { type: "thinking_delta"; thinking: string }
  | { type: "retry"; attempt: number; delayMs: number; error: ErrorInfo }
  | { type: "message"; message: Message }
  | { type: "tool_start"; callId: string; name: string; input: unknown; label?: string }
  | { type: "tool_update"; callId: string; name: string; update: unknown }
  | {
      type: "tool_end";
      callId: string;
      name: string;
      /** The full result, before any cap on what the model is sent. */
      result: ToolResult;
      isError: boolean;
      details: unknown;
      durationMs: number;
    }
  | { type: "turn_end"; turn: number; message: Message; toolResults: ToolResultBlock[] }
  | { type: "hook_error"; hook: "onToolResult"; callId: string; name: string; error: ErrorInfo }
  /** A fragment of a tool call's arguments as the model writes them; `partialInput` parses what came so far. */
  | { type: "tool_input_delta"; callId: string; name: string; delta: string; partialInput: unknown }
  /** A steering message or follow-up entered the transcript (after `turn`'s `turn_end`). */
  | { type: "user_message"; origin: "steer" | "follow_up"; message: Message; turn: number }
  /** Old tool results (or the early conversation) left out of this request to fit the context window. */
  | {
      type: "compaction";
      turn: number;
      removed: { callId: string; name: string; chars: number }[];
      summarized: boolean;
      estimateBefore: number;
      estimateAfter: number;
    }
  /** An MCP server could not be reached or listed: its tools are missing from this run. */
  | { type: "mcp_server_error"; server: string; error: { name: string; message: string } }
  | CustomEvent;

/**
 * What `stream()` yields. Events of a child run (an agent tool's call) come inside that call,
 * tagged `parentCallId` (the call that started the run they come from), so a UI can draw the
 * tree; the parent's own events never carry it. The `result` event is always the run's own.
 */
export type AgentEvent<TOutput = unknown> = FromChild<RunEvent> | SDKResultMessage<TOutput>;

/** Each member of a union, with the optional tag of a child run's events. */
type FromChild<Event> = Event extends unknown ? Event & { parentCallId?: string } : never;

// ---------------------------------------------------------------- results

export interface StepToolCall {
  callId: string;
  name: string;
  input: unknown;
  result: ToolResult;
  isError: boolean;
  preliminaryResults: unknown[];
}

export interface Step {
  message: Message;
  toolCalls: StepToolCall[];
  /** Steering messages and follow-ups delivered after this step's turn, in delivery order. */
  userMessages?: QueuedMessage[];
  usage?: Partial<Usage>;
  stopReason?: string;
}

export interface PendingToolCall {
  id: string;
  name: string;
  input: unknown;
  reason: "external" | "approval";
  /** Why the rules asked for approval (reason "approval"). */
  approvalReason?: string;
  /** For a call waiting inside a child run: the agent tool call that started that run. */
  parentCallId?: string;
}

/** A steering message or follow-up, as delivered or queued. */
export interface QueuedMessage {
  origin: "steer" | "follow_up";
  message: Message;
}

/** A paused (or stopped-at-maxTurns) run, as plain JSON: survives `JSON.stringify`/`parse`. */
export interface RunState {
  version: 1;
  sessionId: string;
  numTurns: number;
  usage: Usage;
  /** `usage` plus the usage of every child run started from this run. */
  totalUsage?: Usage;
  messages: Message[];
  steps: Step[];
  /** The batch that was interrupted by a pause; absent when the transcript ends cleanly. */
  batch?: PausedBatch;
  /** `ToolContext.runData` of the run (what Read recorded, for Edit after resume). */
  runData?: Record<string, unknown>;
  /** Seals `runData` like the waiting calls; data that does not match is dropped on resume. */
  runDataSeal?: string;
  /** Steering messages and follow-ups accepted but not delivered yet: the resumed run delivers them. */
  queued?: QueuedMessage[];
  /** Invalid `output` answers so far (counts against `outputRetries`). */
  outputAttempts?: number;
}

export interface PausedBatch {
  /** The assistant message holding the tool_use blocks (the last message of `messages`). */
  calls: PausedCall[];
}

export type PausedCall =
  | {
      id: string;
      name: string;
      input: unknown;
      status: "done";
      result: ToolResult;
      isError: boolean;
      /** The tool_result block already given to the model (capped). */
      block: ToolResultBlock;
      preliminaryResults: unknown[];
      /** An afterToolCall hook asked to stop after this batch. */
      stop?: boolean;
      /** A fail_run timeout: the run fails once the batch completes. */
      failRunTimeoutMs?: number;
    }
  | {
      id: string;
      name: string;
      input: unknown;
      status: "pending";
      /** "held": behind a call waiting for approval; it runs on resume without approval of its own. */
      reason: "external" | "approval" | "held";
      /** Why approval was asked (reason "approval"). */
      approvalReason?: string;
      /** Binds an approval or held call to its id, name and input (see `approvalSecret`). */
      seal?: string;
    }
  | {
      id: string;
      name: string;
      input: unknown;
      status: "pending";
      /** An agent tool call whose child run paused: it resumes inside that run. */
      reason: "child";
      /** The child run's paused state (its own waiting calls, and deeper children's, inside). */
      state: RunState;
      seal?: string;
    };

export interface SDKResultMessage<TOutput = unknown> {
  type: "result";
  subtype: "success" | "error_max_turns" | "error_during_execution" | "paused";
  result: string;
  /** With `output`: the validated answer (the schema's output type). */
  structuredResult?: TOutput;
  isError: boolean;
  numTurns: number;
  sessionId: string;
  /**
   * With a session store: the checkpoint just before this run's prompt (a resumed run carries the
   * id of the run it continues); `agent.rewindFiles(sessionId, checkpointId)` and `forkSession` take it.
   */
  checkpointId?: string;
  /** This run's own model usage. */
  usage: Usage;
  /** `usage` plus the `totalUsage` of every child run started from this run (agent tools), at any depth. */
  totalUsage: Usage;
  durationMs: number;
  messages: Message[];
  steps: Step[];
  /** Calls waiting for the app or for approval (paused runs). */
  pending?: PendingToolCall[];
  /** JSON state for `agent.resume` (paused runs, and runs stopped at `maxTurns`). */
  state?: RunState;
  error?: ErrorInfo;
  /** Follow-ups and steering messages a failed run never delivered. */
  undelivered?: QueuedMessage[];
  /** With `mcpServers`: each server, in the order given, as this run left it (`McpServerStatus`). */
  mcpServers?: McpServerStatus[];
}

// ---------------------------------------------------------------- options

export type ConcurrencyMode = "safe" | "all" | "sequential";

/** What `output` takes: a Zod object schema or any Standard Schema with JSON Schema, or a JSON Schema object. */
export type OutputSchema = StandardSchemaV1 | JsonSchema;

/** The type `output` gives `structuredResult`. */
export type OutputOf<S> = S extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<S> : unknown;

/** Context management (design/interactive.md): `false` turns it off. */
export interface ContextOptions {
  /** The model's context window in tokens; default by model id (`claude-*` 200,000, ...). */
  window?: number | undefined;
  /** Compact when the next request's estimate passes this fraction of the window; default 0.8. */
  threshold?: number | undefined;
  /** Remove old results until the estimate is at most this fraction; default 0.5. */
  target?: number | undefined;
  /** Replace the early conversation by a summary (one model call) when removing results is not enough. */
  summarize?: boolean | { model?: Model; instructions?: string } | undefined;
}

export interface AgentOptions<S extends OutputSchema | undefined = OutputSchema | undefined> {
  /** A name for the agent (seed 003). */
  id?: string | undefined;
  /**
   * A `Model` (a provider, or `scriptedModel`), or a model name with `apiKey`/`baseURL`: `claude-*`
   * speaks the Anthropic protocol, `gpt-*`/`o1*`/`o3*`/`o4*` OpenAI's, and `anthropic:<id>` /
   * `openai:<id>` choose for any other id; a bare name of no known family is Anthropic.
   */
  model?: Model | string | undefined;
  apiKey?: string | undefined;
  baseURL?: string | undefined;
  /** Overrides the model id the provider sends. */
  modelName?: string | undefined;
  systemPrompt?: string | undefined;
  tools?: ToolDefinition[] | undefined;
  /** Model calls per run; default 100. */
  maxTurns?: number | undefined;
  /**
   * How deep agent tools may nest runs under this one (a top-level run has depth 0); default 3.
   * The least along the chain applies: a child can only lower it.
   */
  maxDepth?: number | undefined;
  toolConcurrency?: { mode?: ConcurrencyMode; maxConcurrency?: number } | undefined;
  /** Seed 003's form: `{ toolConcurrency: n }` means `{ mode: "all", maxConcurrency: n }`. */
  toolExecution?: { toolConcurrency?: number } | undefined;
  toolBatchPolicy?: ToolBatchPolicy | undefined;
  hooks?: AgentHooks | undefined;
  /** Cap on the text of one tool result sent to the model; default 100,000 characters. */
  maxResultChars?: number | undefined;
  /** Tool names (`*` wildcards) the model may see; others are hidden. Grants nothing. */
  allowedTools?: string[] | undefined;
  /** Tool names (`*` wildcards) hidden from the model; a `Tool(pattern)` entry is a deny rule. */
  disallowedTools?: string[] | undefined;
  /** The workspace root the built-in tools are confined to; default `process.cwd()`. */
  cwd?: string | undefined;
  /** Permission rules such as `Bash(npm run test:*)`, `Read(src/**)`: deny beats ask beats allow. */
  permissions?: { allow?: string[]; ask?: string[]; deny?: string[] } | undefined;
  /** Decides calls the rules send to "ask"; without one, such a call pauses the run for approval. */
  approval?: ApprovalHandler | undefined;
  /** `"hardened"`: custom tools must declare `security` with network "none" or "loopback", and Bash runs sandboxed. */
  preset?: "hardened" | undefined;
  /**
   * The key that seals approval-pending calls in a paused state, so a state altered before resume
   * is refused: a random string of at least 16 characters, the same in every process that resumes
   * the agent's runs. Default: `$SKEIN_APPROVAL_SECRET`. `"per-process"`: a random key that lives
   * and dies with the process. An agent with a `sessionStore` (other than `memoryStore()`) needs
   * one or the other, since its paused runs are meant to be resumed after a restart.
   */
  approvalSecret?: "per-process" | (string & {}) | undefined;
  /** Sampling and tool-use settings for every model call (a `beforeModelCall` hook may change them per call). */
  modelSettings?: ModelSettings | undefined;
  /** Context management; on by default. */
  context?: false | ContextOptions | undefined;
  /** The run's final answer, validated: `result.structuredResult` is typed from this schema. */
  output?: S | undefined;
  /** Invalid answers the model may correct before the run fails; default 2. */
  outputRetries?: number | undefined;
  /**
   * MCP servers by name (`mcpServer()` handles from `skein/mcp`): their tools join the agent as
   * `mcp__<name>__<tool>`, connected at the first run that needs them; `agent.close()` ends them.
   */
  mcpServers?: Record<string, ToolSource> | undefined;
  /** An OpenTelemetry `Tracer`: runs, model calls and tool calls become spans (GenAI conventions). */
  tracer?: unknown | undefined;
  /**
   * Where runs are logged (design/sessions.md): `run(prompt, { sessionId })` continues the stored
   * conversation, and `agent.resume({ sessionId })` continues a paused or crashed run from the
   * store alone. `memoryStore()`, `sqliteStore()` from `skein/sqlite`, `postgresStore()` from
   * `skein/postgres`, or your own.
   */
  sessionStore?: SessionStore | undefined;
}

export interface RunOptions {
  signal?: AbortSignal | undefined;
  /** With a session store: the session to continue (a new one with this id if it has no entry). */
  sessionId?: string | undefined;
  /**
   * The conversation so far (a previous result's `messages`), for apps that keep their own
   * history; the new prompt follows it. Not with a session store: one source of history.
   */
  messages?: Message[] | undefined;
  /** Where `steer()` and `followUp()` messages come from (`createSteering()`); one run each. */
  steering?: Steering | undefined;
}

/** Messages for a running agent (`createSteering()`, or the handle `agent.stream()` returns). */
export interface Steering {
  /** Delivered at the next call boundary; calls of the batch not yet started are not run. */
  steer(message: Prompt): void;
  /** Runs when the current prompt would end, in the same run. */
  followUp(message: Prompt): void;
}

/** What `agent.resume` continues from the store alone: the session's unfinished run. */
export interface SessionTarget {
  sessionId: string;
}

export interface ResumeOptions {
  signal?: AbortSignal | undefined;
  /**
   * Call id -> what the app's tool returned (the shapes a handler may return). A call waiting
   * inside a child run is named by its own id (or `"<parentCallId>/<id>"`, as `pending` lists it
   * when two calls of the tree share an id).
   */
  toolOutputs?: Record<string, unknown> | undefined;
  /** Messages for the resumed run (a new `Steering`: one serves one run). */
  steering?: Steering | undefined;
  /** Call id (as for `toolOutputs`) -> approval: `true`, `false`, `{ behavior: "allow", updatedInput? }` or `{ behavior: "deny", message }`. */
  approvals?: Record<string, PermissionResult> | undefined;
}
