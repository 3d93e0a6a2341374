import { closeSync, openSync } from "node:fs";
import { isatty, ReadStream } from "node:tty";
import pc from "picocolors";
import { printable } from "./format.ts";

export type Colors = ReturnType<typeof pc.createColors>;

/** A stream the CLI writes to, as much of `process.stdout` as it needs. */
export interface OutputStream {
  write(text: string): boolean;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

/**
 * Where the command writes. The answer goes to `stdout` (or, with `--json`, the events); every
 * other line (tool calls, progress, usage, errors, the demo's label) goes to `stderr`, so
 * `skein "..." > answer.txt` keeps only the answer.
 */
export interface Terminal {
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  /** `stderr` is a terminal a spinner can redraw: a TTY, `TERM` not "dumb", not under CI. */
  readonly interactive: boolean;
  /** Colors for `stderr`: on for a TTY unless `NO_COLOR` is set, or forced with `FORCE_COLOR`. */
  readonly colors: Colors;
}

export function processTerminal(env: NodeJS.ProcessEnv = process.env): Terminal {
  const stderr = process.stderr;
  const interactive = stderr.isTTY === true && env.TERM !== "dumb" && !("CI" in env);
  const colorful =
    env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "0"
      ? true
      : stderr.isTTY === true && env.NO_COLOR === undefined && env.TERM !== "dumb";
  return { stdout: process.stdout, stderr, interactive, colors: pc.createColors(colorful) };
}

/**
 * One line of the command's own on `stderr`, such as `skein: could not reach ...`; escaped, as
 * it may quote what a model, a server or a session log said.
 */
export function printError(terminal: Terminal, message: string): void {
  terminal.stderr.write(`${terminal.colors.red("skein:")} ${printable(message)}\n`);
}

/** Where questions are read from: a terminal, closed when the questions are over. */
export interface TerminalInput {
  readonly input: NodeJS.ReadableStream & { isTTY?: boolean };
  close(): void;
}

/**
 * The process's controlling terminal, for questions when stdin is not one (the prompt came
 * through a pipe: `git diff | skein "review this"`); or, when there is none, why not.
 */
export function openControllingTerminal(): TerminalInput | { unavailable: string } {
  let fd: number;
  try {
    fd = openSync("/dev/tty", "r");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    const why = code === "ENXIO" ? "ENXIO: the process has no controlling terminal" : code;
    return { unavailable: `stdin is not a terminal and /dev/tty cannot be opened (${why})` };
  }
  if (!isatty(fd)) {
    closeSync(fd);
    return { unavailable: "stdin is not a terminal and /dev/tty is not one either" };
  }
  const input = new ReadStream(fd);
  // Closing the stream closes the descriptor it was given.
  return { input, close: () => input.destroy() };
}
