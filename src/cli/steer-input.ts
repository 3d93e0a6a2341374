// While a run streams on a terminal, each line the user types (ended with Enter) steers it.

import { createInterface, type Interface } from "node:readline";
import { RunEndedError } from "../core/errors.ts";
import type { Steering } from "../index.ts";

/**
 * Listens on `input` (a TTY) in cooked mode: the terminal echoes and edits the line, and Ctrl-C
 * stays a signal. Returns the function that stops listening (before a question takes the
 * terminal, and at the end of the run).
 */
export function steerFromLines(
  input: NodeJS.ReadableStream & { isTTY?: boolean },
  run: Steering,
  onSteer: (line: string) => void,
): () => void {
  if (input.isTTY !== true) return () => {};
  const lines: Interface = createInterface({ input, terminal: false });
  lines.on("line", (line) => {
    const text = line.trim();
    if (text === "") return;
    try {
      run.steer(text);
      onSteer(text);
    } catch (error) {
      // The run ended as the line came in: nothing is left to steer.
      if (!(error instanceof RunEndedError)) throw error;
    }
  });
  return () => lines.close();
}
