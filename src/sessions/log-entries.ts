// The entries of a session's write-ahead log: their JSON shapes, and reading them back.

import { SessionError } from "../core/errors.ts";
import type { Message, Usage } from "../core/messages.ts";
import type { RunEnd } from "../run/journal.ts";
import type { ErrorInfo, RunState } from "../run/types.ts";
import type { ToolResult } from "../tools/types.ts";

/** Every entry names the run it belongs to: the id of the checkpoint its prompt opened. */
interface RunEntry {
  runId: string;
}

interface ReplyFields {
  message: Message;
  usage: Usage;
  stopReason: string;
  answered?: Record<string, ToolResult>;
}

/**
 * One log entry. A session is a sequence of runs; a run opens with `input` and closes with
 * `paused` (until `resumed`) or `end`. Entries are JSON text; the store never parses them.
 */
export type LogEntry =
  /** The first entry of a fork: where it came from. */
  | { type: "origin"; from: string; checkpointId?: string }
  /** (a) the run's prompt, before the first model call. */
  | (RunEntry & { type: "input"; checkpointId: string; message: Message })
  /**
   * (b) a complete reply, before any of its calls is prepared; `answered` holds the calls the
   * engine answered as it claimed them (a repeated id, input cut short), which never run.
   */
  | (RunEntry & ReplyFields & { type: "reply" })
  /**
   * The previous batch's results message and the reply that followed it, in one entry (one row
   * where two cost a second insert). A type of its own: a reader that does not know it finds the
   * session damaged, rather than reading the reply without the results before it.
   */
  | (RunEntry & ReplyFields & { type: "results_reply"; results: Message })
  /** A reply that failed mid-stream, marked incomplete; never replayed as complete. */
  | (RunEntry & { type: "partial"; message: Message })
  /** A steering message or follow-up delivered into the run's transcript, before the call that sees it. */
  | (RunEntry & { type: "user_message"; message: Message })
  /** (c) immediately before a handler runs: the call and a hash of its canonical input. */
  | (RunEntry & { type: "started"; callId: string; name: string; inputHash: string })
  /** (d) a handler's result as it settled, with the run's data then (sealed). */
  | (RunEntry & {
      type: "result";
      callId: string;
      name: string;
      result: ToolResult;
      runData?: { data: Record<string, unknown>; seal: string };
    })
  /** The batch's results message, in call order, after the hooks. */
  | (RunEntry & { type: "results"; message: Message })
  /** The run's permission mode changed (`setPermissionMode`). */
  | (RunEntry & { type: "mode"; mode: string })
  /** The run paused: the sealed state `resume` continues. */
  | (RunEntry & { type: "paused"; state: RunState })
  /** A recoverer took the run over (after a pause or a crash). */
  | (RunEntry & { type: "resumed" })
  | (RunEntry & {
      type: "end";
      subtype: RunEnd["subtype"];
      result?: string;
      error?: ErrorInfo;
      structuredResult?: unknown;
    })
  /** A file's content before Write or Edit changed it (`null`: it did not exist). */
  | (RunEntry & { type: "snapshot"; callId: string; path: string; content: string | null });

/** The fields each entry type must carry, checked when the log is read back. */
const REQUIRED: Record<LogEntry["type"], Record<string, "string" | "object" | "any">> = {
  origin: { from: "string" },
  input: { runId: "string", checkpointId: "string", message: "object" },
  reply: { runId: "string", message: "object", usage: "object", stopReason: "string" },
  results_reply: {
    runId: "string",
    results: "object",
    message: "object",
    usage: "object",
    stopReason: "string",
  },
  partial: { runId: "string", message: "object" },
  user_message: { runId: "string", message: "object" },
  started: { runId: "string", callId: "string", name: "string", inputHash: "string" },
  result: { runId: "string", callId: "string", name: "string", result: "object" },
  results: { runId: "string", message: "object" },
  mode: { runId: "string", mode: "string" },
  paused: { runId: "string", state: "object" },
  resumed: { runId: "string" },
  end: { runId: "string", subtype: "string" },
  snapshot: { runId: "string", callId: "string", path: "string", content: "any" },
};

/** Fields an entry type may carry, checked when present. */
const OPTIONAL: Partial<Record<LogEntry["type"], Record<string, "object">>> = {
  reply: { answered: "object" },
  results_reply: { answered: "object" },
};

/** A stored entry that parsed, with its place in the log. */
export interface StoredEntry {
  seq: number;
  entry: LogEntry;
}

/**
 * Parses a session's stored entries. An entry that is not JSON of a known shape is skipped when it
 * is the session's last (a write torn by a crash: the next append goes after it); anywhere else
 * the session is damaged and nothing is changed (RELIABILITY D6).
 */
export function parseLog(
  sessionId: string,
  rows: readonly { seq: number; data: string }[],
): StoredEntry[] {
  const entries: StoredEntry[] = [];
  rows.forEach((row, index) => {
    const entry = parseEntry(row.data);
    if (entry) entries.push({ seq: row.seq, entry });
    else if (index < rows.length - 1)
      throw new SessionError(
        `Session "${sessionId}" is damaged: its entry at seq ${row.seq} is not a skein log entry. Nothing was changed; repair or delete the session (store.delete) to go on.`,
        { code: "damaged", sessionId, seq: row.seq },
      );
  });
  return entries;
}

function parseEntry(data: string): LogEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const type = (value as { type?: unknown }).type;
  if (typeof type !== "string" || !Object.hasOwn(REQUIRED, type)) return undefined;
  const fields = REQUIRED[type as LogEntry["type"]];
  for (const [name, kind] of Object.entries(fields)) {
    const field = (value as Record<string, unknown>)[name];
    if (kind === "any" ? field === undefined : typeof field !== kind || field === null)
      return undefined;
  }
  for (const [name, kind] of Object.entries(OPTIONAL[type as LogEntry["type"]] ?? {})) {
    const field = (value as Record<string, unknown>)[name];
    if (field !== undefined && (typeof field !== kind || field === null)) return undefined;
  }
  return value as LogEntry;
}

/** An entry as the JSON text a store keeps. */
export function encodeEntry(entry: LogEntry): string {
  return JSON.stringify(entry);
}
