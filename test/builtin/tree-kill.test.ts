/**
 * A Bash timeout, an abort, KillShell and the end of an agent kill everything the command
 * started, also the children that left its process group (`setsid`, `setsid -f`, a double fork,
 * `nohup` in a new session): each writes its pid to a file, and after the call the test polls
 * /proc until that process is gone. Outside the preset (under it, bubblewrap's pid namespace
 * takes everything with it).
 */
import * as fs from "node:fs";
import path from "node:path";
import { createAgent } from "skein";
import { type ScriptedTurn, scriptedModel } from "skein/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LIVENESS_MS } from "../support/liveness.ts";
import { makeTempDir, removeDir } from "../support/temp.ts";

let work: string;
beforeEach(() => {
  work = makeTempDir("skein-tree-");
});
afterEach(() => {
  // Whatever a failed test left running.
  for (const pid of pidsIn(work)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
  removeDir(work);
});

function pidsIn(dir: string): number[] {
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith(".pid"))
    .map((name) => Number(fs.readFileSync(path.join(dir, name), "utf8").trim()))
    .filter((pid) => Number.isInteger(pid) && pid > 1);
}

/** Alive: in /proc and not a zombie (an orphan's zombie waits for a reaper that may not reap). */
function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** The pids that are still alive after polling for up to `ms`. */
async function survivors(pids: number[], ms = LIVENESS_MS): Promise<number[]> {
  const end = Date.now() + ms;
  let left = pids.filter(alive);
  while (left.length > 0 && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    left = left.filter(alive);
  }
  return left;
}

/** Waits until `count` pid files exist (the command got to start its children). */
async function untilPidFiles(count: number): Promise<number[]> {
  const end = Date.now() + LIVENESS_MS;
  while (Date.now() < end) {
    const pids = pidsIn(work);
    if (pids.length >= count) return pids;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the command wrote ${pidsIn(work).length} of ${count} pid files`);
}

/** Children that leave the process group, each writing its pid to a file. */
const ESCAPES = [
  `setsid sh -c 'echo $$ > setsid.pid; exec sleep 600' &`,
  // Ignores SIGTERM: only the SIGKILL after the grace stops it.
  `setsid sh -c 'trap "" TERM; echo $$ > stubborn.pid; while :; do sleep 1; done' &`,
  `setsid -f sh -c 'echo $$ > forked.pid; exec sleep 600'`,
  `( ( setsid sh -c 'echo $$ > double.pid; exec sleep 600' & ) & )`,
  `nohup setsid sh -c 'echo $$ > nohup.pid; exec sleep 600' > /dev/null 2>&1 &`,
].join("\n");
const ESCAPED = 5;
/** Waits (in the shell) until every escaped child wrote its pid. */
const AWAIT_ESCAPED = `while [ $(ls *.pid 2>/dev/null | wc -l) -lt ${ESCAPED} ]; do sleep 0.1; done`;
const awaitTurn = (id: string): ScriptedTurn => ({
  toolCalls: [{ id, name: "Bash", input: { command: AWAIT_ESCAPED } }],
});

function agentWith(turns: ScriptedTurn[]) {
  return createAgent({
    model: scriptedModel([...turns, { text: "done" }]),
    cwd: work,
    permissions: { allow: ["Bash", "KillShell", "BashOutput"] },
  });
}

describe("killing a command kills the children that left its process group", () => {
  it("on a Bash timeout", async () => {
    const agent = agentWith([
      {
        toolCalls: [
          {
            id: "b1",
            name: "Bash",
            input: {
              command: `${ESCAPES}\n${AWAIT_ESCAPED}\nsleep 600`,
              timeout: 3_000,
            },
          },
        ],
      },
    ]);
    const result = await agent.run("go");
    const call = result.steps[0]!.toolCalls[0]!;
    expect(call.isError).toBe(true);
    expect(JSON.stringify(call.result.content)).toMatch(/timed out/);
    const pids = pidsIn(work);
    expect(pids).toHaveLength(ESCAPED);
    expect(await survivors(pids), "escaped children still alive").toEqual([]);
  }, 120_000);

  it("on KillShell, for a background command", async () => {
    const agent = agentWith([
      {
        toolCalls: [
          {
            id: "b1",
            name: "Bash",
            input: { command: `${ESCAPES}\nsleep 600`, run_in_background: true },
          },
        ],
      },
      awaitTurn("w1"),
      { toolCalls: [{ id: "k1", name: "KillShell", input: { shell_id: "bash_1" } }] },
    ]);
    const result = await agent.run("go");
    const kill = result.steps.flatMap((step) => step.toolCalls).find((c) => c.callId === "k1");
    expect(JSON.stringify(kill?.result.content)).toMatch(/Killed shell bash_1/);
    const pids = pidsIn(work);
    expect(pids).toHaveLength(ESCAPED);
    expect(await survivors(pids), "escaped children still alive").toEqual([]);
    await agent.close();
  }, 120_000);

  it("when the agent is closed with a background command running", async () => {
    const agent = agentWith([
      {
        toolCalls: [
          {
            id: "b1",
            name: "Bash",
            input: { command: `${ESCAPES}\nsleep 600`, run_in_background: true },
          },
        ],
      },
      awaitTurn("w1"),
    ]);
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");
    const pids = pidsIn(work);
    expect(pids.filter(alive)).toHaveLength(ESCAPED);
    await agent.close();
    expect(await survivors(pids), "escaped children still alive").toEqual([]);
  }, 120_000);

  it("on an abort of the run", async () => {
    const agent = agentWith([
      {
        toolCalls: [
          { id: "b1", name: "Bash", input: { command: `${ESCAPES}\nsleep 600`, timeout: 600_000 } },
        ],
      },
    ]);
    const controller = new AbortController();
    const running = agent.run("go", { signal: controller.signal }).catch(() => undefined);
    const pids = await untilPidFiles(ESCAPED);
    controller.abort();
    await running;
    expect(await survivors(pids), "escaped children still alive").toEqual([]);
  }, 120_000);
});
