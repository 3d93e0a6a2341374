import { createInterface } from "node:readline/promises";
import type { PendingToolCall, PermissionResult } from "../index.ts";
import { printable } from "./format.ts";
import { openControllingTerminal, type Terminal, type TerminalInput } from "./terminal.ts";

// Kept importable from here, where the approval prompt first needed it.
export { printable };

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
  const { colors } = context.terminal;
  const asked = pending.filter((call) => call.reason === "approval");
  const outcome = await askYesNo(
    asked.map((call) => ({
      shown: `${colors.yellow("approval")} ${colors.bold(printable(call.name))} ${printable(call.input)}\n${colors.dim(`  (${printable(call.approvalReason ?? "asks by default")})`)}\n`,
      question: "  allow? [y/N] ",
    })),
    context,
  );
  if (outcome.kind !== "answered") return outcome;
  const decisions: ApprovalDecisions = {};
  asked.forEach((call, index) => {
    decisions[call.id] = outcome.answers[index]
      ? true
      : { behavior: "deny", message: "The user declined this call." };
  });
  return { kind: "answered", decisions };
}

/** How a round of yes/no questions went. */
export type AskOutcome =
  | { kind: "answered"; answers: boolean[] }
  | { kind: "unasked"; why?: string }
  | { kind: "interrupted" };

/**
 * Asks each question on the terminal (stdin, or /dev/tty when stdin is a pipe), "y" or "yes"
 * meaning yes and anything else no; off an interactive terminal nothing is asked. Ctrl-C
 * interrupts; input that ends first leaves every question unanswered.
 */
export async function askYesNo(
  questions: readonly { shown: string; question: string }[],
  context: ApprovalContext,
): Promise<AskOutcome> {
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
  // On a terminal (stderr is one) readline reads in raw mode: Ctrl-C arrives as a keypress,
  // which it reports as "SIGINT" below, not as a signal.
  const reader = createInterface({
    input,
    output: context.terminal.stderr as NodeJS.WritableStream,
  });
  let asking = true;
  const ended = new Promise<never>((_, reject) =>
    reader.once("close", () => {
      if (asking) reject(new InputEnded());
    }),
  );
  ended.catch(() => {}); // raced below; unobserved when every question is answered
  reader.on("SIGINT", context.onInterrupt);
  const answers: boolean[] = [];
  try {
    for (const { shown, question } of questions) {
      context.terminal.stderr.write(shown);
      const answer = await Promise.race([
        reader.question(question, { signal: context.signal }),
        ended,
      ]);
      answers.push(/^y(es)?$/i.test(answer.trim()));
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
    reader.close();
    opened?.close();
  }
  return { kind: "answered", answers };
}
