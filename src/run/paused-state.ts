// A run as a paused state: plain JSON the app keeps, with the interrupted batch's calls sealed.
// state.ts checks such a state and restores the run from it.

import { addUsage, type ToolResultBlock, type Usage } from "../core/messages.ts";
import type { CallRecord } from "./call.ts";
import { toJsonValue } from "./json.ts";
import type { RunLink } from "./link.ts";
import type { RunContext } from "./loop.ts";
import { batchDigest, sealCall, sealValue } from "./seal.ts";
import type { PausedCall, RunState } from "./types.ts";

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
    totalUsage: totalUsageOf(run),
    messages: run.messages,
    steps: run.steps,
  };
  const queued = run.steering?.pending;
  if (queued && queued.length > 0) state.queued = queued;
  if (run.outputAttempts > 0) state.outputAttempts = run.outputAttempts;
  if (run.link.depth === 0 && run.link.mode() !== "default") state.permissionMode = run.link.mode();
  if (run.runData.size > 0) {
    state.runData = toJsonValue(Object.fromEntries(run.runData)) as Record<string, unknown>;
    state.runDataSeal = sealValue(run.config.approvalSecret, [run.sessionId, state.runData]);
  }
  if (records) {
    state.batch = {
      calls: records.map((record, index): PausedCall => {
        if (record.pending === "child")
          return {
            id: record.id,
            name: record.name,
            input: record.input,
            status: "pending",
            reason: "child",
            state: record.child!.state,
          };
        if (record.pending) {
          const call: PausedCall = {
            id: record.id,
            name: record.name,
            input: record.input,
            status: "pending",
            reason: record.pending,
          };
          if (record.approvalReason !== undefined)
            (call as { approvalReason?: string }).approvalReason = record.approvalReason;
          return call;
        }
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
  // A deep, JSON-safe copy: the state outlives this run and must not share its arrays. Seals
  // are made over the copy, which is exactly what `resume` will read back.
  const copy = toJsonValue(state) as RunState;
  if (copy.batch) sealBatch(copy, run.config.approvalSecret);
  return copy;
}

/**
 * Calls that will run on resume without the app's output are sealed to what was shown, and to
 * the whole batch around them (see `batchDigest`).
 */
function sealBatch(state: RunState, secret: string | undefined): void {
  const calls = state.batch!.calls;
  const batch = batchDigest(state.messages.at(-1), calls);
  for (const call of calls) {
    if (call.status !== "pending" || call.reason === "external") continue;
    call.seal = sealCall(secret, { sessionId: state.sessionId, ...call, batch });
  }
}

/** `usage` plus what the run's children spent. */
export function totalUsageOf(run: { usage: Usage; link?: RunLink }): Usage {
  const total = { ...run.usage };
  if (!run.link) return total;
  addUsage(total, run.link.childUsage);
  for (const spent of run.link.children) addUsage(total, spent());
  return total;
}
