/**
 * The `skein` command on a pseudo-terminal (test/cli/pty-run.py): what a user at a terminal
 * types and sees, with stdin a terminal or a pipe, with or without a controlling terminal.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { join } from "node:path";
import { BUILT_ENTRY, cleanEnv, ROOT } from "./helpers.ts";

const PTY_RUN = join(ROOT, "test/cli/pty-run.py");

/** python3 runs the pseudo-terminal; say so plainly when it is missing, rather than skip. */
export function requirePython(): void {
  try {
    execFileSync("python3", ["-c", "import pty, termios"], { stdio: "ignore" });
  } catch {
    throw new Error("the terminal tests need python3 (with its pty and termios modules)");
  }
}

export interface TerminalCli {
  child: ChildProcess;
  /** What the terminal showed so far, "\r\n" read as "\n". */
  readonly screen: string;
  /** The pid of the `skein` process itself (not of the pty runner). */
  pid(): Promise<number>;
  /**
   * The terminal's mode now, as stty says it: "echo icanon isig" in cooked mode, "-echo -icanon
   * -isig" in raw mode.
   */
  mode(): Promise<string>;
  /** Types on the terminal ("\u0003" is Ctrl-C, "\r" is Enter). */
  type(text: string): void;
  /** Resolves once the screen shows `text` (at or after the screen's offset `from`). */
  waitFor(text: string, from?: number): Promise<void>;
  /** `mode`: the terminal's mode once the command was gone. */
  exited: Promise<{ code: number | null; screen: string; mode: string }>;
}

export function startOnTerminal(
  args: string[],
  options: {
    env?: Record<string, string | undefined>;
    cwd: string;
    /** Piped into the command's stdin (a prompt piped in on a terminal). */
    stdin?: string;
    /** No controlling terminal: /dev/tty cannot be opened. */
    noControllingTerminal?: boolean;
  },
): TerminalCli {
  const flags = [
    ...(options.stdin !== undefined ? ["--stdin", options.stdin] : []),
    ...(options.noControllingTerminal ? ["--no-ctty"] : []),
  ];
  // The built command (test/support/global-setup.ts builds it when the sources are newer).
  const command = [process.execPath, BUILT_ENTRY, ...args];
  const child = spawn("python3", [PTY_RUN, ...flags, "--", ...command], {
    cwd: options.cwd,
    // A terminal a user would have: not CI (which never asks), no colors to strip.
    env: cleanEnv({ TERM: "xterm-256color", CI: undefined, NO_COLOR: "1", ...options.env }),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let screen = "";
  let errors = "";
  const waiters: { text: string; from: number; resolve: () => void }[] = [];
  const check = () => {
    for (const waiter of waiters.slice()) {
      if (!screen.includes(waiter.text, waiter.from)) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    screen += chunk.replaceAll("\r\n", "\n");
    check();
  });
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    errors += chunk;
  });
  const exited = new Promise<{ code: number | null; screen: string; mode: string }>(
    (resolve, reject) => {
      child.on("error", reject);
      child.on("close", (code) => {
        const last = /\n\[pty-run mode ([^\]]*)\]\n$/.exec(screen);
        if (last) screen = screen.slice(0, last.index);
        if (errors) screen += `\n[pty-run stderr] ${errors}`;
        resolve({ code, screen, mode: last?.[1] ?? "unknown" });
      });
    },
  );
  const waitFor = (text: string, from = 0) =>
    new Promise<void>((resolve, reject) => {
      waiters.push({ text, from, resolve });
      check();
      exited.then(
        (result) =>
          reject(
            new Error(
              `the CLI exited (${result.code}) before the terminal showed ${JSON.stringify(text)}:\n${result.screen}`,
            ),
          ),
        reject,
      );
    });
  return {
    child,
    get screen() {
      return screen;
    },
    async pid() {
      await waitFor("[pty-run pid ");
      return Number(/\[pty-run pid (\d+) /.exec(screen)![1]);
    },
    async mode() {
      await waitFor("[pty-run pid ");
      const tty = /\[pty-run pid \d+ tty ([^\]]+)\]/.exec(screen)![1]!;
      return execFileSync("python3", [PTY_RUN, "--mode-of", tty], { encoding: "utf8" }).trim();
    },
    type(text) {
      child.stdin!.write(text);
    },
    waitFor,
    exited,
  };
}

const ESC = "\u001b";
/** A control sequence (CSI: its parameters and command), another escape, or one character. */
const TOKENS = new RegExp(`${ESC}\\[([?\\d;]*)([@-~])|${ESC}[^[]|[^]`, "gu");

/**
 * The lines the terminal shows once everything was drawn: the screen's text with carriage
 * returns, line erasures and cursor moves applied (a spinner redraws its line in place), and
 * other escape sequences (colors, cursor visibility) left out.
 */
export function visibleLines(screen: string): string[] {
  const rows: string[][] = [[]];
  let row = 0;
  let column = 0;
  const line = () => {
    while (rows.length <= row) rows.push([]);
    return rows[row]!;
  };
  for (const [token, parameters = "", command = ""] of screen.matchAll(TOKENS)) {
    const n = Number(parameters || "1");
    if (token === "\r") column = 0;
    else if (token === "\n") {
      row++;
      column = 0;
    } else if (token === "\b") column = Math.max(0, column - 1);
    else if (command === "A") row = Math.max(0, row - n);
    else if (command === "B") row += n;
    else if (command === "C") column += n;
    else if (command === "D") column = Math.max(0, column - n);
    else if (command === "G") column = n - 1;
    else if (command === "K") {
      const current = line();
      if (parameters === "" || parameters === "0")
        current.length = Math.min(current.length, column);
      else if (parameters === "1") current.fill(" ", 0, column + 1);
      else current.length = 0;
    } else if (!token.startsWith(ESC)) {
      const current = line();
      while (current.length < column) current.push(" ");
      current[column++] = token;
    }
  }
  return rows.map((cells) => cells.join("").trimEnd());
}
