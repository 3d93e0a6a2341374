// Turning a reply's tool_use blocks into call records: ids checked, repeated ones renamed.

import type { Message, ToolUseBlock } from "../core/messages.ts";
import type { Batch } from "./batch.ts";
import { type CallRecord, errorResult, newCallRecord } from "./call.ts";
import type { RunContext } from "./loop.ts";

/**
 * A call completed in the stream before the reply did (eager execution). Calls whose id is
 * missing or already used wait for the whole reply, where `claimToolCalls` answers them.
 */
export function claimEarly(
  run: RunContext,
  batch: Batch,
  call: { id: string; name: string; input: unknown },
): CallRecord | undefined {
  if (!batch.acceptsEarly) return undefined;
  if (typeof call.id !== "string" || !call.id || run.seenIds.has(call.id) || batch.early(call.id)) {
    // Answered with the whole reply instead; no later call may start before it.
    batch.refuseEarly();
    return undefined;
  }
  return newCallRecord(call.id, String(call.name), call.input);
}

/**
 * Turns the message's tool_use blocks into call records. A repeated or missing id is rewritten
 * in the stored message (`<id>~2`) and answered with an error, so every tool_use keeps exactly
 * one tool_result; a call the model did not finish is answered and never run.
 */
export function claimToolCalls(
  run: RunContext,
  batch: Batch,
  message: Message,
  incomplete: { id: string; name: string; reason: string }[],
): CallRecord[] {
  if (typeof message.content === "string") return [];
  const cut = incomplete.length
    ? new Map(incomplete.map((call) => [call.id, call.reason]))
    : NONE_CUT;
  const records: CallRecord[] = [];
  for (const block of message.content) {
    if (block.type !== "tool_use") continue;
    const originalId = typeof block.id === "string" ? block.id : "";
    let duplicate = false;
    if (!originalId)
      (block as ToolUseBlock).id = uniqueId(run, `toolu_skein_${run.numTurns}_${records.length}`);
    else if (run.seenIds.has(originalId)) {
      duplicate = true;
      (block as ToolUseBlock).id = uniqueId(run, originalId);
    }
    run.seenIds.add(block.id);
    // A call announced complete in the stream keeps its record (it has had its tool_start).
    const early = duplicate ? undefined : batch.early(block.id);
    if (early) {
      // Listed as cut short after all: answered, and never run unless it already started.
      if (cut.has(originalId) && !early.reachedHandler)
        early.result ??= incompleteResult(early, cut.get(originalId)!);
      records.push(early);
      continue;
    }
    const record = newCallRecord(block.id, String(block.name), block.input);
    if (duplicate) {
      record.result = errorResult(
        `This call reused the id "${originalId}" of an earlier call, so it was not run. Call the tool again; every call needs its own id.`,
        "duplicate_id",
      );
    } else if (cut.has(originalId)) {
      record.result = incompleteResult(record, cut.get(originalId)!);
    }
    records.push(record);
  }
  return records;
}

const NONE_CUT: ReadonlyMap<string, string> = new Map();

function incompleteResult(record: CallRecord, reason: string) {
  return errorResult(
    `Your call to "${record.name}" was not run: its input was incomplete or not valid JSON (${reason}). Call it again with complete JSON input, smaller if it was cut off.`,
    "incomplete",
  );
}

function uniqueId(run: RunContext, base: string): string {
  let candidate = base;
  for (let suffix = 2; run.seenIds.has(candidate); suffix++) candidate = `${base}~${suffix}`;
  return candidate;
}
