import { messageForModel, type ToolTimeoutError } from "../core/errors.ts";
import { assertSerialisable, InvalidToolResultError } from "../tools/result.ts";
import type {
  BackgroundTasks,
  SandboxPolicy,
  ToolCall,
  ToolDefinition,
  ToolResult,
  ToolRuntime,
} from "../tools/types.ts";
import type { EngineConfig } from "./config.ts";
import type { RunJournal } from "./journal.ts";
import { agentRuntimeOf, type ChildResume, type RunLink } from "./link.ts";
import type { Schedulable } from "./schedule.ts";
import type { AgentEvent, PendingToolCall, RunState } from "./types.ts";

/*
 * A call's life is a record mutated by three phases, each in its own file: prepare-call.ts
 * (in call order), execute-call.ts (concurrently), finalize-call.ts (in call order). Any phase
 * may give the call its result early; later phases then only report it, so a call that never ran
 * still gets its tool_start, tool_end and exactly one tool_result.
 */

/** Why a call ended in an error result, for apps (`details.reason`); the model reads the text. */
export type FailureReason =
  | "not_found"
  | "invalid_input"
  | "blocked"
  | "denied"
  | "rejected"
  | "threw"
  | "timeout"
  | "aborted"
  | "invalid_result"
  | "duplicate_id"
  | "incomplete"
  | "no_output"
  /** Interrupted while its handler ran (a crash), and not idempotent: it may or may not have happened. */
  | "outcome_unknown"
  /** Not run: the session log could not record that it started. */
  | "not_logged"
  /** Not run: a steering message arrived before its handler started. */
  | "interrupted";

/** One tool call as it moves through the batch. Mutated in place by the three phases. */
export interface CallRecord extends Schedulable {
  id: string;
  name: string;
  /** The input as the model sent it. */
  rawInput: unknown;
  /** The validated input the handler gets (after prepareArguments, coercion and hooks). */
  input: unknown;
  tool?: ToolDefinition;
  runtime?: ToolRuntime;
  /** Set once the call has its final result (before finalize). */
  result?: ToolResult;
  /** The handler (or onToolCalled) was invoked. */
  reachedHandler: boolean;
  /**
   * Why the call waits, so the run pauses: for the app's output ("external"), for approval
   * ("approval"), or behind an earlier call that waits for approval ("held").
   */
  pending?: "external" | "approval" | "held" | "child";
  /** Why the rules asked for approval (for the approval handler and the paused result). */
  approvalReason?: string;
  /** Arrived early and needs the approval handler: asked once the reply is complete. */
  askLater?: boolean;
  /** Arrived early behind a call that needs approval: scheduled once that is decided. */
  waitsForApproval?: boolean;
  preliminaryResults: unknown[];
  startedAt: number;
  /** When the call got its result (its handler settled, or it was answered without one). */
  finishedAt?: number;
  /** A `fail_run` timeout: the run ends as failed after the batch. */
  failRun?: ToolTimeoutError;
  /** An `afterToolCall` hook asked to stop the run after this batch. */
  stop?: boolean;
  /** An agent tool call whose child run paused: its state and the calls waiting in it. */
  child?: { state: RunState; pending: PendingToolCall[] };
  /** On resume: the paused child this call continues. */
  resumeChild?: ChildResume;
  /** The input the tool input guardrails passed (before approval); checked again if it changed. */
  guardedInput?: { input: unknown };
}

/** What the call phases need from the run. */
export interface CallEnvironment {
  config: EngineConfig;
  sessionId: string;
  signal: AbortSignal;
  /** Whether `signal` is aborted, for an environment whose signal is made only when taken (a batch's). */
  isAborted?: () => boolean;
  emit: (event: AgentEvent) => void;
  /** The run's `ToolContext.runData`, carried in a paused state. */
  runData: Map<string, unknown>;
  /** The sandbox policy in force (hardened preset), read once per run. */
  sandbox?: SandboxPolicy;
  /** The run's view of the agent's background tasks; else the agent's registry (`config.background`). */
  background?: BackgroundTasks;
  /** The session's write-ahead log, when the agent has a session store. */
  journal?: RunJournal;
  /** Where the run stands among agent tool runs (depth, usage of child runs). */
  link?: RunLink;
  /** The tool names the current request offered (a call to another is `not_found`); default all visible. */
  offered?: ReadonlySet<string>;
  /** A steering message is queued: calls whose handler has not started are not run. */
  steering?: { readonly hasSteer: boolean };
}

/** Whether the environment's signal is aborted, without making a batch's signal for it. */
export function isAborted(env: CallEnvironment): boolean {
  return env.isAborted ? env.isAborted() : env.signal.aborted;
}

export function newCallRecord(id: string, name: string, rawInput: unknown): CallRecord {
  return {
    id,
    name,
    rawInput,
    input: rawInput,
    exclusive: true,
    keys: [],
    reachedHandler: false,
    preliminaryResults: [],
    startedAt: 0,
  };
}

export function errorResult(
  message: string,
  reason: FailureReason,
  extra?: Record<string, unknown>,
): ToolResult {
  return { content: message, isError: true, details: { reason, ...extra } };
}

/** The call as the batch policy and `ToolContext.call` see it; agent tools' calls are `"agent_tool"`. */
export function toolCallOf(record: CallRecord, config: EngineConfig): ToolCall {
  const tool =
    record.tool ?? (config.visible.has(record.name) ? config.tools.get(record.name) : undefined);
  const kind = agentRuntimeOf(tool) ? "agent_tool" : "tool";
  return { id: record.id, name: record.name, input: record.rawInput, kind };
}

/** Normalises a returned (or app-provided) value; a value skein cannot send becomes an error result. */
export async function resultFromValue(
  record: CallRecord,
  runtime: ToolRuntime,
  value: unknown,
): Promise<ToolResult> {
  try {
    const converted = runtime.toResult(value);
    const result = isThenable(converted) ? await converted : converted;
    assertSerialisable(result);
    return result;
  } catch (error) {
    const reason = error instanceof InvalidToolResultError ? error.message : messageForModel(error);
    return errorResult(
      `Tool "${record.name}" returned a result skein cannot use: ${reason}`,
      "invalid_result",
    );
  }
}

export function cancelledResult(
  record: CallRecord,
  when: "before it started" | "while it was running",
): ToolResult {
  return errorResult(
    `Tool "${record.name}" was cancelled ${when}: the run was aborted.`,
    "aborted",
  );
}

export function hookContext(record: CallRecord, env: CallEnvironment) {
  return {
    callId: record.id,
    name: record.name,
    input: record.input,
    sessionId: env.sessionId,
    signal: env.signal,
  };
}

/** A promise or any other thenable (what `await` would wait for). */
export function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return isObject(value) && !Array.isArray(value);
}

export function describeKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string")
    return `the string ${JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value)}`;
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}
