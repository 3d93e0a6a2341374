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
        `${colors.yellow("approval")} ${colors.bold(printable(call.name))} ${printable(call.input)}\n${colors.dim(`  (${printable(call.approvalReason ?? "asks by default")})`)}\n`,
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

/**
 * The whole input, never cut (what is approved must be seen in full: a harmless head can hide a
 * dangerous tail), with control and format characters escaped so the model's text cannot move
 * the cursor or redraw the question.
 */
export function printable(value: unknown): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  return text.replace(
    /[\p{Cc}\p{Cf}]/gu,
    (char) => `\\u${char.codePointAt(0)!.toString(16).padStart(4, "0")}`,
  );
}
