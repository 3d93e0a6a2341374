/** `skein demo`: always offline, whatever the environment says, and labelled so. */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { closedPort } from "../support/servers.ts";
import { BUILT_ENTRY, ensureBuilt, lines, ROOT, runCli } from "./helpers.ts";
import { requirePython, startOnTerminal, visibleLines } from "./terminal-helpers.ts";

/** The planner's line: the model's "3" in the call, the number the planner got in its result. */
const PLANNED =
  /^✓ plan_trip \{"city":"Lisbon","days":"3"\} \d+ ms → days "3" → 3 \(a number\): old town on foot; a museum and the riverside; a day trip out of town$/;

const ANSWER =
  "Go to Lisbon: sunny and 24 °C. Day 1, the old town on foot; day 2, a museum and the riverside; day 3, a day trip out of town.";

describe("skein demo", () => {
  it("runs the example agent against the mock server, labelled offline, ignoring keys and base URLs", async () => {
    const port = await closedPort();
    const result = await runCli(["demo"], {
      env: { ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`, ANTHROPIC_API_KEY: "sk-real-key" },
    });
    expect(result.code).toBe(0);
    expect(lines(result.stderr)[0]).toMatch(
      /^skein demo \(offline\): no API key, no network\. skein's mock server at http:\/\/127\.0\.0\.1:\d+ plays the model,$/,
    );
    expect(result.stderr).toContain("through the real Anthropic HTTP client");
    expect(lines(result.stdout)).toEqual([
      "I'll check the weather in all four cities at once.",
      "Lisbon is the warmest (Atlantis has no station). Planning three days there.",
      ANSWER,
    ]);
    const status = lines(result.stderr);
    expect(status.filter((line) => line.startsWith("→ "))).toEqual([
      '→ get_weather {"city":"Lisbon"}',
      '→ get_weather {"city":"Oslo"}',
      '→ get_weather {"city":"Kyoto"}',
      '→ get_weather {"city":"Atlantis"}',
      '→ plan_trip {"city":"Lisbon","days":"3"}',
    ]);
    expect(status).toContain("  plan_trip: days = 3 (a number); looking up sights in Lisbon");
    expect(status.filter((line) => PLANNED.test(line))).toHaveLength(1);
    expect(status.find((line) => line.includes('{"city":"Atlantis"} '))).toMatch(
      /^✗ get_weather \{"city":"Atlantis"\} \d+ ms → Tool "get_weather" failed: no weather station knows "Atlantis"$/,
    );
    expect(status.at(-1)).toMatch(
      /^usage: 748 input, 225 output tokens; 1,067 cache reads, 0 cache writes · 3 turns · /,
    );
  });

  it("--provider openai --json: NDJSON through the OpenAI client, ending with a successful result", async () => {
    const result = await runCli(["demo", "--provider", "openai", "--json"]);
    expect(result.code).toBe(0);
    const events = lines(result.stdout).map((line) => JSON.parse(line));
    expect(events[0]).toMatchObject({ type: "run_start" });
    expect(events.at(-1)).toMatchObject({
      type: "result",
      subtype: "success",
      result: ANSWER,
      numTurns: 3,
    });
    expect(events.filter((event) => event.type === "tool_end")).toHaveLength(5);
    expect(result.stderr).toContain("skein demo (offline)");
    expect(result.stderr).toContain("through the real OpenAI HTTP client");
  });

  it("--provider google --json: the same run through the Gemini client", async () => {
    const result = await runCli(["demo", "--provider", "google", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const events = lines(result.stdout).map((line) => JSON.parse(line));
    expect(events.at(-1)).toMatchObject({
      type: "result",
      subtype: "success",
      result: ANSWER,
      numTurns: 3,
    });
    expect(events.filter((event) => event.type === "tool_end")).toHaveLength(5);
    expect(result.stderr).toContain("through the real Gemini HTTP client");
  });
});

describe("skein demo on a terminal", () => {
  it("the planner's line that stays shows the coercion the demo advertises", async () => {
    requirePython();
    const cwd = mkdtempSync(join(tmpdir(), "skein-cli-demo-"));
    try {
      const cli = startOnTerminal(["demo"], { cwd });
      const { code, screen } = await cli.exited;
      expect(code, screen).toBe(0);
      const visible = visibleLines(screen);
      // Only the spinner showed the call's start and progress; what stays is the result's line.
      expect(
        visible.filter((line) => line.includes("plan_trip")),
        screen,
      ).toEqual([expect.stringMatching(PLANNED)]);
      expect(visible).toContain(ANSWER);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("the built command (dist/cli/main.js)", () => {
  beforeAll(ensureBuilt, 180_000);

  it("is package.json's bin, starts with a node shebang, and runs the demo", async () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    expect(manifest.bin).toEqual({ skein: "./dist/cli/main.js" });
    expect(readFileSync(BUILT_ENTRY, "utf8").split("\n")[0]).toBe("#!/usr/bin/env node");
    const result = await runCli(["demo"], { built: true });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("skein demo (offline)");
    expect(lines(result.stdout).at(-1)).toBe(ANSWER);
  });

  it("prints its version", async () => {
    const result = await runCli(["--version"], { built: true });
    expect(result.stdout.trim()).toBe(
      JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version,
    );
  });
});
