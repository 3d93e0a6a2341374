// Results and events as the queue keeps them: JSON text, and the result of a run no engine
// finished in this execution (ended in its log already, never run, or cancelled).

import { AbortError, ResumeError } from "../core/errors.ts";
import { addUsage, emptyUsage } from "../core/messages.ts";
import { pendingOf } from "../run/tree.ts";
import type { AgentEvent, ErrorInfo, SDKResultMessage } from "../run/types.ts";
import type { SessionView } from "../sessions/session-view.ts";

/**
 * An event or result as JSON text. Tools may put anything in `details` or `update`: values JSON
 * cannot hold become what they say (an error its name and message, a bigint its digits), and an
 * event that still cannot be written (a cycle) keeps its type and says why.
 */
export function eventText(event: AgentEvent): string {
  try {
    return JSON.stringify(event, jsonSafe);
  } catch (error) {
    return JSON.stringify({
      type: event.type,
      unserializable: error instanceof Error ? error.message : String(error),
    });
  }
}

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}

/** The result of a run that ended with `error` before (or without) any engine running it. */
export function failedResult(
  sessionId: string,
  checkpointId: string | undefined,
  view: SessionView | undefined,
  error: ErrorInfo,
): SDKResultMessage {
  const result: SDKResultMessage = {
    type: "result",
    subtype: "error_during_execution",
    result: "",
    isError: true,
    numTurns: 0,
    sessionId,
    usage: emptyUsage(),
    totalUsage: emptyUsage(),
    durationMs: 0,
    messages: view?.messages ?? [],
    steps: [],
    error,
  };
  if (checkpointId !== undefined) result.checkpointId = checkpointId;
  return result;
}

/**
 * The result of a run that its log shows ended or paused, for an execution that finds it so (the
 * worker that ran it died before recording its result): what the log keeps, without the events.
 */
export function resultFromLog(
  view: SessionView,
  checkpointId: string,
  end:
    | { subtype: string; result?: string; error?: ErrorInfo; structuredResult?: unknown }
    | undefined,
): SDKResultMessage {
  const usage = emptyUsage();
  let numTurns = 0;
  for (const { entry } of view.entries) {
    if (entry.type === "input" || !("runId" in entry) || entry.runId !== checkpointId) continue;
    const reply = entry.type === "reply" || entry.type === "results_reply";
    if (reply) addUsage(usage, entry.usage);
    if (reply || entry.type === "partial") numTurns++;
  }
  const result: SDKResultMessage = {
    type: "result",
    subtype: "success",
    // An error's text is in `error` (older logs may hold it as the result too).
    result: end && end.subtype !== "success" ? "" : (end?.result ?? ""),
    isError: false,
    numTurns,
    sessionId: view.sessionId,
    checkpointId,
    usage,
    totalUsage: { ...usage },
    durationMs: 0,
    messages: view.messages,
    steps: [],
  };
  // A typed run's answer, as its end kept it: a success read back is as typed as the live one.
  if (end?.subtype === "success" && end.structuredResult !== undefined)
    result.structuredResult = end.structuredResult;
  const paused = view.unfinished?.pausedState;
  if (!end && paused) {
    result.subtype = "paused";
    result.state = paused;
    result.pending = pendingOf(paused);
    return result;
  }
  if (end && end.subtype !== "success") {
    result.subtype =
      end.subtype === "error_max_turns" ? "error_max_turns" : "error_during_execution";
    result.isError = true;
    // A log written before errors always carried `error` may hold the message as the result.
    result.error = end.error ?? {
      name: end.subtype === "error_max_turns" ? "MaxTurnsError" : "Error",
      message: end.result || `The run ended with ${end.subtype}.`,
    };
  }
  return result;
}

/** How a cancelled run rejects, as an aborted run does in one process. */
export function cancelledError(stored: string | undefined, sessionId: string): AbortError {
  const result = stored ? (JSON.parse(stored) as Partial<SDKResultMessage>) : {};
  const options: ConstructorParameters<typeof AbortError>[0] = {
    messages: result.messages ?? [],
    sessionId,
    reason: "cancelRun",
  };
  if (result.numTurns !== undefined) options.numTurns = result.numTurns;
  if (result.usage) options.usage = result.usage;
  if (result.totalUsage) options.totalUsage = result.totalUsage;
  return new AbortError(options);
}

/**
 * The error of a run whose paused state was refused before anything ran (`ResumeError`, as
 * `agent.resume` throws it in one process); undefined for any other result.
 */
export function refusedError(result: SDKResultMessage): ResumeError | undefined {
  if (!result.isError || result.error?.name !== "ResumeError") return undefined;
  return new ResumeError(result.error.message);
}
