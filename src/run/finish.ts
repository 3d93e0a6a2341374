// How a run ends: the result message, and closing the run in its session log.

import { AbortError, describeThrown } from "../core/errors.ts";
import { hasHook } from "./hooks.ts";
import type { RunEnd } from "./journal.ts";
import { sessionEnd } from "./lifecycle.ts";
import type { RunContext } from "./loop.ts";
import { placeOf } from "./model-call.ts";
import { totalUsageOf } from "./paused-state.ts";
import { sourceStatuses } from "./tool-source.ts";
import type { SDKResultMessage } from "./types.ts";

/** The run's result message. */
export function finish(
  run: RunContext,
  subtype: SDKResultMessage["subtype"],
  fields: Partial<
    Pick<SDKResultMessage, "result" | "structuredResult" | "pending" | "state" | "error">
  >,
): SDKResultMessage {
  const isError = subtype !== "success" && subtype !== "paused";
  // An error never poses as an answer: its result text is empty, and what went wrong is in `error`.
  const error =
    subtype === "error_max_turns"
      ? (fields.error ?? {
          name: "MaxTurnsError",
          message: `The run stopped after ${run.numTurns} model calls (maxTurns ${run.config.maxTurns}) before the model finished. Resume its state with a higher maxTurns to go on.`,
        })
      : fields.error;
  const result = isError ? "" : (fields.result ?? "");
  const message: SDKResultMessage = {
    type: "result",
    subtype,
    result,
    isError,
    numTurns: run.numTurns,
    sessionId: run.sessionId,
    usage: { ...run.usage },
    totalUsage: totalUsageOf(run),
    durationMs: Date.now() - run.startedAt,
    messages: run.messages,
    steps: run.steps,
  };
  if (run.checkpointId !== undefined) message.checkpointId = run.checkpointId;
  if (fields.structuredResult !== undefined) message.structuredResult = fields.structuredResult;
  if (fields.pending) message.pending = fields.pending;
  if (fields.state) message.state = fields.state;
  if (error) message.error = error;
  const servers = sourceStatuses(run.sources?.base.sources ?? run.config.sources, run.sources);
  if (servers) message.mcpServers = servers;
  // The result is decided: from now on steer() and followUp() are refused, so nothing accepted is
  // lost (a paused state took the queued messages already; a failed run lists them).
  const queue = run.steering;
  if (queue) {
    if (isError && subtype !== "error_max_turns") {
      const left = queue.pending;
      if (left.length > 0) message.undelivered = left;
    }
    queue.end(subtype);
  }
  return message;
}

/**
 * Closes the run in its session log: the paused state, or the end. A log that cannot take it
 * fails the run closed (the result keeps its state, so nothing the app holds is lost).
 */
export async function closeJournal(
  run: RunContext,
  result: SDKResultMessage,
): Promise<SDKResultMessage> {
  const journal = run.journal;
  if (!journal || journal.failure) return result;
  try {
    if (result.subtype === "paused") await journal.paused(result.state!);
    else {
      const end: RunEnd = { subtype: result.subtype, result: result.result };
      if (result.error) end.error = result.error;
      if (result.structuredResult !== undefined) end.structuredResult = result.structuredResult;
      await journal.ended(end);
    }
    return result;
  } catch (error) {
    const failure = describeThrown(error);
    return {
      ...result,
      subtype: "error_during_execution",
      isError: true,
      result: "",
      error: failure,
    };
  }
}

/** The run's end: its log closed (which may turn the result into a failure), its trace ended. */
export function endRun(
  run: RunContext,
  result: SDKResultMessage,
): SDKResultMessage | Promise<SDKResultMessage> {
  if (hasHook(placeOf(run), "sessionEnd"))
    return sessionEnd(run, result).then((ended) => closeRun(run, ended!));
  return closeRun(run, result);
}

function closeRun(
  run: RunContext,
  result: SDKResultMessage,
): SDKResultMessage | Promise<SDKResultMessage> {
  // A blocked prompt leaves nothing in the log.
  if (!run.journal || result.subtype === "error_blocked") {
    run.trace?.end({ result });
    return result;
  }
  return closeJournal(run, result).then((closed) => {
    run.trace?.end({ result: closed });
    return closed;
  });
}

/** Throws the run's `AbortError` (a valid transcript) when its signal aborted. */
export function throwIfAborted(run: RunContext): void {
  if (!run.signal.aborted) return;
  run.steering?.end("aborted");
  throw new AbortError({
    messages: run.messages,
    sessionId: run.sessionId,
    reason: run.signal.reason,
    numTurns: run.numTurns,
    usage: { ...run.usage },
    totalUsage: totalUsageOf(run),
  });
}
