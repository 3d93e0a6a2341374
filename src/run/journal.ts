// The run's write-ahead log as the engine sees it: each write is awaited before the step it guards.

import type { Message } from "../core/messages.ts";
import type { ToolResult } from "../tools/types.ts";
import type { ErrorInfo, RunState, SDKResultMessage, Step } from "./types.ts";

/**
 * What the engine tells a write-ahead log (design/sessions.md, "The write-ahead log"). The engine
 * knows nothing of stores: `src/sessions` implements this over a `SessionStore`. A write that
 * fails rejects, and every later write rejects with the same error (`failure`): the run then
 * ends failed, and the step the write guarded never happens.
 */
export interface RunJournal {
  /** The run's user message, before the first model call. */
  input(message: Message): Promise<void>;
  /**
   * The complete reply (tool_use ids as stored), before any of its calls is prepared, with the
   * calls answered while they were claimed (a repeated id, input cut short): they never run, and
   * recovery must answer them the same way.
   */
  reply(step: Step, answered: { id: string; result: ToolResult }[]): Promise<void>;
  /** A steering message or follow-up delivered into the transcript, before the model call that sees it. */
  userMessage(message: Message): Promise<void>;
  /** A reply that failed mid-stream, kept only marked incomplete. */
  partial(message: Message): Promise<void>;
  /** A call passed its hooks and permission: written immediately before its handler runs. */
  started(call: { id: string; name: string; input: unknown }): Promise<void>;
  /** A call that reached its handler settled: its result as the handler gave it, and runData then. */
  result(
    call: { id: string; name: string },
    result: ToolResult,
    runData: RunDataSnapshot,
  ): Promise<void>;
  /** The batch's results message, in call order; written with the next entry. */
  results(message: Message): void;
  /** The run's permission mode changed; written with the next entry. */
  mode(mode: string): void;
  /** The run paused: its sealed state. */
  paused(state: RunState): Promise<void>;
  /** The run ended (`aborted` after the cancelled results). */
  ended(end: RunEnd): Promise<void>;
  /** A file's content before a built-in changes it (`null`: it did not exist). */
  snapshot(callId: string, path: string, content: string | null): Promise<void>;
  /** The error that stopped the log, if one did. */
  readonly failure: Error | undefined;
}

export type RunDataSnapshot = Map<string, unknown>;

export interface RunEnd {
  subtype: Exclude<SDKResultMessage["subtype"], "paused"> | "aborted";
  result?: string;
  error?: ErrorInfo;
  /** A typed run's validated answer (as JSON keeps it), for a result read back from the log. */
  structuredResult?: unknown;
}
