import { describeThrown, messageForModel, ToolTimeoutError } from "../core/errors.ts";
import {
  type CustomEvent,
  type RunData,
  SEARCH_FILTER,
  type ToolContext,
  type ToolRuntime,
} from "../tools/types.ts";
import {
  type CallEnvironment,
  type CallRecord,
  cancelledResult,
  describeKind,
  errorResult,
  isAborted,
  isObject,
  resultFromValue,
  toolCallOf,
} from "./call.ts";
import { interruptedResult } from "./deliver.ts";
import { afterHandler, beforeHandler, guarded } from "./guardrails.ts";
import type { RunJournal } from "./journal.ts";
import { toJsonValue } from "./json.ts";
import { type AgentRuntime, agentRuntimeOf, rootLink } from "./link.ts";
import type { AgentEvent, PendingToolCall, RunState } from "./types.ts";

const RESERVED_EVENT_TYPES = new Set([
  "run_start",
  "turn_start",
  "text_delta",
  "thinking_delta",
  "retry",
  "message",
  "tool_start",
  "tool_update",
  "tool_end",
  "turn_end",
  "hook_error",
  "result",
  "guardrail",
  "permission_mode",
]);

type Settled =
  | { kind: "value"; value: unknown }
  | { kind: "child"; state: RunState; pending: PendingToolCall[] }
  | { kind: "threw"; error: unknown }
  | { kind: "timeout" }
  | { kind: "pause" };

/** Runs one call's handler with its signal, timeout and progress. Never rejects. */
export async function executeCall(record: CallRecord, env: CallEnvironment): Promise<void> {
  // Answered while it waited (a held early call the final message listed as cut short).
  if (record.result) return;
  const runtime = record.runtime!;
  // A steering message is queued: a call whose handler (or child agent) has not started is not
  // run; a call that only waits for the app's output (`execute: false`) keeps waiting.
  const runsCode =
    runtime.execute !== undefined ||
    runtime.onCalled !== undefined ||
    agentRuntimeOf(record.tool) !== undefined;
  if (env.steering?.hasSteer && runsCode) {
    record.result = interruptedResult();
    record.finishedAt = performance.now();
    return;
  }
  const tool = record.tool!;
  // Budgets, guardrails and a tripped tree: a call that must not run never starts.
  if (runsCode && guarded(env) && !(await beforeHandler(record, env))) return;
  // Write-ahead: the handler runs only once the log says it started (design/sessions.md).
  // (A tool without a handler, `execute: false`, only pauses for the app: nothing starts.)
  if (env.journal && runsCode && !(await logStarted(record, env.journal))) return;
  record.reachedHandler = true;

  // Only a call with a timeout needs a signal of its own; otherwise the run's signal is enough.
  const controller = tool.timeoutMs !== undefined ? new AbortController() : undefined;
  const forwardAbort = controller && (() => controller.abort(env.signal.reason));
  if (forwardAbort) {
    if (env.signal.aborted) forwardAbort();
    else env.signal.addEventListener("abort", forwardAbort, { once: true });
  }
  let ended = false;
  // `signal` is added below (a timed call's own, else the batch's when read).
  const context = {
    callId: record.id,
    call: toolCallOf(record, env.config),
    sessionId: env.sessionId,
    emit: (event: CustomEvent) => {
      if (!isObject(event) || typeof event.type !== "string") {
        throw new TypeError(
          `ctx.emit needs an event object with a string "type", received ${describeKind(event)}.`,
        );
      }
      if (RESERVED_EVENT_TYPES.has(event.type) || event.type.startsWith("skein.")) {
        throw new TypeError(
          `ctx.emit: "${event.type}" is one of skein's own event types; use a namespaced type such as "app.${event.type}".`,
        );
      }
      if (!ended) env.emit(event as AgentEvent);
    },
    update: (partial: unknown) => {
      // After the call ended, progress would arrive after its tool_end: dropped by contract.
      if (ended) return;
      record.preliminaryResults.push(partial);
      env.emit({ type: "tool_update", callId: record.id, name: record.name, update: partial });
    },
    runData: runDataOf(env.runData),
    recordSnapshot: ({ path, content }) => {
      // Apps undo file changes from these events; a session logs them, and the write waits for that.
      if (ended) return;
      env.emit({ type: "skein.snapshot", callId: record.id, path, content });
      return env.journal?.snapshot(record.id, path, content);
    },
  } as ToolContext;
  if (controller) context.signal = controller.signal;
  else lazySignal(context, env);
  if (env.config.approval) context.approval = env.config.approval;
  // A child agent's searches also leave out what its ancestors' rules hide.
  const layer = env.config.permissions;
  if (env.link && env.link.depth > 0 && layer?.hiddenFromSearch)
    Object.defineProperty(context, SEARCH_FILTER, {
      value: (relative: string, tool: string) => layer.hiddenFromSearch!(relative, tool),
    });
  const background = env.background ?? env.config.background;
  if (background) context.background = background;
  if (env.sandbox) context.sandbox = env.sandbox;

  let timer: NodeJS.Timeout | undefined;
  let settled: Settled;
  try {
    const agent = agentRuntimeOf(tool);
    const work = agent
      ? invokeAgent(record, agent, env, context.signal)
      : invoke(record, runtime, context);
    if (controller) {
      const timeoutMs = tool.timeoutMs!;
      const timeout = new Promise<Settled>((resolve) => {
        timer = setTimeout(() => {
          controller.abort(new ToolTimeoutError(record.name, timeoutMs));
          resolve({ kind: "timeout" });
        }, timeoutMs);
      });
      settled = await Promise.race([work, timeout]);
    } else {
      settled = await work;
    }
  } finally {
    ended = true;
    if (timer) clearTimeout(timer);
    record.finishedAt = performance.now();
    if (forwardAbort) env.signal.removeEventListener("abort", forwardAbort);
  }
  await settle(record, runtime, settled, env);
  if (env.config.guardrails || env.link?.guardrails) await afterHandler(record, env);
  // A failed write stops the journal; the run ends failed once the batch has settled.
  if (env.journal && record.result)
    await env.journal.result(record, record.result, env.runData).catch(() => {});
}

/**
 * `context.signal` read when the handler reads it: a batch makes its signal (an AbortSignal costs
 * several microseconds in Node) only for a handler that takes it. One accessor for every context
 * (a getter in the literal, or one made per call, would make each context the slow way), reading
 * the call's environment from a hidden property; assigning `signal` stores the value.
 */
function lazySignal(context: ToolContext, env: CallEnvironment): void {
  Object.defineProperty(context, SIGNAL_SOURCE, { value: env });
  Object.defineProperty(context, "signal", LAZY_SIGNAL);
}

const SIGNAL_SOURCE = Symbol("skein.signalSource");

const LAZY_SIGNAL: PropertyDescriptor = {
  get(this: { [SIGNAL_SOURCE]: CallEnvironment }) {
    return this[SIGNAL_SOURCE].signal;
  },
  set(this: object, value: unknown) {
    Object.defineProperty(this, "signal", {
      value,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  },
  enumerable: true,
  configurable: true,
};

async function logStarted(record: CallRecord, journal: RunJournal): Promise<boolean> {
  try {
    await journal.started(record);
    return true;
  } catch (error) {
    record.result = errorResult(
      `Tool "${record.name}" was not run: the session log could not record that it started (${messageForModel(error)}).`,
      "not_logged",
    );
    record.finishedAt = performance.now();
    return false;
  }
}

const runDataViews = new WeakMap<Map<string, unknown>, RunData>();

/**
 * `ToolContext.runData` over the run's map, one view per run; values are copied as JSON so the
 * paused state holds what was stored.
 */
function runDataOf(store: Map<string, unknown>): RunData {
  let view = runDataViews.get(store);
  if (!view) {
    view = {
      get: (key) => store.get(key),
      set: (key, value) => {
        if (value === undefined) store.delete(key);
        else store.set(key, toJsonValue(value));
      },
    };
    runDataViews.set(store, view);
  }
  return view;
}

/** Runs an agent tool's child (or resumes it) on the call's signal. */
async function invokeAgent(
  record: CallRecord,
  agent: AgentRuntime,
  env: CallEnvironment,
  signal: AbortSignal,
): Promise<Settled> {
  try {
    // Outside a run (no link), the call is a top-level run's with the agent's whole budget.
    const link = env.link ?? rootLink(env.config, () => env.config.maxTurns);
    return await agent.invoke(record, { env, link }, signal, record.resumeChild);
  } catch (error) {
    return { kind: "threw", error };
  }
}

/** Calls onToolCalled and the handler; drains an async generator into progress updates. */
async function invoke(
  record: CallRecord,
  runtime: ToolRuntime,
  context: ToolContext,
): Promise<Settled> {
  try {
    if (runtime.onCalled) {
      const answer = await runtime.onCalled(record.input, context);
      if (answer === null) return { kind: "pause" };
      if (answer !== undefined) return { kind: "value", value: answer };
    }
    if (!runtime.execute) return { kind: "pause" };
    const returned = runtime.execute(record.input, context);
    if (isAsyncIterator(returned)) {
      while (true) {
        if (context.signal.aborted) {
          // Stop the generator at its next yield; its late value would be dropped anyway.
          returned.return(undefined).catch(() => {});
          throw context.signal.reason;
        }
        const step = await returned.next();
        if (step.done) return { kind: "value", value: step.value };
        context.update(step.value);
      }
    }
    return { kind: "value", value: await returned };
  } catch (error) {
    return { kind: "threw", error };
  }
}

async function settle(
  record: CallRecord,
  runtime: ToolRuntime,
  settled: Settled,
  env: CallEnvironment,
): Promise<void> {
  switch (settled.kind) {
    case "pause":
      record.pending = "external";
      return;
    case "child":
      record.pending = "child";
      record.child = { state: settled.state, pending: settled.pending };
      return;
    case "timeout": {
      const timeoutMs = record.tool!.timeoutMs!;
      if (runtime.timeoutBehavior === "fail_run")
        record.failRun = new ToolTimeoutError(record.name, timeoutMs);
      record.result = errorResult(
        `Tool "${record.name}" timed out after ${timeoutMs} ms and was stopped. Try a smaller request, or another approach.`,
        "timeout",
        { timeoutMs },
      );
      return;
    }
    case "threw":
      record.result = isAborted(env)
        ? cancelledResult(record, "while it was running")
        : errorResult(`Tool "${record.name}" failed: ${messageForModel(settled.error)}`, "threw", {
            error: describeThrown(settled.error),
          });
      return;
    case "value":
      record.result = await resultFromValue(record, runtime, settled.value);
  }
}

function isAsyncIterator(value: unknown): value is AsyncGenerator<unknown, unknown, undefined> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { next?: unknown }).next === "function" &&
    typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === "function"
  );
}
