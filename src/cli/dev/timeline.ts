// `skein dev`: a session's log as the inspector shows it: its runs, each a timeline of turns (a
// model call and the tool calls of its reply), pending approvals, the files each run changed.
// Plain JSON for the page; every string in it is the store's data, which the page shows as text.

import type { ContentBlock, Message, ToolResult, Usage } from "../../index.ts";
import { pendingOf } from "../../run/tree.ts";
import type { PendingToolCall, RunState } from "../../run/types.ts";
import type { StoredEntry } from "../../sessions/log-entries.ts";
import type { SessionView } from "../../sessions/session-view.ts";

export interface CallView {
  id: string;
  name: string;
  input: unknown;
  /**
   * done: its result is logged; error: the result is an error; running: its handler started and
   * no result is logged yet; pending: it waits (approval, the app's output, a child run); queued:
   * in a reply, not started.
   */
  status: "done" | "error" | "running" | "pending" | "queued";
  /** The result's text (text blocks joined; other blocks named). */
  result?: string;
  /** Measured by this inspector for the runs it drove (the log holds no times). */
  durationMs?: number;
  /** Why it waits: "approval", "external", "held" or "child", and the rules' reason. */
  waiting?: { reason: string; approvalReason?: string };
  /** Calls waiting inside the child run this (agent tool) call started. */
  children?: CallView[];
  /** Files Write or Edit changed through this call, as logged before the change. */
  files?: string[];
}

export interface TurnView {
  /** The seq of the reply's entry. */
  seq: number;
  text: string;
  thinking: string;
  usage: Usage;
  stopReason: string;
  /** The reply failed mid-stream (logged as partial). */
  partial?: boolean;
  durationMs?: number;
  calls: CallView[];
  /** Steering messages and follow-ups delivered after this turn. */
  userMessages: string[];
}

export interface RunView {
  runId: string;
  /** The checkpoint before this run's prompt (fork and rewind take it). */
  checkpointId: string;
  prompt: string;
  status:
    | "running"
    | "paused"
    | "interrupted"
    | "success"
    | "error_blocked"
    | "error_max_budget"
    | "error_guardrail"
    | "error_max_turns"
    | "error_during_execution"
    | "aborted";
  turns: TurnView[];
  usage: Usage;
  result?: string;
  error?: { name?: string; message?: string };
  /** Calls the paused run waits for. */
  pending?: PendingToolCall[];
  /** Paths Write and Edit changed in this run (rewinding to its checkpoint puts them back). */
  files: string[];
}

export interface SessionTimeline {
  sessionId: string;
  status: "idle" | "paused" | "interrupted" | "running";
  lastSeq: number;
  /** The session this one was forked from. */
  origin?: { from: string; checkpointId?: string };
  runs: RunView[];
}

/** Durations this process measured while it drove a run: model calls by reply seq, calls by id. */
export interface Timings {
  replies: Map<number, number>;
  calls: Map<string, number>;
}

/** The timeline of a session's log; `running` when a run of it is in progress in this process. */
export function timelineOf(
  view: SessionView,
  running: boolean,
  timings?: Timings,
): SessionTimeline {
  const runs: RunView[] = [];
  let run: RunView | undefined;
  let turn: TurnView | undefined;
  let origin: SessionTimeline["origin"];
  const calls = new Map<string, CallView>();
  const add = (entry: StoredEntry) => {
    const { seq, entry: e } = entry;
    switch (e.type) {
      case "origin":
        origin = {
          from: e.from,
          ...(e.checkpointId !== undefined ? { checkpointId: e.checkpointId } : {}),
        };
        return;
      case "input":
        run = {
          runId: e.runId,
          checkpointId: e.checkpointId,
          prompt: textOf(e.message),
          status: "interrupted",
          turns: [],
          usage: {
            inputTokens: 0,
            outputTokens: 0,
            cacheReadInputTokens: 0,
            cacheCreationInputTokens: 0,
          },
          files: [],
        };
        runs.push(run);
        turn = undefined;
        return;
      case "reply":
      case "results_reply":
      case "partial": {
        if (e.type === "results_reply") settleFromResults(e.results, calls);
        if (!run) return;
        const usage = e.type === "partial" ? undefined : e.usage;
        turn = {
          seq,
          text: textOf(e.message),
          thinking: thinkingOf(e.message),
          usage: { ...emptyUsage(), ...usage },
          stopReason: e.type === "partial" ? "partial" : e.stopReason,
          calls: [],
          userMessages: [],
        };
        if (e.type === "partial") turn.partial = true;
        const measured = timings?.replies.get(seq);
        if (measured !== undefined) turn.durationMs = measured;
        addUsageTo(run.usage, turn.usage);
        for (const block of blocksOf(e.message)) {
          if (block.type !== "tool_use") continue;
          const call: CallView = {
            id: block.id,
            name: block.name,
            input: block.input,
            status: "queued",
          };
          const answered = e.type === "partial" ? undefined : e.answered?.[block.id];
          if (answered) settle(call, answered);
          const duration = timings?.calls.get(block.id);
          if (duration !== undefined) call.durationMs = duration;
          turn.calls.push(call);
          calls.set(block.id, call);
        }
        run.turns.push(turn);
        return;
      }
      case "user_message":
        turn?.userMessages.push(textOf(e.message));
        return;
      case "started": {
        const call = calls.get(e.callId);
        if (call && call.status === "queued") call.status = "running";
        return;
      }
      case "result": {
        const call = calls.get(e.callId);
        if (call) settle(call, e.result);
        return;
      }
      case "results":
        settleFromResults(e.message, calls);
        return;
      case "snapshot": {
        if (run && !run.files.includes(e.path)) run.files.push(e.path);
        const call = calls.get(e.callId);
        if (call) call.files = [...(call.files ?? []), e.path];
        return;
      }
      case "paused":
        if (!run) return;
        run.status = "paused";
        applyPaused(e.state, calls);
        run.pending = e.state.batch ? pendingOf(e.state) : [];
        return;
      case "resumed":
        if (!run) return;
        run.status = "interrupted";
        delete run.pending;
        for (const call of calls.values()) if (call.status === "pending") call.status = "queued";
        return;
      case "end":
        if (!run) return;
        run.status = e.subtype;
        if (e.result !== undefined) run.result = e.result;
        if (e.error) run.error = { name: e.error.name, message: e.error.message };
        run = undefined;
        turn = undefined;
        return;
    }
  };
  for (const entry of view.entries) add(entry);
  const last = runs.at(-1);
  const status = running ? "running" : view.status;
  if (running && last && last.status !== "success" && !isEnded(last.status))
    last.status = "running";
  return {
    sessionId: view.sessionId,
    status,
    lastSeq: view.lastSeq,
    ...(origin ? { origin } : {}),
    runs,
  };
}

function isEnded(status: RunView["status"]): boolean {
  return status !== "running" && status !== "paused" && status !== "interrupted";
}

/** The paused batch's calls: results kept in the state, and what each waiting call waits for. */
function applyPaused(state: RunState, calls: Map<string, CallView>): void {
  for (const paused of state.batch?.calls ?? []) {
    const call = calls.get(paused.id);
    if (!call) continue;
    if (paused.status === "done") settle(call, paused.result);
    else {
      call.status = "pending";
      call.waiting = {
        reason: paused.reason,
        ...("approvalReason" in paused && paused.approvalReason !== undefined
          ? { approvalReason: paused.approvalReason }
          : {}),
      };
      if (paused.reason === "child") call.children = childCalls(paused.state, 0);
    }
  }
}

/** The calls a paused child run waits for, nested as deep as its own children (at most 8 levels). */
function childCalls(state: RunState, depth: number): CallView[] {
  if (depth > 8 || typeof state !== "object" || state === null) return [];
  return (state.batch?.calls ?? []).map((paused) => {
    const call: CallView = {
      id: paused.id,
      name: paused.name,
      input: paused.input,
      status: "pending",
    };
    if (paused.status === "done") settle(call, paused.result);
    else {
      call.waiting = {
        reason: paused.reason,
        ...("approvalReason" in paused && paused.approvalReason !== undefined
          ? { approvalReason: paused.approvalReason }
          : {}),
      };
      if (paused.reason === "child") call.children = childCalls(paused.state, depth + 1);
    }
    return call;
  });
}

function settle(call: CallView, result: ToolResult): void {
  call.status = result.isError ? "error" : "done";
  call.result = resultText(result.content);
  delete call.waiting;
}

/** A results message's tool_result blocks settle the calls no `result` entry settled. */
function settleFromResults(message: Message, calls: Map<string, CallView>): void {
  for (const block of blocksOf(message)) {
    if (block.type !== "tool_result") continue;
    const call = calls.get(block.tool_use_id);
    if (!call || call.status === "done" || call.status === "error") continue;
    call.status = block.is_error ? "error" : "done";
    call.result = resultText(block.content ?? "");
    delete call.waiting;
  }
}

function resultText(content: ToolResult["content"] | undefined): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return JSON.stringify(content ?? "");
  return content
    .map((block) => (block.type === "text" ? block.text : `[${block.type}]`))
    .join("\n");
}

function blocksOf(message: Message): ContentBlock[] {
  return Array.isArray(message?.content) ? message.content : [];
}

/** A message's text blocks; images and other blocks named in brackets. */
export function textOf(message: Message): string {
  if (typeof message?.content === "string") return message.content;
  return blocksOf(message)
    .filter((block) => block.type === "text" || block.type === "image")
    .map((block) => (block.type === "text" ? block.text : "[image]"))
    .join("");
}

function thinkingOf(message: Message): string {
  return blocksOf(message)
    .map((block) => (block.type === "thinking" ? block.thinking : ""))
    .join("");
}

function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
}

function addUsageTo(total: Usage, usage: Usage): void {
  total.inputTokens += usage.inputTokens || 0;
  total.outputTokens += usage.outputTokens || 0;
  total.cacheReadInputTokens += usage.cacheReadInputTokens || 0;
  total.cacheCreationInputTokens += usage.cacheCreationInputTokens || 0;
}
