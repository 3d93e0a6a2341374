/**
 * Nothing a model sends freezes the process (issue 8, RELIABILITY B2). A regular expression
 * cannot be interrupted on the event loop: a pattern that backtracks for ever would stop every
 * agent of the process and every timer, including the tool's own timeout. Each case sends a
 * hostile pattern or path, and checks that the call ends with a result and, for the slow ones,
 * that a second agent of the same process runs to its end while the hostile call is still going.
 */
import * as fs from "node:fs";
import path from "node:path";
import { type AgentEvent, createAgent, type SDKResultMessage, tool } from "skein";
import { type ScriptedTurn, scriptedModel } from "skein/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { callText, stepCall } from "../support/results.ts";
import {
  type Arena,
  approveAll,
  attack,
  expectDenied,
  expectError,
  expectOk,
  makeArena,
  PRESETS,
  turn,
} from "./helpers.ts";

/** `*a*a*a…*c` against a name of 64 a's: hours of backtracking for a regular expression. */
const CATASTROPHIC_GLOB = `${"*a".repeat(12)}*c`;
const LONG_A = "a".repeat(64);

let arena: Arena;
beforeAll(() => {
  arena = makeArena("freeze");
  arena.put(`many/${LONG_A}`, "x\n");
  arena.put("many/plain.txt", "x\n");
  // 500 nested directories "x" (a 1,000-character path), a file at the bottom.
  arena.put(`${"x/".repeat(500)}deep.txt`, "deep\n");
});
afterAll(() => arena.cleanup());

interface Outcome {
  result: SDKResultMessage;
  /** The quick agent's run ended before the slow call's tool_end. */
  quickFirst: boolean;
}

/**
 * Runs `turns` with one agent and, once its call `slowId` has started, a second agent that reads
 * a file: the second must run to its end while the slow call is still going.
 */
async function whileSlow(turns: ScriptedTurn[], slowId: string): Promise<Outcome> {
  const slow = createAgent({ model: scriptedModel([...turns, { text: "done" }]), cwd: arena.work });
  const quick = createAgent({
    model: scriptedModel([
      { toolCalls: [{ id: "r1", name: "Read", input: { file_path: "README.md" } }] },
      { text: "done" },
    ]),
    cwd: arena.work,
  });
  let quickDone = false;
  let quickFirst = false;
  let quickRun: Promise<void> | undefined;
  const events: AgentEvent[] = [];
  for await (const event of slow.stream("go", { signal: AbortSignal.timeout(120_000) })) {
    events.push(event);
    const callId = (event as { callId?: string }).callId;
    if (event.type === "tool_start" && callId === slowId)
      quickRun = quick.run("read").then((result) => {
        expect(result.subtype).toBe("success");
        quickDone = true;
      });
    if (event.type === "tool_end" && callId === slowId) quickFirst = quickDone;
  }
  await quickRun;
  const last = events.at(-1) as SDKResultMessage;
  expect(last.type).toBe("result");
  return { result: last, quickFirst };
}

describe("a catastrophic pattern cannot stop the process", () => {
  it("Glob: the matching is stopped with an error result, and other agents run meanwhile", async () => {
    const { result, quickFirst } = await whileSlow(
      [
        {
          toolCalls: [{ id: "g1", name: "Glob", input: { pattern: `many/${CATASTROPHIC_GLOB}` } }],
        },
        { toolCalls: [{ id: "g2", name: "Glob", input: { pattern: "many/*" } }] },
      ],
      "g1",
    );
    expect(quickFirst, "the second agent finished while Glob was matching").toBe(true);
    const g1 = stepCall(result, "g1");
    expect(g1.isError).toBe(true);
    expect(callText(g1)).toMatch(/too complex/);
    expect(callText(g1)).toMatch(/simpler pattern/);
    // The next Glob works as before.
    const g2 = stepCall(result, "g2");
    expect(g2.isError).toBe(false);
    expect(callText(g2)).toContain(`many/${LONG_A}`);
  }, 120_000);

  it("Glob: a .gitignore the model wrote with several ** over deep directories", async () => {
    arena.put(".gitignore", "**/x/**/x/**/y\n**/x/**/x/**/x/**/z\n");
    try {
      const { result, quickFirst } = await whileSlow(
        [{ toolCalls: [{ id: "g1", name: "Glob", input: { pattern: "**/deep.txt" } }] }],
        "g1",
      );
      expect(quickFirst, "the second agent finished while Glob was matching").toBe(true);
      const g1 = stepCall(result, "g1");
      // Either the answer, or an error naming the .gitignore files: never a frozen process.
      if (g1.isError) expect(callText(g1)).toMatch(/\.gitignore/);
      else expect(callText(g1)).toContain("deep.txt");
    } finally {
      fs.rmSync(path.join(arena.work, ".gitignore"));
    }
  }, 120_000);
});

describe.each(PRESETS)(
  "hostile patterns and paths meet bounded matchers ($label)",
  ({ preset }) => {
    it("path rules: a 4,000-character path against rules with several wildcards", async () => {
      const deep = `${"x/".repeat(2000)}`;
      const run = await attack(arena, {
        preset,
        deadlineMs: 60_000,
        permissions: {
          deny: [
            "Read(**/x/**/x/**/y)",
            "Read(**/x/**/y/**)",
            "Read(a*b*c*d*e)",
            "Read(**/*.env)",
            "Edit(**/x/**/x/**/y)",
          ],
        },
        approval: approveAll,
        turns: [
          turn(
            ["r1", "Read", { file_path: `${deep}z` }],
            ["r2", "Read", { file_path: `${deep}y` }],
            ["r3", "Read", { file_path: `${deep}q.env` }],
            ["r4", "Read", { file_path: "abcd".repeat(1000) }],
            ["r5", "Read", { file_path: `${"abcd/".repeat(800)}abcde` }],
            ["w1", "Write", { file_path: `${deep}y`, content: "no" }],
            ["l1", "LS", { path: "x/x/x" }],
          ),
        ],
      });
      // Not denied, and not found (or too long a name): the rules answered.
      expectError(run, "r1");
      expect(run.text("r1")).not.toMatch(/denied/i);
      expectDenied(run, "r2");
      expectDenied(run, "r3");
      expectError(run, "r4");
      expect(run.text("r4")).not.toMatch(/denied/i);
      expectDenied(run, "r5");
      expectDenied(run, "w1");
      expectOk(run, "l1", /^x\/$/m);
    }, 90_000);

    it("Glob over a deep tree with those rules: the files the rules cover stay hidden", async () => {
      arena.put(`${"x/".repeat(500)}y`, "hidden\n");
      const run = await attack(arena, {
        preset,
        deadlineMs: 60_000,
        permissions: { deny: ["Read(**/x/**/x/**/y)"] },
        turns: [
          turn(["g1", "Glob", { pattern: "**/*" }], ["s1", "Grep", { pattern: "hidden|deep" }]),
        ],
      });
      expectOk(run, "g1", /deep\.txt/);
      expect(run.text("g1")).not.toMatch(/\/y$/m);
      expect(run.text("g1")).toMatch(/1 file .*hidden|hidden.*1 file/i);
      expectOk(run, "s1", /deep\.txt/);
      expect(run.text("s1")).not.toMatch(/\/y$/m);
    }, 90_000);

    it("LS ignore, Grep glob and type, BashOutput filter: each answers", async () => {
      arena.put(`names/${"a".repeat(250)}`, "x\n");
      arena.put(`names/${"ab".repeat(120)}.log`, "x\n");
      const run = await attack(arena, {
        preset,
        deadlineMs: 60_000,
        approval: approveAll,
        turns: [
          turn(
            [
              "l1",
              "LS",
              {
                path: "names",
                ignore: [CATASTROPHIC_GLOB, `${"*?".repeat(12)}c`, "**/x/**/x/**/y", "*.log"],
              },
            ],
            ["s1", "Grep", { pattern: "x", path: "many", glob: CATASTROPHIC_GLOB }],
            ["s2", "Grep", { pattern: "x", type: "no-such-type" }],
            [
              "b1",
              "Bash",
              { command: `printf '${"a".repeat(40)}b\\n%.0s' $(seq 200)`, run_in_background: true },
            ],
          ),
          turn(
            ["b2", "Bash", { command: "sleep 1" }],
            // 25,000 newlines, then text: trimming the trailing newlines must not retry each one.
            ["b3", "Bash", { command: "printf '%.0s\\n' $(seq 25000); printf end" }],
          ),
          turn(["o1", "BashOutput", { bash_id: "bash_1", filter: "^(a+)+$" }]),
          turn(["o2", "BashOutput", { bash_id: "bash_1", filter: "(a|aa)+$" }]),
          turn(["o3", "BashOutput", { bash_id: "bash_1" }]),
        ],
      });
      expectOk(run, "l1", new RegExp(`^${"a".repeat(250)}$`, "m"));
      expect(run.text("l1")).not.toMatch(/\.log/);
      expectOk(run, "s1", /No files found/);
      expectError(run, "s2", /no-such-type/);
      expectError(run, "o1", /took too long/);
      expectError(run, "o2", /took too long/);
      expectOk(run, "b3", /end$/);
      // The output was not consumed by the filters that failed.
      expectOk(run, "o3", /a{40}b/);
    }, 90_000);
  },
);

describe("a custom tool's rule pattern against the model's input", () => {
  it("a deny rule with several wildcards answers at once for a long ruleContent", async () => {
    const runs: string[] = [];
    const target = tool(
      "Deploy",
      "Deploys a target",
      z.object({ target: z.string() }),
      async ({ target }) => {
        runs.push(target);
        return "deployed";
      },
      { ruleContent: (input) => input.target },
    );
    const agent = createAgent({
      model: scriptedModel([
        {
          toolCalls: [
            { id: "d1", name: "Deploy", input: { target: "abcd".repeat(5_000) } },
            { id: "d2", name: "Deploy", input: { target: `${"abcd".repeat(5_000)}e` } },
          ],
        },
        { text: "done" },
      ]),
      cwd: arena.work,
      tools: [target],
      permissions: { deny: ["Deploy(a*b*c*d*e)"] },
    });
    const result = await agent.run("go", { signal: AbortSignal.timeout(60_000) });
    expect(stepCall(result, "d1").isError).toBe(false);
    expect(stepCall(result, "d2").isError).toBe(true);
    expect(callText(stepCall(result, "d2"))).toMatch(/denied/i);
    expect(runs).toEqual(["abcd".repeat(5_000)]);
  }, 90_000);
});

describe("a Bash rule pattern against the model's command", () => {
  it("deny and ask rules with several wildcards answer at once for a long command", async () => {
    // As regular expressions (`^git .* .* .* end$`) these backtrack over every split of the
    // command: cubic, minutes for 20,000 characters.
    const long = `git ${"a ".repeat(10_000)}x`;
    const ending = `git ${"a ".repeat(10_000)}end`;
    const asked: string[] = [];
    const agent = createAgent({
      model: scriptedModel([
        {
          toolCalls: [
            { id: "b1", name: "Bash", input: { command: long } },
            { id: "b2", name: "Bash", input: { command: ending } },
          ],
        },
        { text: "done" },
      ]),
      cwd: arena.work,
      permissions: { deny: ["Bash(git * * * end)"], ask: ["Bash(git * * * * x)"] },
      approval: async (_name, input) => {
        asked.push((input as { command: string }).command);
        return false;
      },
    });
    const result = await agent.run("go", { signal: AbortSignal.timeout(60_000) });
    expect(asked).toEqual([long]);
    expect(stepCall(result, "b1").isError).toBe(true);
    expect(callText(stepCall(result, "b2"))).toMatch(/denied/i);
  }, 90_000);
});
