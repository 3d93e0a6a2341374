import { createInterface } from "node:readline/promises";
import type { PendingToolCall, PermissionResult } from "../index.ts";
import { openControllingTerminal, type Terminal, type TerminalInput } from "./terminal.ts";

/** What `agent.resume` takes: call id -> `true`, `false`, or a permission result. */
export type ApprovalDecisions = Record<string, PermissionResult>;

/** How asking went: answered, not asked (and why, for the user), or interrupted by Ctrl-C. */
export type ApprovalOutcome =
  | { kind: "answered"; decisions: ApprovalDecisions }
  | { kind: "unasked"; why?: string }
  | { kind: "interrupted" };

export interface ApprovalContext {
  terminal: Terminal;
  /** The run's interrupt signal: once aborted, the question ends. */
  signal: AbortSignal;
  /** Ctrl-C typed at the question (a byte in raw mode, not a signal): interrupt as SIGINT would. */
  onInterrupt: () => void;
  /** Where answers come from; stdin by default. */
  input?: NodeJS.ReadableStream & { isTTY?: boolean };
  /** The terminal to ask on when `input` is not one; /dev/tty by default. */
  openTerminal?: () => TerminalInput | { unavailable: string };
}

/** The terminal's input ended (Ctrl-D) while a question waited. */
class InputEnded extends Error {}

/**
 * A run paused because tool calls wait for approval (`pending` with `reason: "approval"`). On an
 * interactive terminal each call is shown (tool, input, why it asks) and answered y/n, read from
 * stdin or, when the prompt came through a pipe, from the controlling terminal (/dev/tty); the
 * run resumes with the answers. Anywhere else nothing is asked and the command ends with the
 * paused result, so scripts never hang on a question. Ctrl-C at the question interrupts.
 */
export async function askApprovals(
  pending: readonly PendingToolCall[],
  context: ApprovalContext,
): Promise<ApprovalOutcome> {
  if (!context.terminal.interactive) return { kind: "unasked" };
  if (context.signal.aborted) return { kind: "interrupted" };
  let input = context.input ?? process.stdin;
  let opened: TerminalInput | undefined;
  if (input.isTTY !== true) {
    const tty = (context.openTerminal ?? openControllingTerminal)();
    if ("unavailable" in tty) return { kind: "unasked", why: tty.unavailable };
    opened = tty;
    input = tty.input;
  }
  const { colors } = context.terminal;
  // On a terminal (stderr is one) readline reads in raw mode: Ctrl-C arrives as a keypress,
  // which it reports as "SIGINT" below, not as a signal.
  const questions = createInterface({
    input,
    output: context.terminal.stderr as NodeJS.WritableStream,
  });
  let asking = true;
  const ended = new Promise<never>((_, reject) =>
    questions.once("close", () => {
      if (asking) reject(new InputEnded());
    }),
  );
  ended.catch(() => {}); // raced below; unobserved when every question is answered
  questions.on("SIGINT", context.onInterrupt);
  const decisions: ApprovalDecisions = {};
  try {
    for (const call of pending) {
      if (call.reason !== "approval") continue;
      context.terminal.stderr.write(
        `${colors.yellow("approval")} ${colors.bold(printable(call.name))} ${printable(call.input)}\n${colors.dim(`  (${printable(call.approvalReason ?? "asks by default")})`)}\n`,
      );
      const answer = await Promise.race([
        questions.question("  allow? [y/N] ", { signal: context.signal }),
        ended,
      ]);
      decisions[call.id] = /^y(es)?$/i.test(answer.trim())
        ? true
        : { behavior: "deny", message: "The user declined this call." };
    }
  } catch (error) {
    if (context.signal.aborted) return { kind: "interrupted" };
    // The paused result stands, with why nothing was decided.
    return {
      kind: "unasked",
      why:
        error instanceof InputEnded
          ? "the terminal's input ended before an answer"
          : `the question failed: ${error instanceof Error ? error.message : String(error)}`,
    };
  } finally {
    asking = false;
    questions.close();
    opened?.close();
  }
  return { kind: "answered", decisions };
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
