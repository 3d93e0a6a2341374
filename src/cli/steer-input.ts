// While a run streams on a terminal, what the user types steers it. The keys are read one by one
// with the terminal in raw mode (no echo), so a typed line never lands inside the answer or the
// status line: the renderer shows it, in the status line only.

import { emitKeypressEvents } from "node:readline";
import { RunEndedError } from "../core/errors.ts";
import type { Steering } from "../index.ts";

/** A terminal's input: as much of `process.stdin` (a `tty.ReadStream`) as steering needs. */
export type KeyInput = NodeJS.ReadableStream & {
  isTTY?: boolean;
  setRawMode?: (mode: boolean) => unknown;
};

/** What readline's keypress decoder reports for a key or an escape sequence. */
interface Key {
  sequence?: string;
  name?: string;
  ctrl?: boolean;
  meta?: boolean;
}

export interface SteerCallbacks {
  /** The line being typed changed (shown in the status line; "" once sent or erased). */
  draft(text: string): void;
  /** A line was sent to the run. */
  sent(line: string): void;
  /** A line the run refused for another reason than having ended; it stays in the draft. */
  notSent(line: string, why: string): void;
  /** Ctrl-C: a byte in raw mode, not a signal; handled as SIGINT would be. */
  interrupt(): void;
}

/** Stops the process as Ctrl-Z does in cooked mode (job control); overridable for tests. */
export type Suspend = () => void;

const suspendProcess: Suspend = () => {
  // Windows has no job control: Ctrl-Z there is nothing.
  if (process.platform !== "win32") process.kill(process.pid, "SIGTSTP");
};

/**
 * The line being typed, across the stretches of one command: kept while a question holds the
 * terminal and shown again when the run goes on. Enter sends it (`run.steer`); Backspace, Ctrl-U
 * and Ctrl-W edit it; Ctrl-C interrupts; Ctrl-Z suspends; other control keys and escape sequences
 * (arrows, function keys) are not text and are ignored. A pasted text of several lines sends each
 * line.
 */
export class TerminalSteering {
  readonly #input: KeyInput;
  readonly #callbacks: SteerCallbacks;
  readonly #suspend: Suspend;
  #draft = "";
  /** The draft the renderer last showed: a paste of many keys redraws it once, not per key. */
  #shown = "";
  #showing = false;
  #listening: { run: Steering; raw: (on: boolean) => void } | undefined;

  constructor(input: KeyInput, callbacks: SteerCallbacks, suspend: Suspend = suspendProcess) {
    this.#input = input;
    this.#callbacks = callbacks;
    this.#suspend = suspend;
  }

  /** What was typed and not sent (the command reports it when the run is over). */
  get unsent(): string {
    return this.#draft.trim();
  }

  /**
   * Reads keys for `run` in raw mode until the returned function is called: before a question
   * takes the terminal, and when the stream ends or fails. It puts the terminal back in cooked
   * mode; so does the process's exit. Off a terminal nothing is read.
   */
  listen(run: Steering): () => void {
    const input = this.#input;
    const setRawMode = input.setRawMode?.bind(input);
    if (input.isTTY !== true || setRawMode === undefined) return () => {};
    const raw = (on: boolean) => {
      try {
        setRawMode(on);
      } catch {
        // The terminal went away (hung up): there is no mode left to set.
      }
    };
    const restore = () => raw(false);
    const onKey = (_text: string | undefined, key: Key | undefined) => {
      if (key) this.#key(key);
    };
    // Back from Ctrl-Z (`fg`): the shell left the terminal in cooked mode.
    const onContinue = () => raw(true);
    this.#listening = { run, raw };
    emitKeypressEvents(input);
    input.on("keypress", onKey);
    process.on("exit", restore);
    process.on("SIGCONT", onContinue);
    raw(true);
    input.resume();
    // A line kept from before a question is shown again.
    if (this.#draft !== "") this.#show();
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      this.#listening = undefined;
      input.off("keypress", onKey);
      process.off("SIGCONT", onContinue);
      input.pause();
      restore();
      process.off("exit", restore);
    };
  }

  #key(key: Key): void {
    const { name, ctrl = false, meta = false, sequence = "" } = key;
    if (ctrl && name === "c") this.#callbacks.interrupt();
    else if (ctrl && name === "z") this.#stop();
    else if (name === "return" || name === "enter") this.#send();
    else if (name === "backspace") this.#edit(meta ? dropWord(this.#draft) : dropChar(this.#draft));
    else if (ctrl && name === "u") this.#edit("");
    else if (ctrl && name === "w") this.#edit(dropWord(this.#draft));
    // A tab in a one-line message is a space (it could not be shown as one in the status line).
    else if (name === "tab") this.#edit(`${this.#draft} `);
    else if (!ctrl && !meta && sequence !== "" && !/\p{Cc}/u.test(sequence))
      this.#edit(this.#draft + sequence);
    // Anything else (Ctrl-D, Escape, arrows and other escape sequences) is not text.
  }

  #edit(draft: string): void {
    this.#draft = draft;
    // The keys of one read (a paste) are decoded in one go: the line is drawn once after them.
    if (this.#showing) return;
    this.#showing = true;
    queueMicrotask(() => {
      this.#showing = false;
      if (this.#draft !== this.#shown) this.#show();
    });
  }

  #show(): void {
    this.#shown = this.#draft;
    this.#callbacks.draft(this.#draft);
  }

  #send(): void {
    const line = this.#draft.trim();
    if (this.#listening === undefined) return;
    if (line === "") {
      this.#edit("");
      return;
    }
    try {
      this.#listening.run.steer(line);
    } catch (error) {
      // The run ended as the line came in: kept for the run that follows (after a question), or
      // reported as not sent.
      if (error instanceof RunEndedError) return;
      this.#callbacks.notSent(line, error instanceof Error ? error.message : String(error));
      return;
    }
    // Off the status line before the `steering:` line is written.
    this.#draft = "";
    this.#show();
    this.#callbacks.sent(line);
  }

  /** Ctrl-Z: the terminal goes back to cooked mode for the shell, then the process stops. */
  #stop(): void {
    this.#listening?.raw(false);
    this.#suspend();
  }
}

/** The draft without its last character (a whole code point, not half of a surrogate pair). */
function dropChar(draft: string): string {
  return Array.from(draft).slice(0, -1).join("");
}

/** The draft without its last word, and the spaces after it. */
function dropWord(draft: string): string {
  return draft.replace(/\S*\s*$/u, "");
}
