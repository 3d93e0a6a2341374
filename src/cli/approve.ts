import type { PendingToolCall } from "../index.ts";
import type { Terminal } from "./terminal.ts";

/** What `agent.resume` takes: call id -> `true`, `false`, or a permission result. */
export type ApprovalDecisions = Record<string, unknown>;

/**
 * THE SEAM FOR APPROVALS. A run pauses when tool calls wait for approval (`subtype: "paused"`,
 * `pending` with `reason: "approval"`); the command hands those calls here and resumes the run
 * with the decisions returned, or ends it (exit code 1, with the reason) when this returns
 * undefined.
 *
 * Approvals come with the permissions issue (built-in Write, Edit and Bash ask by default). Until
 * then nothing in skein asks, and this function asks nobody: it returns undefined. The intended
 * form: on an interactive terminal, show each call (tool, input, reason) and read y/n from
 * stdin; off a terminal, return undefined so scripts never hang on a question.
 */
export async function askApprovals(
  _pending: readonly PendingToolCall[],
  _context: { terminal: Terminal; signal: AbortSignal },
): Promise<ApprovalDecisions | undefined> {
  return undefined;
}
