import type { Message, ToolResultBlock, Usage } from "../core/messages.ts";
import type { CustomEvent, ToolResult } from "../tools/types.ts";
import type { PermissionMode } from "./policy.ts";
import type { McpServerStatus } from "./tool-source.ts";

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
  /** The run's permission mode changed (`setPermissionMode`): effective from the next call decided. */
  | { type: "permission_mode"; mode: PermissionMode; previous: PermissionMode }
  /** A guardrail's check: `tripped` ends the whole tree (subtype `error_guardrail`). */
  | {
      type: "guardrail";
      name: string;
      phase: "input" | "output" | "toolInput" | "toolOutput";
      tripped: boolean;
      info?: unknown;
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
  /** The permission mode the run paused under, when not "default" (a top-level run's). */
  permissionMode?: PermissionMode;
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
  subtype:
    | "success"
    | "error_max_turns"
    | "error_during_execution"
    | "paused"
    /** A `userPromptSubmit` hook blocked the prompt: nothing was sent or logged. */
    | "error_blocked"
    /** `maxBudgetUsd`, `maxTotalTokens` or `maxToolCalls` was exceeded somewhere in the tree. */
    | "error_max_budget"
    /** A guardrail's tripwire ended the run. */
    | "error_guardrail";
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
