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
  /** Types on the terminal ("\u0003" is Ctrl-C, "\r" is Enter). */
  type(text: string): void;
  waitFor(text: string): Promise<void>;
  exited: Promise<{ code: number | null; screen: string }>;
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
  const waiters: { text: string; resolve: () => void }[] = [];
  const check = () => {
    for (const waiter of waiters.slice()) {
      if (!screen.includes(waiter.text)) continue;
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
  const exited = new Promise<{ code: number | null; screen: string }>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      if (errors) screen += `\n[pty-run stderr] ${errors}`;
      resolve({ code, screen });
    });
  });
  const waitFor = (text: string) =>
    new Promise<void>((resolve, reject) => {
      waiters.push({ text, resolve });
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
      return Number(/\[pty-run pid (\d+)\]/.exec(screen)![1]);
    },
    type(text) {
      child.stdin!.write(text);
    },
    waitFor,
    exited,
  };
}
