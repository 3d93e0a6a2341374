/**
 * Steering from the terminal: while a run streams on a (pseudo-)terminal, a line typed and ended
 * with Enter is sent to the run; the model sees it at the next call boundary.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type MockServer, mockServer } from "skein/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { requirePython, startOnTerminal } from "./terminal-helpers.ts";

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
  }, 60_000);
});
