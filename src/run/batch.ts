import { messageForModel } from "../core/errors.ts";
import type { ToolResultBlock } from "../core/messages.ts";
import { addAbortListener, removeAbortListener } from "../model/abort-listeners.ts";
import { untilAborted } from "./abortable.ts";
import {
  type CallEnvironment,
  type CallRecord,
  cancelledResult,
  errorResult,
  toolCallOf,
} from "./call.ts";
import { interruptedResult } from "./deliver.ts";
import { executeCall } from "./execute-call.ts";
import { finalizeCall } from "./finalize-call.ts";
import { askApproval, prepareCall } from "./prepare-call.ts";
import { Scheduler } from "./schedule.ts";

export interface BatchOutcome {
  /** One block per call in call order; undefined where the call is still pending (paused). */
  blocks: (ToolResultBlock | undefined)[];
  paused: boolean;
  aborted: boolean;
}

/**
 * One model response's tool calls (DESIGN decisions 4-6):
 * 1. the batch policy sees every call before any handler runs;
 * 2. `tool_start` and `beforeToolCall` run in call order, a call's before its handler;
 * 3. handlers run under the concurrency rules and may finish in any order;
 * 4. `afterToolCall`, `onToolResult`, `tool_end` and the result blocks follow in call order.
 * Every call ends with exactly one result, whatever happens.
 *
 * With eager execution (no batch policy), calls join with `addEarly` as their tool_use block
 * completes in the stream; a concurrency-safe one may start before the model has finished.
 */
export class Batch {
  /** The run's environment, and the batch's: the same with the batch's own signal. */
  readonly #run: CallEnvironment;
  readonly #env: CallEnvironment;
  #controller: AbortController | undefined;
  /** The controller's signal, kept: asked on every step of the batch. */
  #batchSignal: AbortSignal | undefined;
  #scheduler: Scheduler<CallRecord> | undefined;
  #unlink: (() => void) | undefined;
  #linked = true;
  #abortedWhenDetached = false;
  /** Calls that arrived early, by id, in arrival order. */
  #early: Map<string, CallRecord> | undefined;
  #acceptsEarly = true;
  /** Prepares run one after another, in call order. */
  #prepared: Promise<void> = Promise.resolve();
  /** A call waits for approval: the calls after it, in call order, wait with it. */
  #awaitingApproval = false;
  /** An early call needs the approval handler: later early calls wait for the reply to complete. */
  #earlyWaits = false;

  constructor(env: CallEnvironment) {
    this.#run = env;
    this.#env = new BatchEnvironment(env, this);
  }

  /** Whether the batch's signal is aborted, without making it. */
  aborted(): boolean {
    if (this.#batchSignal) return this.#batchSignal.aborted;
    return this.#linked ? this.#run.signal.aborted : this.#abortedWhenDetached;
  }

  /**
   * The batch's own signal follows the run's, and lets `abandon` cancel calls started early. It
   * is made on first use (an AbortSignal costs a few microseconds): only when a handler, a hook
   * or a child agent takes it, or `abandon` needs it; the batch itself only asks `#aborted()`.
   */
  signal(): AbortSignal {
    if (!this.#batchSignal) {
      const controller = new AbortController();
      this.#controller = controller;
      this.#batchSignal = controller.signal;
      const run = this.#run.signal;
      // As if made with the batch: aborted when the run was, while the batch followed it.
      if (this.#linked ? run.aborted : this.#abortedWhenDetached) controller.abort(run.reason);
      else if (this.#linked) {
        const forward = () => controller.abort(run.reason);
        addAbortListener(run, forward);
        this.#unlink = () => removeAbortListener(run, forward);
      }
    }
    return this.#batchSignal;
  }

  /** The pool the batch's calls run in, made with the first call. */
  #pool(): Scheduler<CallRecord> {
    this.#scheduler ??= new Scheduler({
      maxConcurrency: this.#run.config.maxConcurrency,
      aborted: () => this.aborted(),
      run: (record) => executeCall(record, this.#env),
    });
    return this.#scheduler;
  }

  /** Stops following the run's signal (once: the batch ends, then is disposed). */
  #detach(): void {
    if (!this.#linked) return;
    this.#linked = false;
    this.#abortedWhenDetached = this.#run.signal.aborted;
    this.#unlink?.();
    this.#unlink = undefined;
  }

  /** Unlinks the batch from the run's signal; safe to call more than once. */
  dispose(): void {
    this.#detach();
  }

  /** False once a call of this reply could not be taken early: later ones must not overtake it. */
  get acceptsEarly(): boolean {
    return this.#acceptsEarly;
  }

  refuseEarly(): void {
    this.#acceptsEarly = false;
  }

  /** A call whose tool_use block is complete while the model still streams. */
  addEarly(record: CallRecord): void {
    this.#early ??= new Map();
    this.#early.set(record.id, record);
    this.#prepared = this.#prepared.then(async () => {
      await this.#prepare(record, { early: true });
      this.#preparedEarly(record);
    });
  }

  #preparedEarly(record: CallRecord): void {
    if (!record.result && (record.askLater || this.#earlyWaits)) {
      // Approval is asked once the reply is complete; calls after it keep their place behind it.
      this.#earlyWaits = true;
      record.waitsForApproval = true;
      return;
    }
    // Only a call that could overlap anyway starts before the reply is complete.
    if (this.#runnable(record)) this.#pool().add(record, { held: record.exclusive });
  }

  /** The call that arrived early under this id, if any. */
  early(id: string): CallRecord | undefined {
    return this.#early?.get(id);
  }

  /** The reply is complete: runs every call of it to the end. */
  async run(records: CallRecord[]): Promise<BatchOutcome> {
    const env = this.#env;
    await this.#prepared;
    if (env.config.batchPolicy) await checkBatchPolicy(records, env);
    const runnable: CallRecord[] = [];
    for (const record of records) {
      if (this.#early?.get(record.id) !== record) await this.#prepare(record);
      else if (record.waitsForApproval) {
        record.waitsForApproval = false;
        if (record.askLater && !record.result) await askApproval(record, env);
      } else continue;
      if (this.#runnable(record)) runnable.push(record);
    }
    return this.#execute(records, runnable, (record) => finalizeCall(record, env));
  }

  /**
   * Continues the batch a pause interrupted (`agent.resume`): the calls `restoreRun` let through
   * (approved, or held behind an approval) run now; finished calls keep their blocks.
   */
  async resume(
    records: CallRecord[],
    runnable: CallRecord[],
    done: Map<string, ToolResultBlock>,
  ): Promise<BatchOutcome> {
    return this.#execute(
      records,
      runnable,
      (record) => done.get(record.id) ?? finalizeCall(record, this.#env),
    );
  }

  async #execute(
    records: CallRecord[],
    runnable: CallRecord[],
    blockOf: (record: CallRecord) => ToolResultBlock | Promise<ToolResultBlock>,
  ): Promise<BatchOutcome> {
    const env = this.#env;
    const sequential =
      env.config.mode === "sequential" ||
      runnable.some((record) => record.tool?.executionMode === "sequential");
    for (const record of runnable) {
      if (sequential) record.exclusive = true;
      this.#pool().add(record);
    }
    await this.#settle();

    const aborted = this.aborted();
    // Steering interrupts calls waiting for approval as it does queued ones; calls waiting for
    // the app keep waiting (it may be doing them already).
    if (!aborted && env.steering?.hasSteer) {
      for (const record of records) {
        if (record.pending === "approval" || record.pending === "held") {
          record.pending = undefined;
          record.result = interruptedResult();
        }
      }
    }
    if (aborted) {
      for (const record of records) {
        if (record.pending) {
          record.pending = undefined;
          record.result = cancelledResult(record, "before it started");
        }
      }
    }
    const blocks: (ToolResultBlock | undefined)[] = [];
    for (const record of records) blocks.push(record.pending ? undefined : await blockOf(record));
    this.#detach();
    return { blocks, paused: records.some((record) => record.pending), aborted };
  }

  /**
   * The reply failed (or was aborted) after some calls arrived early: waits for those that started,
   * and reports every early call's end. Their results go nowhere: the reply they belong to is incomplete.
   */
  async abandon(): Promise<void> {
    // A call that already finished keeps its real result on tool_end: it did happen.
    const early = this.#early ?? NO_EARLY_CALLS;
    const finished = new Set(
      [...early.values()].filter((record) => record.finishedAt !== undefined),
    );
    if (early.size > 0) {
      this.signal();
      this.#controller!.abort(new Error("The model's reply failed before it was complete."));
    }
    await this.#prepared;
    await this.#settle();
    this.#detach();
    for (const record of early.values()) {
      record.pending = undefined;
      // A call that waited for the app (`execute: false`) finished without a result: it is
      // cancelled like one that never ran.
      if (!finished.has(record) || !record.result) {
        record.result = errorResult(
          `Tool "${record.name}" was cancelled: the model's reply failed before it was complete.`,
          "aborted",
        );
      }
      await finalizeCall(record, this.#env);
    }
  }

  /** Whether a prepared call may be scheduled now; one behind a call waiting for approval is held. */
  #runnable(record: CallRecord): boolean {
    if (record.result) return false;
    if (record.pending === "approval") this.#awaitingApproval = true;
    else if (this.#awaitingApproval) record.pending = "held";
    return record.pending === undefined;
  }

  async #prepare(record: CallRecord, options: { early?: boolean } = {}): Promise<void> {
    if (this.aborted() && !record.result)
      record.result = cancelledResult(record, "before it started");
    await prepareCall(record, this.#env, options);
    noteAnswered(record);
  }

  async #settle(): Promise<void> {
    const neverStarted = await this.#pool().close();
    for (const record of neverStarted) {
      record.result = cancelledResult(record, "before it started");
      record.finishedAt = performance.now();
    }
  }
}

const NO_EARLY_CALLS: ReadonlyMap<string, CallRecord> = new Map();

/** A call answered while it was prepared ends there. */
function noteAnswered(record: CallRecord): void {
  if (record.result) record.finishedAt = performance.now();
}

/**
 * The run's environment as a batch's calls see it: the fields of CallEnvironment (not a copy of
 * the whole run), with the batch's signal, made when first taken.
 */
class BatchEnvironment implements CallEnvironment {
  readonly config: CallEnvironment["config"];
  readonly sessionId: string;
  readonly emit: CallEnvironment["emit"];
  readonly runData: CallEnvironment["runData"];
  readonly sandbox: CallEnvironment["sandbox"];
  readonly background: CallEnvironment["background"];
  readonly journal: CallEnvironment["journal"];
  readonly link: CallEnvironment["link"];
  readonly offered: CallEnvironment["offered"];
  readonly steering: CallEnvironment["steering"];
  readonly #batch: Batch;

  constructor(env: CallEnvironment, batch: Batch) {
    this.config = env.config;
    this.sessionId = env.sessionId;
    this.emit = env.emit;
    this.runData = env.runData;
    this.sandbox = env.sandbox;
    this.background = env.background;
    this.journal = env.journal;
    this.link = env.link;
    this.offered = env.offered;
    this.steering = env.steering;
    this.#batch = batch;
  }

  get signal(): AbortSignal {
    return this.#batch.signal();
  }

  isAborted(): boolean {
    return this.#batch.aborted();
  }
}

/** A rejection answers every call with the policy's message and runs none; so does a throwing policy. */
async function checkBatchPolicy(records: CallRecord[], env: CallEnvironment): Promise<void> {
  const policy = env.config.batchPolicy;
  if (!policy || records.length === 0) return;
  let decision: unknown;
  try {
    decision = await untilAborted(
      policy.validate({ toolCalls: records.map((record) => toolCallOf(record, env.config)) }),
      env.signal,
    );
  } catch (error) {
    if (env.signal.aborted) {
      for (const record of records) record.result ??= cancelledResult(record, "before it started");
      return;
    }
    rejectAll(
      records,
      `The tool batch policy failed (tool_batch_policy_error: ${messageForModel(error)}), so no tool in this reply ran. Try the calls again, or fewer at once.`,
      "tool_batch_policy_error",
    );
    return;
  }
  if (
    typeof decision === "object" &&
    decision !== null &&
    (decision as { allowed?: unknown }).allowed === true
  )
    return;
  if (
    typeof decision !== "object" ||
    decision === null ||
    (decision as { allowed?: unknown }).allowed !== false
  ) {
    rejectAll(
      records,
      "The tool batch policy returned no decision (tool_batch_policy_error), so no tool in this reply ran.",
      "tool_batch_policy_error",
    );
    return;
  }
  const rejection = decision as {
    code?: unknown;
    message?: unknown;
    suggestedNextStep?: unknown;
    conflictingToolCallIds?: unknown;
  };
  const code = typeof rejection.code === "string" ? rejection.code : "invalid_tool_batch";
  let text = `This batch of tool calls was rejected (${code}): ${typeof rejection.message === "string" ? rejection.message : "no reason given"}`;
  if (Array.isArray(rejection.conflictingToolCallIds) && rejection.conflictingToolCallIds.length) {
    text += `\nConflicting calls: ${rejection.conflictingToolCallIds.join(", ")}.`;
  }
  if (typeof rejection.suggestedNextStep === "string")
    text += `\nSuggested next step: ${rejection.suggestedNextStep}`;
  text += "\nNo tool in this reply ran.";
  rejectAll(records, text, code, {
    ...(Array.isArray(rejection.conflictingToolCallIds)
      ? { conflictingToolCallIds: rejection.conflictingToolCallIds }
      : {}),
    ...(typeof rejection.suggestedNextStep === "string"
      ? { suggestedNextStep: rejection.suggestedNextStep }
      : {}),
  });
}

function rejectAll(
  records: CallRecord[],
  message: string,
  code: string,
  extra: Record<string, unknown> = {},
): void {
  for (const record of records)
    record.result ??= errorResult(message, "rejected", { code, ...extra });
}
