import { existsSync } from "node:fs";
import path from "node:path";
import {
  type AgentOptions,
  createBareAgent,
  type PermissionResult,
  ResumeError,
  type RunState,
  type ToolUseBlock,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { rejectionOf } from "../support/promises.ts";
import { expectValidTranscript } from "../support/results.ts";
import { useTempDirs } from "../support/temp.ts";
import { expectErrorResult } from "./helpers.ts";

const tempDir = useTempDirs("skein-perm-");

/**
 * `write_marker` asks (an ask rule) and creates a marker file named after its input;
 * `other_marker` asks too. The batch: w1 (asks), n1 (held behind it), w2 (asks).
 */
async function pausedRun(extra: Partial<AgentOptions> = {}) {
  const dir = await tempDir();
  const counts = { write: 0, other: 0, note: 0 };
  const marker = (name: string) => path.join(dir, name);
  const { writeFile } = await import("node:fs/promises");
  const makeTools = () => [
    tool(
      "write_marker",
      "Creates a marker file",
      z.object({ name: z.string() }),
      async ({ name }) => {
        counts.write++;
        await writeFile(marker(name), "x");
        return `wrote ${name}`;
      },
      { ruleContent: (input) => input.name },
    ),
    tool(
      "other_marker",
      "Creates another marker file",
      z.object({ name: z.string() }),
      async ({ name }) => {
        counts.other++;
        await writeFile(marker(`other-${name}`), "x");
        return `wrote other ${name}`;
      },
      { ruleContent: (input) => input.name },
    ),
    tool("note", "Notes", z.object({ text: z.string() }), async () => {
      counts.note++;
      return "noted";
    }),
  ];
  const model = scriptedModel([
    {
      toolCalls: [
        { id: "w1", name: "write_marker", input: { name: "approved.txt" } },
        { id: "n1", name: "note", input: { text: "held" } },
        { id: "w2", name: "write_marker", input: { name: "second.txt" } },
      ],
    },
    { text: "done" },
  ]);
  const options: AgentOptions = {
    model,
    tools: makeTools(),
    permissions: { ask: ["write_marker", "other_marker"] },
    ...extra,
  };
  const result = await createBareAgent(options).run("go");
  expect(result.subtype).toBe("paused");
  expect(result.pending?.map((call) => call.id)).toEqual(["w1", "w2"]);
  const fresh = () => JSON.parse(JSON.stringify(result.state)) as RunState;
  const anyMarker = () =>
    ["approved.txt", "second.txt", "evil.txt", "other-approved.txt", "other-evil.txt"].some(
      (name) => existsSync(marker(name)),
    );
  return { options, model, counts, fresh, marker, anyMarker, makeTools };
}

type Setup = Awaited<ReturnType<typeof pausedRun>>;

function callOf(state: RunState, id: string) {
  const call = state.batch?.calls.find((entry) => entry.id === id);
  if (!call) throw new Error(`no call ${id} in the state`);
  return call as { id: string; name: string; input: unknown; status: string; reason?: string };
}

function toolUseOf(state: RunState, id: string): ToolUseBlock {
  const last = state.messages.at(-1)!;
  if (typeof last.content === "string") throw new Error("no tool_use blocks");
  const block = last.content.find((entry) => entry.type === "tool_use" && entry.id === id);
  if (!block) throw new Error(`no tool_use ${id}`);
  return block as ToolUseBlock;
}

async function expectRefused(
  setup: Setup,
  state: RunState,
  approvals: Record<string, PermissionResult>,
): Promise<ResumeError> {
  const error = await rejectionOf(createBareAgent(setup.options).resume(state, { approvals }));
  expect(error.name).toBe("ResumeError");
  expect(error).toBeInstanceOf(ResumeError);
  // Before any side effect: no handler ran, no file was written, the model was not called again.
  expect(setup.counts).toEqual({ write: 0, other: 0, note: 0 });
  expect(setup.anyMarker()).toBe(false);
  expect(setup.model.requests).toHaveLength(1);
  return error as ResumeError;
}

describe("a state altered after the pause is refused before any side effect (C17d)", () => {
  it("the untouched state resumes (control)", async () => {
    const setup = await pausedRun();
    const resumed = await createBareAgent(setup.options).resume(setup.fresh(), {
      approvals: { w1: true, w2: true },
    });
    expect(resumed.subtype).toBe("success");
    expect(setup.counts).toEqual({ write: 2, other: 0, note: 1 });
    expect(existsSync(setup.marker("approved.txt"))).toBe(true);
  });

  it("the stored input of the approval-pending call", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    callOf(state, "w1").input = { name: "evil.txt" };
    await expectRefused(setup, state, { w1: true, w2: true });
  });

  it("the stored input, changed in the transcript's tool_use as well", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    callOf(state, "w1").input = { name: "evil.txt" };
    toolUseOf(state, "w1").input = { name: "evil.txt" };
    await expectRefused(setup, state, { w1: true });
  });

  it("an extra key added to the stored input", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    (callOf(state, "w1").input as Record<string, unknown>).extra = "x";
    await expectRefused(setup, state, { w1: true });
  });

  it("the tool name (batch and transcript alike)", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    callOf(state, "w1").name = "other_marker";
    toolUseOf(state, "w1").name = "other_marker";
    await expectRefused(setup, state, { w1: true, w2: true });
  });

  it("the call id (batch and transcript alike), approved under the new id", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    callOf(state, "w1").id = "w9";
    toolUseOf(state, "w1").id = "w9";
    await expectRefused(setup, state, { w9: true, w2: true });
  });

  it("two approval-pending calls swapped (inputs exchanged)", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    const first = callOf(state, "w1");
    const second = callOf(state, "w2");
    [first.input, second.input] = [second.input, first.input];
    await expectRefused(setup, state, { w1: true });
  });

  it("the held call's input", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    callOf(state, "n1").input = { text: "changed" };
    await expectRefused(setup, state, { w1: true });
  });

  it('a call flipped from "approval" to "held" (it would run without approval)', async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    callOf(state, "w2").reason = "held";
    await expectRefused(setup, state, { w1: false });
  });

  it("a seal removed or replaced", async () => {
    const setup = await pausedRun();
    for (const seal of [undefined, "", callOf(setup.fresh(), "w2") as unknown]) {
      const state = setup.fresh();
      const call = callOf(state, "w1") as { seal?: unknown };
      if (seal === undefined) delete call.seal;
      else call.seal = typeof seal === "string" ? seal : (seal as { seal?: unknown }).seal;
      await expectRefused(setup, state, { w1: true });
    }
  });

  it("the session id", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    state.sessionId = "another-session";
    await expectRefused(setup, state, { w1: true });
  });

  it("an extra call injected into the batch as held", async () => {
    const setup = await pausedRun();
    const state = setup.fresh();
    // Put a 'done' call in front by editing the transcript and the batch consistently.
    const last = state.messages.at(-1)!;
    if (typeof last.content !== "string")
      last.content.unshift({ type: "tool_use", id: "x0", name: "note", input: { text: "x" } });
    state.batch!.calls.unshift({
      id: "x0",
      name: "note",
      input: { text: "x" },
      status: "pending",
      reason: "held",
    } as never);
    await expectRefused(setup, state, { w1: true });
  });
});

describe("resume checks the rules again", () => {
  it("a deny rule added between pause and resume denies the approved call; it does not run", async () => {
    const setup = await pausedRun();
    const stricter = createBareAgent({
      ...setup.options,
      permissions: { ask: ["write_marker", "other_marker"], deny: ["write_marker(approved*)"] },
    });
    const resumed = await stricter.resume(setup.fresh(), { approvals: { w1: true, w2: true } });
    expect(resumed.subtype).toBe("success");
    expectErrorResult(resumed.messages, "w1", /denied/i);
    expect(existsSync(setup.marker("approved.txt"))).toBe(false);
    expect(existsSync(setup.marker("second.txt"))).toBe(true);
    expectValidTranscript(resumed.messages);
  });

  it("a bare deny added between pause and resume denies the held call too", async () => {
    const setup = await pausedRun();
    const stricter = createBareAgent({
      ...setup.options,
      permissions: { ask: ["write_marker", "other_marker"], deny: ["note"] },
    });
    const resumed = await stricter.resume(setup.fresh(), { approvals: { w1: true, w2: true } });
    expectErrorResult(resumed.messages, "n1", /denied/i);
    expect(setup.counts.note).toBe(0);
  });

  it("a tool the resuming agent hides with disallowedTools does not run on resume", async () => {
    const setup = await pausedRun();
    const hiding = createBareAgent({ ...setup.options, disallowedTools: ["write_marker"] });
    const outcome = await hiding.resume(setup.fresh(), { approvals: { w1: true, w2: true } }).then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
    // Refused outright, or answered with error results: either way nothing hidden runs.
    if ("result" in outcome) {
      expectErrorResult(outcome.result.messages, "w1");
      expectErrorResult(outcome.result.messages, "w2");
    } else {
      expect((outcome.error as Error).name).toBe("ResumeError");
    }
    expect(setup.counts.write).toBe(0);
    expect(setup.anyMarker()).toBe(false);
  });

  it("an agent without the paused call's tool refuses the state", async () => {
    const setup = await pausedRun();
    const [, , note] = setup.makeTools();
    const error = await rejectionOf(
      createBareAgent({ model: setup.options.model, tools: [note!] }).resume(setup.fresh(), {
        approvals: { w1: true },
      }),
    );
    expect(error.name).toBe("ResumeError");
    expect(setup.counts).toEqual({ write: 0, other: 0, note: 0 });
  });
});
