/**
 * A stdio server's process does not keep the app alive while it idles: an app that forgot
 * agent.close() exits by itself once its work is done, and its server's process ends with it.
 * A call (or the handshake, or close()) in flight still keeps it alive until it is answered.
 * Each app is a real node process, as an app's would be.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runChild } from "../support/children.ts";
import { expectGone } from "../support/processes.ts";
import { useTempDirs } from "../support/temp.ts";
import { readLog, SDK_FIXTURE } from "./helpers.ts";

const FIXTURES = fileURLToPath(new URL("fixtures", import.meta.url));
/** How long an app may take to exit by itself before the test calls it a hang. */
const EXIT_LIVENESS_MS = 60_000;
const tempDir = useTempDirs("skein-mcp-lifetime-");

/** Runs the app in `mode` to its exit; a hang is killed and fails the test. */
async function runApp(mode: "run" | "tools" | "close", sleepMs = 500) {
  const log = `${await tempDir()}/log.jsonl`;
  const app = runChild(FIXTURES, "no-close.ts", { fixture: SDK_FIXTURE, log, sleepMs, mode });
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<"hung">((resolve) => {
    timer = setTimeout(() => resolve("hung"), EXIT_LIVENESS_MS);
  });
  const exit = await Promise.race([app.exited, hung]).finally(() => clearTimeout(timer));
  if (exit === "hung") await app.kill();
  const servers = readLog(log)
    .filter((entry) => entry.event === "start")
    .map((entry) => entry.pid);
  // The server's process goes too, whatever ended the app.
  await expectGone(servers);
  expect(exit, `the app did not exit by itself.\nstderr: ${app.stderr}`).toEqual({
    code: 0,
    signal: null,
  });
  expect(servers).toHaveLength(1);
  return { lines: app.lines.filter(Boolean).map((line) => JSON.parse(line)), log };
}

describe("an app that never calls agent.close()", () => {
  it(
    "exits by itself after its run, the call in flight answered first",
    async () => {
      const { lines, log } = await runApp("run");
      expect(lines).toEqual([
        { subtype: "success", result: "done", answered: [{ type: "text", text: "slept 500 ms" }] },
      ]);
      expect(readLog(log).filter((entry) => entry.event === "call")).toHaveLength(1);
    },
    3 * EXIT_LIVENESS_MS,
  );

  it(
    "exits by itself after only listing a server's tools",
    async () => {
      const { lines } = await runApp("tools");
      expect(lines).toEqual([{ tools: expect.any(Number) }]);
      expect(lines[0].tools).toBeGreaterThan(0);
    },
    3 * EXIT_LIVENESS_MS,
  );
});

describe("an app that awaits agent.close() with nothing else to do", () => {
  it(
    "goes on after close() resolves: closing keeps it alive until the server has ended",
    async () => {
      const { lines } = await runApp("close");
      expect(lines.at(-1)).toEqual({ closed: true });
    },
    3 * EXIT_LIVENESS_MS,
  );
});
