/**
 * `.mcp.json` in the `skein` command: a server of the workspace's file starts only when the user
 * approves it on the terminal or names it with --mcp-server; off a terminal none starts and the
 * run says so; each MCP call then asks unless an --allow rule covers it.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type MockServer, mockServer } from "skein/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { RAW_FIXTURE, readLog, SDK_FIXTURE } from "../mcp/helpers.ts";
import { expectGone } from "../support/processes.ts";
import { lines, runCli } from "./helpers.ts";
import { requirePython, startOnTerminal } from "./terminal-helpers.ts";

let server: MockServer | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await server?.close();
  server = undefined;
});
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A workspace whose .mcp.json names the fixture server "fx" (and `extra` entries). */
function workspace(extra: Record<string, unknown> = {}): { cwd: string; log: string } {
  const cwd = mkdtempSync(join(tmpdir(), "skein-cli-mcp-"));
  dirs.push(cwd);
  const log = join(cwd, "fixture.log");
  const mcpServers = {
    fx: { command: process.execPath, args: [SDK_FIXTURE], env: { MCP_FIXTURE_LOG: log } },
    ...extra,
  };
  writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers }, null, 2));
  return { cwd, log };
}

async function model(
  turns: Parameters<typeof mockServer>[0]["script"] = [
    { toolCalls: [{ id: "e1", name: "mcp__fx__echo", input: { text: "from mcp" } }] },
    { text: "Done." },
  ],
) {
  server = await mockServer({ script: turns });
  return { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" };
}

const toolNames = (index: number) =>
  ((server!.requests[index]!.body as { tools?: { name: string }[] }).tools ?? []).map(
    (spec) => spec.name,
  );
const starts = (log: string) => readLog(log).filter((entry) => entry.event === "start");

describe("off a terminal", () => {
  it("starts no server of .mcp.json, and says so", async () => {
    const { cwd, log } = workspace();
    const env = await model([{ text: "No tools needed." }]);
    const result = await runCli(["hello"], { env, cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe("No tools needed.\n");
    expect(result.stderr).toContain(
      "skein · .mcp.json: not starting the MCP server fx (they start only when approved on an interactive terminal, or named with --mcp-server NAME).",
    );
    expect(starts(log)).toEqual([]);
    expect(toolNames(0).filter((name) => name.startsWith("mcp__"))).toEqual([]);
  });

  it("--mcp-server starts it; each call asks, so the run pauses, suggesting an --allow rule", async () => {
    const { cwd, log } = workspace();
    const result = await runCli(["--mcp-server", "fx", "echo"], { env: await model(), cwd });
    expect(result.code, result.stderr).toBe(1);
    expect(toolNames(0)).toContain("mcp__fx__echo");
    expect(lines(result.stderr).at(-1)).toBe(
      'skein: the run paused: 1 tool call(s) (mcp__fx__echo) wait for approval; run it on an interactive terminal to answer, or allow such calls with --allow (for example --allow "mcp__fx__echo").',
    );
    expect(readLog(log).filter((entry) => entry.event === "call")).toEqual([]);
    // The server's process ended with the command.
    await expectGone(starts(log).map((entry) => entry.pid));
  });

  it("a paused MCP call is answered by --continue with the --allow rule the pause suggested", async () => {
    const { cwd, log } = workspace();
    const env = await model();
    const paused = await runCli(["--mcp-server", "fx", "echo"], { env, cwd });
    expect(paused.code, paused.stderr).toBe(1);
    const resumed = await runCli(["--continue", "--mcp-server", "fx", "--allow", "mcp__fx__echo"], {
      env,
      cwd,
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toBe("Done.\n");
    expect(readLog(log).filter((entry) => entry.event === "call")).toHaveLength(1);
  });

  it("a --deny rule still refuses a paused MCP call that --allow covers on --continue", async () => {
    const { cwd, log } = workspace();
    const env = await model();
    expect((await runCli(["--mcp-server", "fx", "echo"], { env, cwd })).code).toBe(1);
    const flags = ["--mcp-server", "fx", "--allow", "mcp__fx__*", "--deny", "mcp__fx__echo"];
    const resumed = await runCli(["--continue", ...flags], { env, cwd });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readLog(log).filter((entry) => entry.event === "call")).toEqual([]);
  });

  it("--allow with a pattern lets the calls run without asking", async () => {
    const { cwd, log } = workspace();
    const result = await runCli(["--mcp-server", "fx", "--allow", "mcp__fx__*", "echo"], {
      env: await model(),
      cwd,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe("Done.\n");
    expect(JSON.stringify(server!.requests[1]!.body)).toContain("from mcp");
    expect(result.stderr).toMatch(/✓ mcp__fx__echo .*→ from mcp/);
    await expectGone(starts(log).map((entry) => entry.pid));
  });

  it("a tool's input and output are shown escaped, never as control sequences", async () => {
    const { cwd } = workspace();
    const evil = "\u001b]0;pwned\u0007\u001b[2J\u009b2J\u202e";
    const env = await model([
      { toolCalls: [{ id: "e1", name: "mcp__fx__echo", input: { text: evil } }] },
      { text: "Done." },
    ]);
    const result = await runCli(["--mcp-server", "fx", "--allow", "mcp__fx__*", "echo"], {
      env,
      cwd,
    });
    expect(result.code, result.stderr).toBe(0);
    for (const line of lines(result.stderr)) expect(line).not.toMatch(/[\p{Cc}\p{Cf}]/u);
    expect(result.stderr).toMatch(
      /✓ mcp__fx__echo \{"text":"\\u001b\]0;pwned\\u0007\\u001b\[2J\\u009b2J\\u202e"\} .*→ \\u001b\]0;pwned\\u0007\\u001b\[2J\\u009b2J\\u202e$/m,
    );
  }, 120_000);

  it("--deny refuses the tool even when --allow covers it", async () => {
    const { cwd } = workspace();
    const result = await runCli(
      ["--mcp-server", "fx", "--allow", "mcp__fx__*", "--deny", "mcp__fx__echo", "echo"],
      { env: await model(), cwd },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(toolNames(0)).not.toContain("mcp__fx__echo");
  });

  it("--json keeps stdout to events; the notice goes to stderr", async () => {
    const { cwd } = workspace();
    const result = await runCli(["--json", "hello"], { env: await model([{ text: "Hi." }]), cwd });
    expect(result.code, result.stderr).toBe(0);
    for (const line of lines(result.stdout)) expect(() => JSON.parse(line)).not.toThrow();
    expect(result.stderr).toContain("not starting the MCP server fx");
  });

  it("a server that cannot start: one escaped line on stderr per failed server, and the result lists them", async () => {
    const { cwd } = workspace({
      gone: { command: "skein-no-such-command\u009b2J\u001b]0;pwned\u0007" },
      refuses: { command: process.execPath, args: [RAW_FIXTURE, "refuse"] },
    });
    const named = ["--mcp-server", "fx", "--mcp-server", "gone", "--mcp-server", "refuses"];
    const env = await model([{ text: "Went on." }, { text: "Went on." }]);
    const failedLines = (stderr: string) =>
      lines(stderr).filter((line) => line.startsWith("MCP server "));
    const raw = /[\p{Cc}\p{Cf}]/u;

    const text = await runCli([...named, "hello"], { env, cwd });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toBe("Went on.\n");
    for (const line of lines(text.stderr)) expect(line).not.toMatch(raw);
    expect(failedLines(text.stderr)).toEqual([
      expect.stringMatching(/^MCP server (gone|refuses) is unavailable, its tools are missing: /),
      expect.stringMatching(/^MCP server (gone|refuses) is unavailable, its tools are missing: /),
    ]);
    expect(text.stderr).toContain(
      'MCP server gone is unavailable, its tools are missing: MCP server "gone" could not be started: the command "skein-no-such-command\\u009b2J\\u001b]0;pwned\\u0007" was not found',
    );
    expect(text.stderr).toMatch(/MCP server refuses is unavailable, .*refuses to start today/);

    const json = await runCli(["--json", ...named, "hello"], { env, cwd });
    expect(json.code, json.stderr).toBe(0);
    expect(failedLines(json.stderr)).toHaveLength(2);
    for (const line of lines(json.stderr)) expect(line).not.toMatch(raw);
    const result = JSON.parse(lines(json.stdout).at(-1)!);
    expect(
      result.mcpServers.map((entry: { server: string; status: string }) => [
        entry.server,
        entry.status,
      ]),
    ).toEqual([
      ["fx", "connected"],
      ["gone", "failed"],
      ["refuses", "failed"],
    ]);
  }, 120_000);

  it('a server\'s own stderr is not shown, even when .mcp.json says "stderr": "inherit"', async () => {
    // The server writes control sequences to its stderr, then exits without speaking MCP.
    const noisy = "process.stderr.write('\\u001b]0;pwned\\u0007STDERR-MARK\\n')";
    const { cwd } = workspace({
      noisy: { command: process.execPath, args: ["-e", noisy], stderr: "inherit" },
    });
    const env = await model([{ text: "Went on." }]);
    const result = await runCli(["--mcp-server", "noisy", "hello"], { env, cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toContain("STDERR-MARK");
    for (const line of lines(result.stderr)) expect(line).not.toMatch(/[\p{Cc}\p{Cf}]/u);
  }, 120_000);

  it("an HTTP server of .mcp.json is taken (reached at its url), not refused for an option it was never given", async () => {
    // Nothing listens there: the server is unavailable, and the run goes on without it.
    const { cwd } = workspace({ web: { type: "http", url: "http://127.0.0.1:9/mcp" } });
    const env = await model([{ text: "Went on." }]);
    const result = await runCli(["--mcp-server", "web", "hello"], { env, cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe("Went on.\n");
    expect(result.stderr).toMatch(/MCP server web is unavailable, its tools are missing: /);
  }, 120_000);

  it("an unknown --mcp-server name, a broken file and a wrong entry are clear errors", async () => {
    const { cwd } = workspace({ old: { type: "sse", url: "http://127.0.0.1:1/sse" } });
    const env = await model([{ text: "Hi." }, { text: "Hi." }]);
    const unknown = await runCli(["--mcp-server", "nope", "hello"], { env, cwd });
    expect(unknown.code).toBe(1);
    expect(lines(unknown.stderr).at(-1)).toBe(
      'skein: --mcp-server nope: .mcp.json has no server "nope" (it has fx, old).',
    );
    const wrong = await runCli(["--mcp-server", "old", "hello"], { env, cwd });
    expect(lines(wrong.stderr).at(-1)).toMatch(/^skein: --mcp-server old: the "sse" transport/);
    // Not named: said, not started, and the run goes on.
    const plain = await runCli(["hello"], { env, cwd });
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stderr).toMatch(
      /\.mcp\.json: not starting the MCP server "old": the "sse" transport/,
    );

    writeFileSync(join(cwd, ".mcp.json"), "{ not json");
    const broken = await runCli(["hello"], { env, cwd });
    expect(broken.code).toBe(1);
    expect(lines(broken.stderr).at(-1)).toMatch(/^skein: \.mcp\.json is not valid JSON/);
  });
});

describe("on a terminal", () => {
  beforeAll(() => requirePython());

  it("asks before starting a server, then asks for each call", async () => {
    const { cwd, log } = workspace();
    const cli = startOnTerminal(["echo"], { env: await model(), cwd });
    await cli.waitFor("start it? [y/N]");
    expect(cli.screen).toContain(
      `mcp server fx (from .mcp.json) ${process.execPath} ${SDK_FIXTURE} (env: MCP_FIXTURE_LOG=${log})`,
    );
    expect(starts(log)).toEqual([]);
    cli.type("y\r");
    await cli.waitFor("allow? [y/N]");
    expect(cli.screen).toContain('approval mcp__fx__echo {"text":"from mcp"}');
    expect(cli.screen).toContain(
      'each call asks unless an --allow rule covers it, such as --allow "mcp__fx__*"',
    );
    cli.type("y\r");
    const { code, screen } = await cli.exited;
    expect(code, screen).toBe(0);
    expect(screen).toContain("Done.");
    expect(readLog(log).filter((entry) => entry.event === "call")).toHaveLength(1);
    await expectGone(starts(log).map((entry) => entry.pid));
  });

  it("shows the whole command, each env entry with its value and the cwd, escaped, before asking", async () => {
    const hook = join(tmpdir(), "x.js");
    const { cwd } = workspace({
      fx: {
        command: process.execPath,
        args: [SDK_FIXTURE, "two words", 'a"quote', "bell\u0007\u001b]0;pwned\u0007"],
        env: {
          NODE_OPTIONS: `--require ${hook}`,
          TITLE: "\u001b]0;pwned\u0007\u009b2J\u202e",
          "A=B": "c",
        },
        cwd: "/tmp/some dir",
      },
    });
    const cli = startOnTerminal(["hello"], { env: await model([{ text: "Fine." }]), cwd });
    await cli.waitFor("start it? [y/N]");
    const shown = cli.screen.split("\n").find((line) => line.startsWith("mcp server fx"));
    expect(shown).toBe(
      `mcp server fx (from .mcp.json) ${process.execPath} ${SDK_FIXTURE} "two words" "a\\"quote" "bell\\u0007\\u001b]0;pwned\\u0007"` +
        ` (env: NODE_OPTIONS="--require ${hook}" TITLE="\\u001b]0;pwned\\u0007\\u009b2J\\u202e" "A=B"=c; cwd: "/tmp/some dir")`,
    );
    for (const raw of ["pwned\u0007", "\u009b", "\u202e"]) expect(cli.screen).not.toContain(raw);
    cli.type("n\r");
    const { code, screen } = await cli.exited;
    expect(code, screen).toBe(0);
    expect(screen).toContain(".mcp.json: not starting the MCP server fx (declined).");
  }, 120_000);

  it("a declined server does not start, and the run says so", async () => {
    const { cwd, log } = workspace();
    const cli = startOnTerminal(["hello"], { env: await model([{ text: "Fine." }]), cwd });
    await cli.waitFor("start it? [y/N]");
    cli.type("n\r");
    const { code, screen } = await cli.exited;
    expect(code, screen).toBe(0);
    expect(screen).toContain(".mcp.json: not starting the MCP server fx (declined).");
    expect(starts(log)).toEqual([]);
  });
});
