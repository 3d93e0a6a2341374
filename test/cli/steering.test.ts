/**
 * Steering from the terminal: while a run streams on a (pseudo-)terminal, a line typed and ended
 * with Enter is sent to the run; the model sees it at the next call boundary.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type MockServer, mockServer } from "skein/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { anthropicReply, anthropicText, event, writeSse } from "../providers/raw-server.ts";
import { closeRawServers, rawServer } from "../support/servers.ts";
import { requirePython, startOnTerminal, visibleLines } from "./terminal-helpers.ts";

let server: MockServer | undefined;
let cwd: string;
beforeAll(() => {
  requirePython();
  cwd = mkdtempSync(join(tmpdir(), "skein-cli-steer-"));
});
afterAll(() => rmSync(cwd, { recursive: true, force: true }));
afterEach(async () => {
  await server?.close();
  server = undefined;
  await closeRawServers();
});

describe("a line typed while the run streams", () => {
  it("steers the run: the running command finishes, the model then sees the line", async () => {
    server = await mockServer({
      script: [
        {
          toolCalls: [
            {
              id: "b1",
              name: "Bash",
              // Runs until the test has typed its line (bounded, so a failure cannot hang).
              input: {
                command:
                  "for i in $(seq 1 200); do [ -e steered ] && break; sleep 0.1; done; echo waited",
              },
            },
          ],
        },
        { text: "Switching to the short report." },
      ],
    });
    const cli = startOnTerminal(["--allow", "Bash", "write", "the", "long", "report"], {
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" },
      cwd,
    });
    await cli.waitFor("Bash");
    cli.type("make it the short report\r");
    await cli.waitFor("steering: make it the short report");
    // Let the command end now that the line is in.
    writeFileSync(join(cwd, "steered"), "");
    const { code, screen } = await cli.exited;
    expect(code, screen).toBe(0);
    expect(screen).toContain("Switching to the short report.");
    expect(server.requests).toHaveLength(2);
    const sent = JSON.stringify(server.requests[1]!.body.messages.at(-1));
    // One user turn on the Anthropic wire: the command's result, then the typed line.
    expect(sent).toContain("waited");
    expect(sent).toContain("make it the short report");
  }, 120_000);
});

/** A promise the test settles when it is ready. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

const START = { message: { usage: { input_tokens: 1, output_tokens: 0 } } };

/** An Anthropic text block that starts with `text` and is not over yet. */
function textStart(text: string): string {
  return anthropicText(0, text).slice(0, 2).join("");
}

/** The visible lines that hold `text`, other than the `steering:` and `not sent:` lines. */
function shownOutside(screen: string, text: string): string[] {
  return visibleLines(screen).filter(
    (line) =>
      line.includes(text) && !line.startsWith("steering: ") && !line.startsWith("not sent: "),
  );
}

describe("keys typed while the run streams (raw mode: never echoed into the output)", () => {
  it("stay out of the answer, show in the status line only, edit, and each line steers the next request", async () => {
    const rest = gate();
    const second = gate();
    const raw = await rawServer((_request, response) => {
      const index = raw.requests.length - 1;
      if (index === 0) {
        // The answer's text starts, then waits for the test: it streams while the test types.
        writeSse(
          response,
          event("message_start", START) + textStart("Part one of the answer"),
          false,
        );
        void rest.opened.then(() =>
          response.end(
            [
              event("content_block_delta", {
                index: 0,
                delta: { type: "text_delta", text: " and part two." },
              }),
              event("content_block_stop", { index: 0 }),
              event("message_delta", {
                delta: { stop_reason: "end_turn" },
                usage: { output_tokens: 1 },
              }),
              event("message_stop", {}),
            ].join(""),
          ),
        );
      } else if (index === 1)
        // The steered request waits too: the status line shows while the test types.
        void second.opened.then(() =>
          writeSse(response, anthropicReply(anthropicText(0, "Noted."))),
        );
      else writeSse(response, anthropicReply(anthropicText(0, "All done.")));
    });
    const cli = startOnTerminal(["write", "the", "report"], {
      env: { ANTHROPIC_BASE_URL: raw.url, ANTHROPIC_API_KEY: "test-key" },
      cwd,
    });
    await cli.waitFor("Part one of the answer");
    // While the run streams the terminal is in raw mode: it echoes nothing.
    expect(await cli.mode()).toBe("-echo -icanon -isig");
    cli.type("keep it short\r");
    await cli.waitFor("steering: keep it short");
    // Nothing of it was shown before it was sent: not after the answer's text, not anywhere.
    const beforeSent = cli.screen.slice(0, cli.screen.indexOf("steering: keep it short"));
    expect(beforeSent).not.toContain("keep it");
    // Typed while the text streams: kept, and shown once the status line is back.
    cli.type("and fun");
    rest.open();
    await cli.waitFor("› and fun");
    // Backspace, arrows and other escape sequences (not text), Ctrl-D (ignored), a multi-byte
    // character, a format character (shown escaped).
    cli.type("\u007f\u007f\u007fgames\u001b[D\u001bOA\u001b[15~\u0004 ☃\u200b");
    await cli.waitFor("› and games ☃\\u200b");
    cli.type("\r");
    await cli.waitFor("steering: and games ☃\\u200b");
    // Ctrl-U erases the line: Enter then sends nothing.
    cli.type("zzz\u0015\r");
    // A paste of several lines: each line is a steering message.
    cli.type("line one\nline two\r");
    await cli.waitFor("steering: line two");
    second.open();
    const { code, screen, mode } = await cli.exited;
    expect(code, screen).toBe(0);
    expect(mode).toBe("echo icanon isig");
    // The answer's lines as they stay on the screen: nothing typed in them.
    const visible = visibleLines(screen);
    expect(visible, screen).toContain("Part one of the answer");
    expect(visible, screen).toContain(" and part two.");
    expect(visible, screen).toContain("Noted.");
    expect(visible, screen).toContain("All done.");
    for (const typed of ["keep it", "and fun", "games", "zzz", "line one", "line two"])
      expect(shownOutside(screen, typed), typed).toEqual([]);
    expect(visible.filter((line) => line.startsWith("steering: "))).toEqual([
      "steering: keep it short",
      "steering: and games ☃\\u200b",
      "steering: line one",
      "steering: line two",
    ]);
    expect(screen).not.toContain("not sent");
    // Each line reached the model in the request after it was typed.
    expect(raw.requests).toHaveLength(3);
    const steered = raw.requests.map((request) => JSON.stringify(request.body.messages.at(-1)));
    expect(steered[1]).toContain("keep it short");
    for (const line of ["and games ☃\u200b", "line one", "line two"])
      expect(steered[2]).toContain(line);
    expect(steered.join()).not.toContain("zzz");
    expect(steered.join()).not.toContain("[D");
  }, 120_000);

  it("Ctrl-C is an interrupt (exit 130); what was typed and not sent is said; cooked mode after", async () => {
    const raw = await rawServer((_request, response) => {
      // The answer starts and never ends: only the interrupt stops it.
      writeSse(response, event("message_start", START) + textStart("Thinking out loud"), false);
    });
    const cli = startOnTerminal(["write", "the", "report"], {
      env: { ANTHROPIC_BASE_URL: raw.url, ANTHROPIC_API_KEY: "test-key" },
      cwd,
    });
    await cli.waitFor("Thinking out loud");
    expect(await cli.mode()).toBe("-echo -icanon -isig");
    cli.type("half a thought\u0003");
    const { code, screen, mode } = await cli.exited;
    expect(code, screen).toBe(130);
    expect(screen).toContain("skein: interrupted.");
    expect(visibleLines(screen)).toContain("not sent: half a thought");
    expect(shownOutside(screen, "half a thought")).toEqual([]);
    expect(mode).toBe("echo icanon isig");
    expect(raw.requests).toHaveLength(1);
  }, 120_000);

  it("stop while an approval is asked: the answer goes to the question, the typed line waits and is sent after", async () => {
    const first = gate();
    server = await mockServer({
      async script({ index }) {
        if (index > 0) return { text: "Wrote it." };
        // The first answer waits for the test: the status line shows while it types.
        await first.opened;
        return {
          toolCalls: [
            { id: "w1", name: "Write", input: { file_path: "notes.txt", content: "hi\n" } },
          ],
        };
      },
    });
    const cli = startOnTerminal(["write", "notes"], {
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" },
      cwd,
    });
    await cli.waitFor("waiting for the model");
    cli.type("kept across the question");
    await cli.waitFor("› kept across the question");
    first.open();
    await cli.waitFor("allow? [y/N]");
    const asked = cli.screen.length;
    cli.type("y\r");
    // The question's answer is not steering: the typed line comes back as it was.
    await cli.waitFor("› kept across the question", asked);
    cli.type("\r");
    await cli.waitFor("steering: kept across the question");
    const { code, screen, mode } = await cli.exited;
    expect(code, screen).toBe(0);
    expect(mode).toBe("echo icanon isig");
    expect(readFileSync(join(cwd, "notes.txt"), "utf8")).toBe("hi\n");
    expect(screen).toContain("Wrote it.");
    expect(shownOutside(screen, "kept across")).toEqual([]);
    // The typed line goes with the turn after the Write when it is sent before that turn's request,
    // or as a follow-up turn of its own when the machine is slow to type it (seen at load 15).
    expect(server.requests.length).toBeGreaterThanOrEqual(2);
    expect(server.requests.length).toBeLessThanOrEqual(3);
    const steered = server.requests.at(-1)!.body.messages.at(-1).content;
    expect(JSON.stringify(steered)).toContain('"kept across the question"');
  }, 120_000);
});
