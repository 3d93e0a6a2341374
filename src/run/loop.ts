import { AbortError, describeThrown } from "../core/errors.ts";
import {
  addUsage,
  type Message,
  type ToolResultBlock,
  textOf,
  type Usage,
} from "../core/messages.ts";
import type { Model } from "../model/model.ts";
import { priced } from "../model/pricing.ts";
import { batchAnswer, finalReply } from "./answer.ts";
import { Batch, type BatchOutcome } from "./batch.ts";
import type { CallEnvironment, CallRecord } from "./call.ts";
import { claimEarly, claimToolCalls } from "./claim-calls.ts";
import type { EngineConfig } from "./config.ts";
import { type ContextMemory, rememberRequest } from "./context.ts";
import { deliverQueued } from "./deliver.ts";
import { endRun, finish, throwIfAborted } from "./finish.ts";
import {
  beforeEnd,
  inputGuardrails,
  sessionEnd,
  sessionStart,
  spendTurn,
  stopHooks,
  userPromptSubmit,
} from "./lifecycle.ts";
import type { RunLink } from "./link.ts";
import { prepareModelCall } from "./model-call.ts";
import { callModel, endTurn, resolveModel, startTurn } from "./model-turn.ts";
import { pausedState, totalUsageOf } from "./paused-state.ts";
import { fillToolOutputs, type RestoredRun } from "./state.ts";
import type { SteeringQueue } from "./steering.ts";
import { configWithSources, type SourceTools } from "./tool-source.ts";
import { type RunTrace, traceRun } from "./trace.ts";
import { pendingOf } from "./tree.ts";
import type { AgentEvent, ErrorInfo, SDKResultMessage, Step, StepToolCall } from "./types.ts";

/** Everything one run carries from turn to turn. */
export interface RunContext extends CallEnvironment {
  messages: Message[];
  steps: Step[];
  usage: Usage;
  numTurns: number;
  /** Every tool_use id in the transcript, to catch a model that repeats one. */
  seenIds: Set<string>;
  startedAt: number;
  /** Between a turn_start and its turn_end. */
  turnOpen?: boolean;
  /** The session checkpoint this run's prompt opened (with a session store). */
  checkpointId?: string;
  link: RunLink;
  /** Steering messages and follow-ups for this run (`steer()`, `followUp()`). */
  steering?: SteeringQueue;
  /** What context management remembers between this run's requests. */
  contextMemory?: ContextMemory;
  /** Invalid `output` answers so far. */
  outputAttempts: number;
  /** The run's trace, when the agent has a tracer. */
  trace?: RunTrace;
  /** The tools this run fetched from the agent's sources (MCP servers), and the config without them. */
  sources?: SourceTools & { base: EngineConfig };
  /** How many times `stop` hooks kept this run going. */
  stopContinuations?: number;
}

/**
 * Where a run recovered from its session log starts (design/sessions.md, "Recovery"): the
 * interrupted batch (calls whose result was logged carry it and are never run again), or the
 * final reply a crash left without its end. Otherwise the model is called with the transcript.
 */
export type Recovery =
  | { records: CallRecord[] }
  | { finalReply: Message }
  | { failed: ErrorInfo }
  | { callModel: true };

/** How a turn (or a resumed batch) ended: the loop is a switch on this. */
export type TurnOutcome =
  | { kind: "continue" }
  | { kind: "final"; result: string; structuredResult?: unknown }
  | { kind: "paused"; records: CallRecord[]; blocks: (ToolResultBlock | undefined)[] }
  | { kind: "max_turns" }
  | { kind: "failed"; error: ErrorInfo };

/**
 * The agent loop: ask the model, run the tools it asked for, repeat until an outcome ends the run.
 * Resolves with the result message; rejects only with `AbortError`.
 */
export function runLoop(
  run: RunContext,
  restored?: RestoredRun,
  recovery?: Recovery,
): Promise<SDKResultMessage> {
  // Chained rather than awaited: no frame of its own is kept alive while the run goes on.
  return loop(run, restored, recovery).then(
    (result) => endRun(run, result),
    (error: unknown) => loopFailed(run, error),
  );
}

async function loopFailed(run: RunContext, error: unknown): Promise<SDKResultMessage> {
  endTurn(run);
  const tripped = run.link.tree?.tripped;
  if (error instanceof AbortError && tripped) {
    run.steering?.end(tripped.subtype);
    return endRun(run, finish(run, tripped.subtype, { error: tripped.error }));
  }
  if (error instanceof AbortError) {
    run.steering?.end("aborted");
    run.trace?.end({ aborted: true, usage: totalUsageOf(run) });
    await sessionEnd(run, undefined).catch(() => {});
    // The cancelled results go with the end entry; a log that failed already stays as it is.
    await run.journal?.ended({ subtype: "aborted" }).catch(() => {});
    throw error;
  }
  // A defect of skein's own (or a failed log write) must still end the run with a result.
  return endRun(run, finish(run, "error_during_execution", { error: describeThrown(error) }));
}

async function loop(
  run: RunContext,
  restored?: RestoredRun,
  recovery?: Recovery,
): Promise<SDKResultMessage> {
  const start: AgentEvent = {
    type: "run_start",
    sessionId: run.sessionId,
    resumed: restored !== undefined || recovery !== undefined,
  };
  if (run.checkpointId !== undefined) start.checkpointId = run.checkpointId;
  run.emit(start);
  if (run.config.sandbox) run.sandbox = await run.config.sandbox();
  const model = resolveModel(run.config);
  if (run.config.tracing && "stream" in model) await traceRun(run, model, run.config.tracing);
  const fresh = !restored && !recovery;
  const starting = sessionStart(
    run,
    fresh ? (run.messages.length > 1 ? "continue" : "new") : "resume",
  );
  const startFailed = starting && (await starting);
  if (startFailed) return finish(run, "error_during_execution", { error: startFailed });
  if (fresh) {
    const verdict = await userPromptSubmit(run);
    if (verdict && "error" in verdict)
      return finish(run, "error_during_execution", { error: verdict.error });
    if (verdict)
      return finish(run, "error_blocked", {
        error: { name: "PromptBlocked", message: verdict.blocked },
      });
    await inputGuardrails(run);
  }
  // Write-ahead (a): the prompt is logged before the first model call of a new run.
  if (fresh) await run.journal?.input(run.messages.at(-1)!);
  let outcome: TurnOutcome = { kind: "continue" };
  if (restored?.records) outcome = await resumeBatch(run, restored);
  else if (recovery && "records" in recovery) outcome = await recoverBatch(run, recovery.records);
  else if (recovery && "finalReply" in recovery)
    // With `output`, the reply is the answer only if it passes the schema (as it ran).
    outcome = await finalReply(run, "stream" in model ? model : undefined, recovery.finalReply);
  else if (recovery && "failed" in recovery) outcome = { kind: "failed", error: recovery.failed };
  while (true) {
    switch (outcome.kind) {
      case "continue":
        if (run.numTurns >= run.config.maxTurns) {
          outcome = { kind: "max_turns" };
          continue;
        }
        if (!("stream" in model)) return finish(run, "error_during_execution", { error: model });
        // Delivery points 0 and 1: before a fresh run's first call, and after each batch.
        if (run.steering) await deliverQueued(run, "next_call");
        outcome = await runTurn(run, model);
        continue;
      case "final": {
        // Delivery point 3: a queued message means the run goes on.
        if (run.steering && (await deliverQueued(run, "final"))) {
          outcome = { kind: "continue" };
          continue;
        }
        const ending = await beforeEnd(run, outcome);
        if (ending) return ending;
        const stopped = await stopHooks(run, outcome.result);
        if (stopped && "error" in stopped)
          return finish(run, "error_during_execution", { error: stopped.error });
        if (stopped) {
          outcome = { kind: "continue" };
          continue;
        }
        return finish(run, "success", {
          result: outcome.result,
          structuredResult: outcome.structuredResult,
        });
      }
      case "paused": {
        const state = pausedState(run, outcome.records, outcome.blocks);
        return finish(run, "paused", { pending: pendingOf(state), state });
      }
      case "max_turns":
        return finish(run, "error_max_turns", { state: pausedState(run) });
      case "failed":
        return finish(run, "error_during_execution", { error: outcome.error });
    }
  }
}

async function runTurn(run: RunContext, agentModel: Model): Promise<TurnOutcome> {
  throwIfAborted(run);
  // MCP servers' tools: fetched before the first call of the run, and again after a change.
  if (run.config.sources || run.sources) {
    run.sources ??= { base: run.config, fetched: new Map(), tried: new Set() };
    run.config = await configWithSources(run.sources.base, run.sources, run);
    throwIfAborted(run);
  }
  run.numTurns++;
  startTurn(run);
  const preparing = prepareModelCall(run, agentModel);
  const prepared = preparing instanceof Promise ? await preparing : preparing;
  if (!prepared.ok) {
    endTurn(run);
    throwIfAborted(run);
    return { kind: "failed", error: prepared.error };
  }
  run.offered = prepared.offered;
  const { model, request } = prepared;
  // One function for the whole turn (no await of a helper's promise): a run keeps fewer
  // suspended frames alive while the model streams.
  const batch = new Batch(run);
  try {
    const onToolCall = run.config.eager
      ? (call: { id: string; name: string; input: unknown }) => {
          const record = claimEarly(run, batch, call);
          if (record) batch.addEarly(record);
        }
      : undefined;
    let turn: Awaited<ReturnType<typeof callModel>>;
    const span = run.trace?.modelCall(model);
    try {
      turn = await callModel({ model, request, signal: run.signal, emit: run.emit, onToolCall });
    } catch (error) {
      span?.end({ error: describeThrown(error) });
      await batch.abandon();
      throwIfAborted(run);
      throw error;
    }
    span?.end(turn.ok ? { usage: turn.usage, stopReason: turn.stopReason } : { error: turn.error });
    if (!turn.ok) {
      await batch.abandon();
      if (turn.partial) {
        run.messages.push(turn.partial);
        // Kept only marked incomplete; a log that cannot take it changes nothing of the failure.
        await run.journal?.partial(turn.partial).catch(() => {});
      }
      endTurn(run, turn.partial);
      throwIfAborted(run);
      return { kind: "failed", error: turn.error };
    }
    // Priced by the model id asked for, not the one the server reports.
    const usage = priced(turn.usage, request.modelName ?? model.modelId, run.config.pricing);
    addUsage(run.usage, usage);
    spendTurn(run, usage);
    rememberRequest(run.contextMemory, turn.usage);
    const records = claimToolCalls(run, batch, turn.message, turn.incompleteToolCalls);
    run.messages.push(turn.message);
    run.emit({ type: "message", message: turn.message });
    const step: Step = {
      message: turn.message,
      toolCalls: [],
      usage,
      stopReason: turn.stopReason,
    };
    run.steps.push(step);
    // Write-ahead (b): the complete reply, before any of its calls is prepared.
    if (run.journal)
      await run.journal.reply(
        step,
        records.flatMap((record) =>
          record.result ? [{ id: record.id, result: record.result }] : [],
        ),
      );

    if (records.length === 0) {
      endTurn(run, turn.message);
      // Delivery point 2 follows in the loop; with `output`, the text is (or is not) the answer.
      return await finalReply(run, model, turn.message);
    }
    return await settleBatch(run, records, await batch.run(records));
  } finally {
    // Every path (text-only answers included) unlinks the batch from the run's signal.
    batch.dispose();
  }
}

/**
 * Resumes the batch a pause interrupted: the app's outputs fill their calls, approved and held
 * calls run, then the run goes on as if the batch had never paused (or pauses again).
 */
async function resumeBatch(run: RunContext, restored: RestoredRun): Promise<TurnOutcome> {
  await fillToolOutputs(restored);
  const records = restored.records!;
  const batch = new Batch(run);
  startTurn(run);
  try {
    const outcome = await batch.resume(records, restored.runnable, restored.doneBlocks);
    return await settleBatch(run, records, outcome);
  } finally {
    batch.dispose();
  }
}

/** Runs the batch a crash interrupted: logged results are kept, the other calls are prepared afresh. */
async function recoverBatch(run: RunContext, records: CallRecord[]): Promise<TurnOutcome> {
  const batch = new Batch(run);
  startTurn(run);
  try {
    return await settleBatch(run, records, await batch.run(records));
  } finally {
    batch.dispose();
  }
}

/** What a batch's end means for the run: aborted, paused, or results for the model. */
function settleBatch(
  run: RunContext,
  records: CallRecord[],
  outcome: BatchOutcome,
): TurnOutcome | Promise<TurnOutcome> {
  if (outcome.aborted) {
    appendResults(run, records, outcome.blocks as ToolResultBlock[]);
    endTurn(run, run.steps.at(-1)!.message, outcome.blocks as ToolResultBlock[]);
    throwIfAborted(run);
  }
  if (outcome.paused) {
    // The calls that already ran show on the paused result's steps; the rest join on resume.
    run.steps.at(-1)!.toolCalls = stepCalls(records.filter((record) => !record.pending));
    // The stream ends here; a resumed run opens the turn again for the rest of its batch.
    const done = outcome.blocks.filter((block): block is ToolResultBlock => block !== undefined);
    endTurn(run, run.steps.at(-1)!.message, done);
    return { kind: "paused", records, blocks: outcome.blocks };
  }
  return completeBatch(run, records, outcome.blocks as ToolResultBlock[]);
}

/** Appends the batch's results in one user message and decides whether the run goes on. */
function completeBatch(
  run: RunContext,
  records: CallRecord[],
  blocks: ToolResultBlock[],
): TurnOutcome | Promise<TurnOutcome> {
  appendResults(run, records, blocks);
  // The turn's assistant message; its results are in `toolResults`.
  endTurn(run, run.steps.at(-1)!.message, blocks);

  // A write the log could not take: the run stops before the model sees these results.
  if (run.journal?.failure) return { kind: "failed", error: describeThrown(run.journal.failure) };
  const failed = records.find((record) => record.failRun);
  if (failed?.failRun)
    return {
      kind: "failed",
      error: { name: failed.failRun.name, message: failed.failRun.message },
    };
  // With `output`, the run ends only with an answer the schema accepts.
  if (run.config.output) return batchAnswer(run, records);
  const ending = records.find((record) => record.result!.endTurn === true);
  if (ending)
    return {
      kind: "final",
      result: textOf(ending.result!.content),
      structuredResult: ending.result!.structuredResult,
    };
  const stopped = records.find((record) => record.stop);
  if (stopped) return { kind: "final", result: textOf(stopped.result!.content) };
  if (records.every((record) => record.result!.terminate === true)) {
    return { kind: "final", result: textOf(records[0]!.result!.content) };
  }
  return { kind: "continue" };
}

function appendResults(run: RunContext, records: CallRecord[], blocks: ToolResultBlock[]): void {
  const message: Message = { role: "user", content: blocks };
  run.messages.push(message);
  run.steps.at(-1)!.toolCalls = stepCalls(records);
  run.journal?.results(message);
}

function stepCalls(records: CallRecord[]): StepToolCall[] {
  return records.map((record) => ({
    callId: record.id,
    name: record.name,
    input: record.input,
    result: record.result!,
    isError: record.result!.isError === true,
    preliminaryResults: record.preliminaryResults,
  }));
}
