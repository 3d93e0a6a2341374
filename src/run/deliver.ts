// Delivery of steering messages and follow-ups at the loop's delivery points
// (design/interactive.md, "Steering and follow-ups").

import { errorResult } from "./call.ts";
import type { RunContext } from "./loop.ts";

/**
 * Delivers what is queued at a delivery point: every steering message; at the end of a run
 * (`final`), the follow-ups instead when no steering message waits. Returns whether anything was
 * delivered (the run then goes on with another model call).
 */
export async function deliverQueued(
  run: RunContext,
  point: "next_call" | "final",
): Promise<boolean> {
  const queue = run.steering;
  if (!queue) return false;
  let delivered = queue.takeSteer();
  if (delivered.length === 0 && point === "final") delivered = queue.takeFollowUps();
  if (delivered.length === 0) return false;
  const step = run.steps.at(-1);
  for (const entry of delivered) {
    run.messages.push(entry.message);
    // Logged before the model call that sees it: a crash loses none.
    await run.journal?.userMessage(entry.message);
    if (step) {
      step.userMessages ??= [];
      step.userMessages.push(entry);
    }
    run.emit({
      type: "user_message",
      origin: entry.origin,
      message: entry.message,
      turn: run.numTurns,
    });
  }
  return true;
}

/** The answer for a call a steering message stopped before its handler ran. */
export function interruptedResult() {
  return errorResult(
    "The user interrupted before this call ran, so it was not run: read their message below, then call it again if it is still needed.",
    "interrupted",
    { code: "interrupted" },
  );
}
