/**
 * Steering typed on a terminal, key by key (src/cli/steer-input.ts): raw mode only while a run
 * streams, the terminal back in cooked mode when listening stops (a question, the stream's end
 * or failure, the process's exit); what each key does to the line being typed. The real terminal
 * is in steering.test.ts; here the input is a stream that says it is one.
 */
import { PassThrough } from "node:stream";
import { type Agent, RunEndedError, type Steering } from "skein";
import { describe, expect, it } from "vitest";
import { withDraft } from "../../src/cli/render.ts";
import { runAgent } from "../../src/cli/run-agent.ts";
import { TerminalSteering } from "../../src/cli/steer-input.ts";
import { processTerminal, type Terminal } from "../../src/cli/terminal.ts";

/** A terminal's input: records each mode set, as `process.stdin.setRawMode` would set it. */
function ttyInput() {
  const modes: boolean[] = [];
  const input = Object.assign(new PassThrough(), {
    isTTY: true,
    setRawMode(mode: boolean) {
      modes.push(mode);
    },
  });
  return { input, modes };
}

/** A run that records what it was sent; `ended` makes `steer` throw as a finished run's does. */
function fakeRun(ended = false): Steering & { sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    steer(message) {
      if (ended) throw new RunEndedError("steer(): the run has ended (success).");
      sent.push(String(message));
    },
    followUp() {},
  };
}

function steering(input: ReturnType<typeof ttyInput>["input"], suspend = () => {}) {
  const seen = { drafts: [] as string[], sent: [] as string[], notSent: [] as string[], ctrlC: 0 };
  const terminal = new TerminalSteering(
    input,
    {
      draft: (text) => seen.drafts.push(text),
      sent: (line) => seen.sent.push(line),
      notSent: (line, why) => seen.notSent.push(`${line}: ${why}`),
      interrupt: () => seen.ctrlC++,
    },
    suspend,
  );
  return { terminal, seen };
}

/** Keys are decoded as they arrive; let the stream deliver them. */
const typed = () => new Promise((resolve) => setImmediate(resolve));

describe("the terminal's mode", () => {
  it("raw while listening; cooked again once stopped, and the process's exit handler is gone", () => {
    const { input, modes } = ttyInput();
    const exitHandlers = process.listenerCount("exit");
    const stop = steering(input).terminal.listen(fakeRun());
    expect(modes).toEqual([true]);
    expect(process.listenerCount("exit")).toBe(exitHandlers + 1);
    stop();
    stop(); // stopping twice (a question, then the stream's end) sets nothing more
    expect(modes).toEqual([true, false]);
    expect(process.listenerCount("exit")).toBe(exitHandlers);
    expect(input.isPaused()).toBe(true);
  });

  it("an exit while listening (a second Ctrl-C exits at once) puts the terminal back in cooked mode", () => {
    const { input, modes } = ttyInput();
    const before = process.listeners("exit");
    const stop = steering(input).terminal.listen(fakeRun());
    const added = process.listeners("exit").filter((handler) => !before.includes(handler));
    expect(added).toHaveLength(1);
    added[0]!(0);
    expect(modes).toEqual([true, false]);
    stop();
  });

  it("a stream that fails: runAgent stops listening, the terminal is cooked, the error goes on", async () => {
    const { input, modes } = ttyInput();
    const failing = {
      async *[Symbol.asyncIterator]() {
        yield { type: "turn_start" as const, turn: 1 };
        throw new TypeError("the model's stream broke");
      },
      steer() {},
      followUp() {},
    };
    const agent = { stream: () => failing } as unknown as Agent;
    const terminal = {
      ...processTerminal({ NO_COLOR: "1" }),
      interactive: true,
    } satisfies Terminal;
    const renderer = { event() {}, notice() {}, typing() {}, usage() {}, close() {} };
    await expect(
      runAgent({
        agent,
        prompt: "hello",
        logged: false,
        renderer,
        terminal,
        failure: { provider: "anthropic", modelId: "m" },
        input,
      }),
    ).rejects.toThrow("the model's stream broke");
    expect(modes).toEqual([true, false]);
  });

  it("off a terminal nothing is read and no mode is set", () => {
    const { input, modes } = ttyInput();
    input.isTTY = false;
    steering(input).terminal.listen(fakeRun())();
    expect(modes).toEqual([]);
  });

  it("Ctrl-Z: cooked mode for the shell, then the process stops; back in raw mode on SIGCONT", async () => {
    const { input, modes } = ttyInput();
    let suspended = 0;
    const { terminal } = steering(input, () => {
      // The shell gets the terminal in cooked mode.
      expect(modes.at(-1)).toBe(false);
      suspended++;
    });
    const stop = terminal.listen(fakeRun());
    input.write("\u001a");
    await typed();
    expect(suspended).toBe(1);
    process.emit("SIGCONT", "SIGCONT");
    expect(modes).toEqual([true, false, true]);
    stop();
    // Once stopped, a later SIGCONT leaves the terminal alone.
    process.emit("SIGCONT", "SIGCONT");
    expect(modes).toEqual([true, false, true, false]);
  });
});

describe("the keys", () => {
  it("Enter sends the line; Backspace, Ctrl-W and Ctrl-U edit it; escape sequences and Ctrl-D are not text", async () => {
    const { input } = ttyInput();
    const { terminal, seen } = steering(input);
    const run = fakeRun();
    const stop = terminal.listen(run);
    // An emoji is one character for Backspace (not half a surrogate pair).
    input.write("shortx😀");
    await typed();
    expect(seen.drafts.at(-1)).toBe("shortx😀");
    input.write("\u007f\u007f report");
    await typed();
    expect(seen.drafts.at(-1)).toBe("short report");
    const drawn = seen.drafts.length;
    input.write("\u001b[A\u001b[D\u001bOP\u001b[15~\u0004\u001bx");
    await typed();
    expect(seen.drafts).toHaveLength(drawn);
    input.write("\r");
    await typed();
    input.write("drop these words\u0017\u0017\u0017keep\tthis\r");
    input.write("erased\u0015\r");
    input.write("   \r");
    await typed();
    stop();
    expect(run.sent).toEqual(["short report", "keep this"]);
    expect(seen.sent).toEqual(run.sent);
    // Enter on a blank line sends nothing and clears it.
    expect(seen.drafts.at(-1)).toBe("");
    expect(terminal.unsent).toBe("");
  });

  it("a paste of several lines sends each line, whatever ends them", async () => {
    const { input } = ttyInput();
    const { terminal } = steering(input);
    const run = fakeRun();
    const stop = terminal.listen(run);
    input.write("one\ntwo\r\nthree\rfour");
    await typed();
    stop();
    expect(run.sent).toEqual(["one", "two", "three"]);
    expect(terminal.unsent).toBe("four");
  });

  it("a paste of many keys draws the line once, not once per key", async () => {
    const { input } = ttyInput();
    const { terminal, seen } = steering(input);
    const stop = terminal.listen(fakeRun());
    input.write("x".repeat(5000));
    await typed();
    stop();
    expect(seen.drafts).toEqual(["x".repeat(5000)]);
  });

  it("Ctrl-C is an interrupt, not text; the line stays", async () => {
    const { input } = ttyInput();
    const { terminal, seen } = steering(input);
    const run = fakeRun();
    const stop = terminal.listen(run);
    input.write("half\u0003");
    await typed();
    stop();
    expect(seen.ctrlC).toBe(1);
    expect(run.sent).toEqual([]);
    expect(terminal.unsent).toBe("half");
  });

  it("keys after listening stopped (a question holds the terminal) are not read", async () => {
    const { input } = ttyInput();
    const { terminal } = steering(input);
    const run = fakeRun();
    terminal.listen(run)();
    input.write("y\r");
    await typed();
    expect(run.sent).toEqual([]);
    expect(terminal.unsent).toBe("");
  });

  it("a line typed as the run ended is kept, shown again for the run that follows, and sent there", async () => {
    const { input } = ttyInput();
    const { terminal, seen } = steering(input);
    const stop = terminal.listen(fakeRun(true));
    input.write("too late\r");
    await typed();
    stop();
    expect(terminal.unsent).toBe("too late");
    const next = fakeRun();
    const stopNext = terminal.listen(next);
    expect(seen.drafts.at(-1)).toBe("too late");
    input.write("\r");
    await typed();
    stopNext();
    expect(next.sent).toEqual(["too late"]);
  });

  it("a line the run refuses for another reason is said, and kept", async () => {
    const { input } = ttyInput();
    const { terminal, seen } = steering(input);
    const stop = terminal.listen({
      steer() {
        throw new Error("queue full");
      },
      followUp() {},
    });
    input.write("hello\r");
    await typed();
    stop();
    expect(seen.notSent).toEqual(["hello: queue full"]);
    expect(terminal.unsent).toBe("hello");
  });
});

describe("the status line with the line being typed", () => {
  it("fits the width: the end of the typed line stays, the status gives way first", () => {
    expect(withDraft("waiting for the model…", "", 40)).toBe("waiting for the model…");
    expect(withDraft("waiting for the model…", "short", 40)).toBe("waiting for the model… › short");
    const line = withDraft("waiting for the model…", "a very long line that the user types", 40);
    expect(line).toHaveLength(40);
    expect(line).toMatch(/^waiting for … › …ine that the user types$/);
    // Escaped: a format character in a paste cannot reorder or hide what is shown.
    expect(withDraft("thinking…", "a\u202eb", 40)).toBe("thinking… › a\\u202eb");
  });
});
