// How an agent with a session store starts a run: continuing a conversation, or recovering one.

import { randomUUID } from "node:crypto";
import { ConfigurationError, ResumeError, SessionError } from "../core/errors.ts";
import type { Message } from "../core/messages.ts";
import { describeValue } from "../core/options.ts";
import type { SessionStore } from "../core/session-store.ts";
import type { ResumeOptions, SessionTarget } from "../run/agent-options.ts";
import { type CallRecord, errorResult, newCallRecord } from "../run/call.ts";
import type { EngineConfig } from "../run/config.ts";
import type { Recovery } from "../run/loop.ts";
import { PERMISSION_MODES, type PermissionMode } from "../run/policy.ts";
import { canonicalJson } from "../run/seal.ts";
import type { RunState, Step } from "../run/types.ts";
import { SessionJournal } from "./journal.ts";
import { newCheckpointId } from "./run-entries.ts";
import { readSession, requireSession, type SessionView } from "./session-view.ts";
import { assertSessionId } from "./validate.ts";

/** What a run that continues a session starts from. */
export interface SessionRunStart {
  sessionId: string;
  checkpointId: string;
  /** The stored transcript, then the new prompt. */
  messages: Message[];
  runData: Map<string, unknown>;
  journal: SessionJournal;
}

/**
 * `run(prompt, { sessionId })`: the session's transcript followed by the prompt. A session whose
 * last run is unfinished is not silently extended; it must be resumed first.
 */
export async function openSessionRun(
  store: SessionStore,
  config: EngineConfig,
  sessionId: string | undefined,
  prompt: Message,
): Promise<SessionRunStart> {
  const id = sessionId ?? randomUUID();
  assertSessionId("run()", id);
  const view =
    sessionId === undefined ? undefined : await readSession(store, id, config.approvalSecret);
  if (view && view.status !== "idle")
    throw new SessionError(
      `Session "${id}" has an unfinished run (${view.status}); continue it with agent.resume({ sessionId: "${id}" }) before starting another.`,
      { code: "unfinished", sessionId: id },
    );
  const checkpointId = newCheckpointId();
  const journal = new SessionJournal({
    store,
    sessionId: id,
    runId: checkpointId,
    lastSeq: view?.lastSeq ?? 0,
    secret: config.approvalSecret,
  });
  const runData = new Map(Object.entries(view?.runData ?? {}));
  if (view?.runData) journal.knowRunData(view.runData);
  return {
    sessionId: id,
    checkpointId,
    messages: [...(view?.messages ?? []), prompt],
    runData,
    journal,
  };
}

/** What `resume({ sessionId })` continues: a paused run's sealed state, or a crashed run's log. */
export type SessionResumeStart =
  | { kind: "paused"; state: RunState; journal: SessionJournal; checkpointId: string }
  | {
      kind: "interrupted";
      journal: SessionJournal;
      checkpointId: string;
      recovery: Recovery;
      run: {
        sessionId: string;
        messages: Message[];
        steps: Step[];
        usage: ReturnType<typeof viewUsage>;
        numTurns: number;
        runData: Map<string, unknown>;
      };
    };

export async function openSessionResume(
  store: SessionStore,
  config: EngineConfig,
  sessionId: string,
  options: ResumeOptions,
): Promise<SessionResumeStart> {
  assertSessionId("resume()", sessionId);
  const view = await requireSession(store, sessionId, config.approvalSecret);
  const unfinished = view.unfinished;
  if (view.status === "idle" || !unfinished)
    throw new ResumeError(
      `resume: session "${sessionId}" has nothing to resume (its last run ended). Start a new run with agent.run(prompt, { sessionId: "${sessionId}" }).`,
    );
  const journal = new SessionJournal({
    store,
    sessionId,
    runId: unfinished.runId,
    lastSeq: view.lastSeq,
    secret: config.approvalSecret,
  });
  if (view.runData) journal.knowRunData(view.runData);
  if (view.status === "paused")
    return {
      kind: "paused",
      state: { ...unfinished.pausedState!, sessionId },
      journal,
      checkpointId: unfinished.runId,
    };
  const named = [
    ...Object.keys(options.toolOutputs ?? {}),
    ...Object.keys(options.approvals ?? {}),
  ];
  if (named.length > 0)
    throw new ResumeError(
      `resume: session "${sessionId}" was interrupted (a crash), not paused, so there are no calls waiting for toolOutputs or approvals (given for ${named.map((id) => `"${id}"`).join(", ")}). Resume it without them; calls that need approval ask again.`,
    );
  return {
    kind: "interrupted",
    journal,
    checkpointId: unfinished.runId,
    recovery: recoveryOf(view, config),
    run: {
      sessionId,
      messages: view.messages,
      steps: unfinished.batch ? [unfinished.batch.step] : [],
      usage: viewUsage(view),
      numTurns: unfinished.numTurns,
      runData: new Map(Object.entries(view.runData ?? {})),
      ...loggedMode(unfinished.permissionMode),
    },
  };
}

/** The permission mode the log last recorded for the run, when it is one skein knows. */
function loggedMode(mode: string | undefined): { permissionMode?: PermissionMode } {
  return mode !== undefined && (PERMISSION_MODES as readonly string[]).includes(mode)
    ? { permissionMode: mode as PermissionMode }
    : {};
}

function viewUsage(view: SessionView) {
  return { ...view.unfinished!.usage };
}

/**
 * The recovery rules, call by call, for the batch a crash interrupted: a logged result is kept
 * and never run again; a started call without one runs again only if its tool is idempotent,
 * and is otherwise answered "outcome unknown"; a call that never started is prepared afresh
 * (its permission checked again: an approval given before the crash is not assumed).
 */
function recoveryOf(view: SessionView, config: EngineConfig): Recovery {
  const unfinished = view.unfinished!;
  const batch = unfinished.batch;
  if (!batch) {
    if (unfinished.finalReply) return { finalReply: unfinished.finalReply };
    // The run was failing already: its model call broke mid-stream, and the crash came before
    // its end was logged. It ends as it would have; the partial reply stays marked incomplete.
    if (unfinished.failedMidStream)
      return {
        failed: {
          name: "APIConnectionError",
          message:
            "The model's reply broke off mid-stream, and the process stopped before the run could end; the partial reply is kept, marked incomplete. Run again to continue.",
        },
      };
    return { callModel: true };
  }
  const records: CallRecord[] = [];
  const content = batch.step.message.content;
  if (typeof content === "string") return { callModel: true };
  for (const block of content) {
    if (block.type !== "tool_use") continue;
    const record = newCallRecord(block.id, block.name, block.input);
    const logged = batch.results.get(block.id);
    const tool = config.tools.get(block.name);
    if (logged) {
      record.result = logged;
      if (tool) record.tool = tool;
    } else if (batch.started.has(block.id) && tool?.idempotent !== true) {
      record.result = errorResult(
        `The call to ${block.name} was interrupted while it ran (outcome unknown): it may or may not have taken effect. Check before calling it again.`,
        "outcome_unknown",
        { code: "outcome_unknown" },
      );
    }
    records.push(record);
  }
  return { records };
}

const STORE_METHODS = ["append", "read", "list", "delete", "close"] as const;

/** `sessionStore` must be a store: an object with the five methods of `SessionStore`. */
export function checkSessionStore(prefix: string, value: unknown): SessionStore | undefined {
  if (value === undefined) return undefined;
  const missing =
    typeof value === "object" && value !== null
      ? STORE_METHODS.filter(
          (name) => typeof (value as Record<string, unknown>)[name] !== "function",
        )
      : [...STORE_METHODS];
  if (missing.length > 0)
    throw new ConfigurationError(
      `${prefix}: sessionStore must be a SessionStore (memoryStore(), sqliteStore() from "skein/sqlite", postgresStore() from "skein/postgres", or an object with ${STORE_METHODS.join(", ")}); ${describeValue(value)} lacks ${missing.join(", ")}.`,
    );
  return value as SessionStore;
}

export function requireStore(store: SessionStore | undefined, what: string): SessionStore {
  if (!store)
    throw new ConfigurationError(
      `${what} needs a session store: give the agent a sessionStore option, such as memoryStore().`,
    );
  return store;
}

/** `resume({ sessionId })` rather than a paused state (which carries `version`). */
export function isSessionTarget(value: unknown): value is SessionTarget {
  return (
    typeof value === "object" &&
    value !== null &&
    !("version" in value) &&
    typeof (value as { sessionId?: unknown }).sessionId === "string"
  );
}

/**
 * `resume(state)` on an agent with a store: the run is logged in the state's session when the
 * store holds it (a run resumed from an app-kept state stays in its session's history).
 */
export async function journalForState(
  store: SessionStore,
  config: EngineConfig,
  state: RunState,
): Promise<{ journal: SessionJournal; checkpointId: string } | undefined> {
  const { sessionId } = state;
  const view = await readSession(store, sessionId, config.approvalSecret);
  if (!view) return undefined;
  // A paused state runs once: the session must still be paused at exactly this batch. A state
  // without a batch (a run stopped at maxTurns) continues a session whose runs all ended.
  const stored = view.unfinished?.pausedState?.batch;
  const samePause =
    view.status === "paused" &&
    stored !== undefined &&
    canonicalJson(stored) === canonicalJson(state.batch);
  if (state.batch ? !samePause : view.status !== "idle")
    throw new ResumeError(
      `resume: session "${sessionId}" is not at this state any more (its run was resumed already, paused again, or crashed); a state is resumed once. Continue the session with agent.resume({ sessionId: "${sessionId}" }).`,
    );
  const runId = view.unfinished?.runId ?? view.checkpoints.at(-1)?.id ?? newCheckpointId();
  const journal = new SessionJournal({
    store,
    sessionId,
    runId,
    lastSeq: view.lastSeq,
    secret: config.approvalSecret,
  });
  if (view.runData) journal.knowRunData(view.runData);
  await journal.resumed();
  return { journal, checkpointId: runId };
}

/**
 * `run(prompt, { messages })`: a previous result's transcript, which the new prompt follows. One
 * source of history: not together with a session store. A transcript that ends with calls not
 * yet answered belongs to a paused run, which `resume` continues.
 */
export function checkHistory(messages: unknown, hasStore: boolean): Message[] {
  if (messages === undefined) return [];
  if (hasStore)
    throw new ConfigurationError(
      "run(): give either a sessionStore (the agent keeps the history) or messages (you keep it), not both: pass { sessionId } to continue a stored conversation.",
    );
  if (!Array.isArray(messages))
    throw new ConfigurationError(
      `run(): messages must be an array of messages (a previous result's messages), received ${describeValue(messages)}.`,
    );
  messages.forEach((message, index) => {
    const role = (message as { role?: unknown } | null)?.role;
    const content = (message as { content?: unknown } | null)?.content;
    if (
      (role !== "user" && role !== "assistant") ||
      (typeof content !== "string" && !Array.isArray(content))
    )
      throw new ConfigurationError(
        `run(): messages[${index}] is not a message ({ role: "user" | "assistant", content }), received ${describeValue(message)}.`,
      );
  });
  const last = messages.at(-1) as Message | undefined;
  if (
    last?.role === "assistant" &&
    typeof last.content !== "string" &&
    last.content.some((block) => block.type === "tool_use")
  )
    throw new ConfigurationError(
      "run(): the last message of messages asks for tool calls that were never answered (a paused run); continue it with agent.resume(result.state) instead.",
    );
  return messages as Message[];
}
