import { createInterface } from "node:readline/promises";
import type { PendingToolCall, PermissionResult } from "../index.ts";
import type { Terminal } from "./terminal.ts";

/** What `agent.resume` takes: call id -> `true`, `false`, or a permission result. */
export type ApprovalDecisions = Record<string, PermissionResult>;

/**
 * A run paused because tool calls wait for approval (`pending` with `reason: "approval"`). On an
 * interactive terminal with a readable stdin, each call is shown (tool, input, why it asks) and
 * answered y/n; the run resumes with the answers. Anywhere else this returns undefined and the
 * command ends with the paused result, so scripts never hang on a question.
 */
export async function askApprovals(
  pending: readonly PendingToolCall[],
  context: {
    terminal: Terminal;
    signal: AbortSignal;
    input?: NodeJS.ReadableStream & { isTTY?: boolean };
  },
): Promise<ApprovalDecisions | undefined> {
  const input = context.input ?? process.stdin;
  if (!context.terminal.interactive || input.isTTY !== true) return undefined;
  const { colors } = context.terminal;
  const questions = createInterface({
    input,
    output: context.terminal.stderr as NodeJS.WritableStream,
  });
  const decisions: ApprovalDecisions = {};
  try {
    for (const call of pending) {
      if (call.reason !== "approval") continue;
      context.terminal.stderr.write(
        `${colors.yellow("approval")} ${colors.bold(call.name)} ${summarise(call.input)}\n${colors.dim(`  (${call.approvalReason ?? "asks by default"})`)}\n`,
      );
      const answer = await questions.question("  allow? [y/N] ", { signal: context.signal });
      decisions[call.id] = /^y(es)?$/i.test(answer.trim())
        ? true
        : { behavior: "deny", message: "The user declined this call." };
    }
  } catch {
    // Interrupted while asking: no decisions, the paused result stands.
    return undefined;
  } finally {
    questions.close();
  }
  return decisions;
}

function summarise(input: unknown): string {
  const text = JSON.stringify(input) ?? "";
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
