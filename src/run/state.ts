import { messageForModel, ResumeError, ToolTimeoutError } from "../errors.ts";
import type { Message, ToolResultBlock, Usage } from "../model/messages.ts";
import { runtimeOf } from "../tools/definition.ts";
import type { ToolResult } from "../tools/types.ts";
import { type CallRecord, errorResult, newCallRecord, resultFromValue } from "./call.ts";
import type { EngineConfig } from "./config.ts";
import { finalizeCall } from "./finalize-call.ts";
import { toJsonValue } from "./json.ts";
import type { RunContext } from "./loop.ts";
import type { PausedCall, ResumeOptions, RunState, Step } from "./types.ts";

/** What `restoreRun` hands the loop: the run so far, and the records of an interrupted batch. */
export interface RestoredRun {
  sessionId: string;
  messages: Message[];
  steps: Step[];
  usage: Usage;
  numTurns: number;
  records?: CallRecord[];
  /** Results of the batch's already-finished calls, by call id. */
  doneBlocks: Map<string, ToolResultBlock>;
  toolOutputs: Record<string, unknown>;
}

/**
 * The run as plain JSON. With `records`, the interrupted batch goes along: finished calls with
 * their results (they are never run again), pending calls with their validated input.
 */
export function pausedState(
  run: RunContext,
  records?: CallRecord[],
  blocks?: (ToolResultBlock | undefined)[],
): RunState {
  const state: RunState = {
    version: 1,
    sessionId: run.sessionId,
    numTurns: run.numTurns,
    usage: { ...run.usage },
    messages: run.messages,
    steps: run.steps,
  };
  if (records) {
    state.batch = {
      calls: records.map((record, index): PausedCall => {
        if (record.pending)
          return {
            id: record.id,
            name: record.name,
            input: record.input,
            status: "pending",
            reason: record.pending,
          };
        const call: PausedCall = {
          id: record.id,
          name: record.name,
          input: record.input,
          status: "done",
          result: record.result!,
          isError: record.result!.isError === true,
          block: blocks![index]!,
          preliminaryResults: record.preliminaryResults,
        };
        if (record.stop) call.stop = true;
        if (record.failRun) call.failRunTimeoutMs = record.failRun.timeoutMs;
        return call;
      }),
    };
  }
  // A deep, JSON-safe copy: the state outlives this run and must not share its arrays.
  return toJsonValue(state) as RunState;
}

/** Checks a state handed to `resume` and rebuilds the run from it. Throws `ResumeError` before any side effect. */
export async function restoreRun(
  state: unknown,
  config: EngineConfig,
  options: ResumeOptions,
): Promise<RestoredRun> {
  if (typeof state === "string") {
    try {
      state = JSON.parse(state);
    } catch {
      throw new ResumeError(
        "resume: the state is a string that is not JSON. Pass the `state` of a paused result (or its JSON text).",
      );
    }
  }
  const candidate = state as Partial<RunState> | null;
  if (typeof candidate !== "object" || candidate === null || candidate.version !== 1) {
    throw new ResumeError(
      "resume: this is not a skein run state (expected { version: 1, ... } from a paused result's `state`).",
    );
  }
  if (
    !Array.isArray(candidate.messages) ||
    !Array.isArray(candidate.steps) ||
    typeof candidate.sessionId !== "string" ||
    typeof candidate.numTurns !== "number"
  ) {
    throw new ResumeError(
      "resume: the state is missing its messages, steps, sessionId or numTurns; pass it unchanged.",
    );
  }
  const toolOutputs = options.toolOutputs ?? {};
  const approvals = options.approvals ?? {};
  const restored: RestoredRun = {
    sessionId: candidate.sessionId,
    // Resuming never changes the state it was given: it can be resumed again.
    messages: structuredClone(candidate.messages),
    steps: structuredClone(candidate.steps),
    usage: {
      inputTokens: 0,
      outputTokens: 0,
      cacheReadInputTokens: 0,
      cacheCreationInputTokens: 0,
      ...candidate.usage,
    },
    numTurns: candidate.numTurns,
    doneBlocks: new Map(),
    toolOutputs,
  };
  const calls = candidate.batch?.calls ? structuredClone(candidate.batch.calls) : undefined;
  const pendingIds = new Set<string>();
  if (calls) {
    checkBatchMatchesTranscript(calls, restored.messages);
    restored.records = [];
    for (const call of calls) {
      const record = newCallRecord(call.id, call.name, call.input);
      if (call.status === "done") {
        record.result = call.result;
        record.stop = call.stop;
        if (call.failRunTimeoutMs !== undefined)
          record.failRun = new ToolTimeoutError(call.name, call.failRunTimeoutMs);
        record.preliminaryResults = call.preliminaryResults ?? [];
        restored.doneBlocks.set(call.id, call.block);
      } else {
        const tool = config.tools.get(call.name);
        if (!tool)
          throw new ResumeError(
            `resume: the paused call "${call.id}" is for the tool "${call.name}", which this agent does not have.`,
          );
        const outcome = await runtimeOf(tool).validate(call.input);
        if (!outcome.ok)
          throw new ResumeError(
            `resume: the stored input of call "${call.id}" (${call.name}) no longer passes its schema; the state was altered.`,
          );
        record.tool = tool;
        record.runtime = runtimeOf(tool);
        record.input = outcome.value;
        record.pending = "external";
        pendingIds.add(call.id);
      }
      restored.records.push(record);
    }
  }
  for (const id of Object.keys(toolOutputs)) {
    if (!pendingIds.has(id))
      throw new ResumeError(
        `resume: toolOutputs names "${id}", which is not a call waiting for output in this state.`,
      );
  }
  for (const id of Object.keys(approvals)) {
    throw new ResumeError(
      `resume: approvals names "${id}", which is not a call waiting for approval in this state.`,
    );
  }
  return restored;
}

/** Fills the pending calls from the app's outputs and returns the batch's blocks in call order. */
export async function resumedRecords(
  run: RunContext,
  restored: RestoredRun,
): Promise<ToolResultBlock[]> {
  const blocks: ToolResultBlock[] = [];
  for (const record of restored.records ?? []) {
    if (!record.pending) {
      blocks.push(restored.doneBlocks.get(record.id)!);
      continue;
    }
    record.pending = undefined;
    record.reachedHandler = true;
    record.startedAt = performance.now();
    if (!Object.hasOwn(restored.toolOutputs, record.id)) {
      record.result = errorResult(
        `No output was provided for the call to "${record.name}" when the run was resumed.`,
        "no_output",
      );
    } else {
      record.result = await outputResult(record, restored.toolOutputs[record.id]);
    }
    blocks.push(await finalizeCall(record, run));
  }
  return blocks;
}

async function outputResult(record: CallRecord, output: unknown): Promise<ToolResult> {
  const runtime = record.runtime!;
  let value = output;
  if (runtime.onResponse) {
    try {
      value = await runtime.onResponse(output, record.input);
    } catch (error) {
      return errorResult(
        `The response for "${record.name}" was rejected: ${messageForModel(error)}`,
        "invalid_result",
      );
    }
  }
  return resultFromValue(record, runtime, value);
}

/** The batch must answer exactly the tool_use blocks of the last assistant message, in order. */
function checkBatchMatchesTranscript(calls: PausedCall[], messages: Message[]): void {
  const last = messages.at(-1);
  const uses =
    last?.role === "assistant" && Array.isArray(last.content)
      ? last.content.filter((block) => block.type === "tool_use")
      : [];
  const same =
    uses.length === calls.length &&
    uses.every(
      (block, index) =>
        block.type === "tool_use" &&
        block.id === calls[index]!.id &&
        block.name === calls[index]!.name,
    );
  if (!same)
    throw new ResumeError(
      "resume: the paused calls do not match the transcript's last tool calls; the state was altered.",
    );
  for (const call of calls) {
    const status: unknown = call.status;
    if (status !== "done" && status !== "pending")
      throw new ResumeError(`resume: call "${call.id}" has an unknown status.`);
  }
}
