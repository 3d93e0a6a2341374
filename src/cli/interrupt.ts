/** Ctrl-C (SIGINT) and SIGTERM while a run is going on. */
export interface Interrupts {
  /** Aborted by the first signal: the run stops, started tools settle, queued ones never start. */
  readonly signal: AbortSignal;
  /** 130 after SIGINT, 143 after SIGTERM (128 + the signal's number); undefined before any. */
  readonly exitCode: number | undefined;
  dispose(): void;
}

const EXIT_CODES: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 130, SIGTERM: 143 };

/**
 * The first signal aborts the run through its signal and calls `onFirst` (to say what is
 * happening); a second one exits at once, without waiting for the tools.
 */
export function watchInterrupts(onFirst: () => void): Interrupts {
  const controller = new AbortController();
  let exitCode: number | undefined;
  const handler = (signal: NodeJS.Signals) => {
    if (exitCode !== undefined) process.exit(exitCode);
    exitCode = EXIT_CODES[signal] ?? 130;
    onFirst();
    controller.abort(new Error(`Interrupted by ${signal}.`));
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
  return {
    signal: controller.signal,
    get exitCode() {
      return exitCode;
    },
    dispose() {
      process.off("SIGINT", handler);
      process.off("SIGTERM", handler);
    },
  };
}
