/** What stops a run from outside: Ctrl-C (SIGINT), SIGTERM, or a reader of stdout that went away. */
export interface Interrupts {
  /** Aborted by the first interrupt: the run stops, started tools settle, queued ones never start. */
  readonly signal: AbortSignal;
  /** 130 after SIGINT, 143 after SIGTERM, 141 after a closed pipe (128 + the signal's number). */
  readonly exitCode: number | undefined;
  /** The reader of stdout went away (`skein --json ... | head -1`): nothing more to say. */
  readonly pipeClosed: boolean;
  /**
   * An interrupt that came as input, not as a signal: Ctrl-C read as a byte while a question
   * holds the terminal in raw mode. Handled as that signal would be.
   */
  interrupt(signal: NodeJS.Signals): void;
  dispose(): void;
}

const EXIT_CODES: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 130, SIGTERM: 143 };
const SIGPIPE_EXIT_CODE = 141;

/**
 * The first signal aborts the run through its signal and calls `onSignal` (to say what is
 * happening); a second one exits at once, without waiting for the tools. A closed stdout (EPIPE)
 * aborts the run quietly.
 */
export function watchInterrupts(
  onSignal: () => void,
  stdout: NodeJS.EventEmitter = process.stdout,
): Interrupts {
  const controller = new AbortController();
  let exitCode: number | undefined;
  let pipeClosed = false;
  const onProcessSignal = (signal: NodeJS.Signals) => {
    if (exitCode !== undefined) process.exit(exitCode);
    exitCode = EXIT_CODES[signal] ?? 130;
    onSignal();
    controller.abort(new Error(`Interrupted by ${signal}.`));
  };
  const onStdoutError = (error: NodeJS.ErrnoException) => {
    // Later writes to the closed stream fail too; only the first one matters.
    if (error.code !== "EPIPE" || pipeClosed) return;
    pipeClosed = true;
    exitCode ??= SIGPIPE_EXIT_CODE;
    controller.abort(new Error("The reader of stdout went away."));
  };
  process.on("SIGINT", onProcessSignal);
  process.on("SIGTERM", onProcessSignal);
  stdout.on("error", onStdoutError);
  return {
    signal: controller.signal,
    get exitCode() {
      return exitCode;
    },
    get pipeClosed() {
      return pipeClosed;
    },
    interrupt: onProcessSignal,
    dispose() {
      process.off("SIGINT", onProcessSignal);
      process.off("SIGTERM", onProcessSignal);
      stdout.off("error", onStdoutError);
    },
  };
}
