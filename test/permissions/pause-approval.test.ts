import {
  type AgentOptions,
  ConfigurationError,
  createBareAgent,
  type PermissionResult,
  type RunState,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { rejectionOf } from "../support/promises.ts";
import { expectValidTranscript, resultText, toolResultsOf } from "../support/results.ts";
import { countingTool } from "../support/tools.ts";
import { expectErrorResult, expectOkResult } from "./helpers.ts";

const SECRET = "0123456789abcdef-shared-secret";

/**
 * One batch: s1 (allowed), r1 (asks), s2 (allowed, after the first waiting call), r2 (asks),
 * s3 (allowed). `safe` and `risky` count their runs.
 */
function setup(options: Partial<AgentOptions> = {}) {
  const safe = countingTool("safe");
  const risky = countingTool("risky");
  const model = scriptedModel([
    {
      toolCalls: [
        { id: "s1", name: "safe", input: { target: "one" } },
        { id: "r1", name: "risky", input: { target: "alpha" } },
        { id: "s2", name: "safe", input: { target: "two" } },
        { id: "r2", name: "risky", input: { target: "beta" } },
        { id: "s3", name: "safe", input: { target: "three" } },
      ],
    },
    { text: "all done" },
    { text: "again" },
  ]);
  const agentOptions: AgentOptions = {
    model,
    tools: [safe.tool, risky.tool],
    permissions: { ask: ["risky"] },
    ...options,
  };
  return { safe, risky, model, agentOptions };
}

async function paused(options: Partial<AgentOptions> = {}) {
  const context = setup(options);
  const result = await createBareAgent(context.agentOptions).run("go");
  expect(result.subtype).toBe("paused");
  const fresh = () => JSON.parse(JSON.stringify(result.state)) as RunState;
  return { ...context, result, fresh };
}

describe("pausing for approval (no approval handler)", () => {
  it("lists only the calls waiting for approval, with their reason", async () => {
    const { result } = await paused();
    expect(result.isError).toBe(false);
    expect(result.pending).toEqual([
      {
        id: "r1",
        name: "risky",
        input: { target: "alpha" },
        reason: "approval",
        approvalReason: expect.stringMatching(/\S/),
      },
      {
        id: "r2",
        name: "risky",
        input: { target: "beta" },
        reason: "approval",
        approvalReason: expect.stringMatching(/\S/),
      },
    ]);
    expect(result.state).toBeDefined();
  });

  it("runs the calls before the first waiting call; the later ones wait with it", async () => {
    const { safe, risky, model } = await paused();
    expect(safe.runs).toEqual(["one"]);
    expect(risky.runs).toEqual([]);
    expect(model.requests).toHaveLength(1);
  });

  it("the paused state survives JSON and marks the calls behind the first waiting one as held", async () => {
    const { fresh } = await paused();
    const state = fresh();
    expect(
      state.batch?.calls.map((call) => [
        call.id,
        call.status,
        "reason" in call ? call.reason : undefined,
      ]),
    ).toEqual([
      ["s1", "done", undefined],
      ["r1", "pending", "approval"],
      ["s2", "pending", "held"],
      ["r2", "pending", "approval"],
      ["s3", "pending", "held"],
    ]);
  });
});

describe("resuming with approvals", () => {
  it("true runs the call; held calls run without approval; a missing entry is denied", async () => {
    const { fresh, agentOptions, safe, risky, model } = await paused();
    const resumed = await createBareAgent(agentOptions).resume(fresh(), {
      approvals: { r1: true },
    });
    expect(resumed.subtype).toBe("success");
    expect(resumed.result).toBe("all done");
    expect(risky.runs).toEqual(["alpha"]);
    expect(safe.runs).toEqual(["one", "two", "three"]);
    expectOkResult(resumed.messages, "r1", "risky ran on alpha");
    expectErrorResult(resumed.messages, "r2");
    expectValidTranscript(resumed.messages);
    // The model saw one tool_result per call, in call order.
    const blocks = toolResultsOf(model.requests[1]!.messages.at(-1));
    expect(blocks.map((block) => [block.tool_use_id, block.is_error ?? false])).toEqual([
      ["s1", false],
      ["r1", false],
      ["s2", false],
      ["r2", true],
      ["s3", false],
    ]);
  });

  it("false and a deny give error results and never run; the deny's message reaches the model", async () => {
    const { fresh, agentOptions, risky, safe } = await paused();
    const resumed = await createBareAgent(agentOptions).resume(fresh(), {
      approvals: { r1: false, r2: { behavior: "deny", message: "beta is frozen" } },
    });
    expect(resumed.subtype).toBe("success");
    expect(risky.runs).toEqual([]);
    expect(safe.runs).toEqual(["one", "two", "three"]);
    expectErrorResult(resumed.messages, "r1", /denied|not/i);
    expectErrorResult(resumed.messages, "r2", "beta is frozen");
    expectValidTranscript(resumed.messages);
  });

  it('{ behavior: "allow", updatedInput } runs the rewritten input, validated', async () => {
    const { fresh, agentOptions, risky } = await paused();
    const resumed = await createBareAgent(agentOptions).resume(fresh(), {
      approvals: {
        r1: { behavior: "allow", updatedInput: { target: "gamma" } },
        r2: { behavior: "allow", updatedInput: { target: 7 } },
      },
    });
    expect(risky.runs).toEqual(["gamma"]);
    expectOkResult(resumed.messages, "r1", "gamma");
    expectErrorResult(resumed.messages, "r2");
  });

  it("updatedInput on resume is checked against the deny rules", async () => {
    const { fresh, agentOptions, risky } = await paused({
      permissions: { ask: ["risky"], deny: ["risky(prod*)"] },
    });
    const resumed = await createBareAgent(agentOptions).resume(fresh(), {
      approvals: { r1: { behavior: "allow", updatedInput: { target: "prod-eu" } }, r2: true },
    });
    expectErrorResult(resumed.messages, "r1", /denied/i);
    expect(risky.runs).toEqual(["beta"]);
  });

  it("takes the state as JSON text", async () => {
    const { result, agentOptions, risky } = await paused();
    const resumed = await createBareAgent(agentOptions).resume(JSON.stringify(result.state), {
      approvals: { r1: true, r2: true },
    });
    expect(resumed.subtype).toBe("success");
    expect(risky.runs).toEqual(["alpha", "beta"]);
  });

  it("a state can be resumed again: resuming does not consume or alter it", async () => {
    const { result, agentOptions } = await paused();
    const before = JSON.stringify(result.state);
    await createBareAgent(agentOptions).resume(result.state!, { approvals: { r1: false } });
    expect(JSON.stringify(result.state)).toBe(before);
  });

  it("pauses again when a call of the resumed batch's next turn asks", async () => {
    const safe = countingTool("safe");
    const risky = countingTool("risky");
    const model = scriptedModel([
      { toolCalls: [{ id: "r1", name: "risky", input: { target: "a" } }] },
      { toolCalls: [{ id: "r2", name: "risky", input: { target: "b" } }] },
      { text: "end" },
    ]);
    const options: AgentOptions = {
      model,
      tools: [safe.tool, risky.tool],
      permissions: { ask: ["risky"] },
    };
    const first = await createBareAgent(options).run("go");
    const second = await createBareAgent(options).resume(first.state!, { approvals: { r1: true } });
    expect(second.subtype).toBe("paused");
    expect(second.pending?.map((call) => call.id)).toEqual(["r2"]);
    const third = await createBareAgent(options).resume(second.state!, { approvals: { r2: true } });
    expect(third.subtype).toBe("success");
    expect(risky.runs).toEqual(["a", "b"]);
    expectValidTranscript(third.messages);
  });
});

describe("approvals for held calls", () => {
  it("may name a held call: false keeps it from running, true lets it run", async () => {
    const denied = await paused();
    const refused = await createBareAgent(denied.agentOptions).resume(denied.fresh(), {
      approvals: { r1: true, s2: false },
    });
    expect(refused.subtype).toBe("success");
    expect(denied.safe.runs).toEqual(["one", "three"]);
    expectValidTranscript(refused.messages);

    const allowed = await paused();
    await createBareAgent(allowed.agentOptions).resume(allowed.fresh(), {
      approvals: { r1: true, s2: true },
    });
    expect(allowed.safe.runs).toEqual(["one", "two", "three"]);
  });
});

describe("resume refuses bad approvals before anything runs", () => {
  async function expectRefused(approvals: Record<string, unknown>) {
    const { fresh, agentOptions, safe, risky, model } = await paused();
    const error = await rejectionOf(
      createBareAgent(agentOptions).resume(fresh(), {
        approvals: approvals as Record<string, PermissionResult>,
      }),
    );
    expect(error.name).toBe("ResumeError");
    expect(risky.runs).toEqual([]);
    expect(safe.runs).toEqual(["one"]);
    expect(model.requests).toHaveLength(1);
    return error;
  }

  it("an unknown call id", async () => {
    const error = await expectRefused({ r1: true, nope: true });
    expect(error.message).toContain("nope");
  });

  it("the id of a call that already ran", async () => {
    await expectRefused({ s1: true });
  });

  const garbage: [string, unknown][] = [
    ['the string "yes"', "yes"],
    ["the number 1", 1],
    ["null", null],
    ["undefined", undefined],
    ["an empty object", {}],
    ['{ behavior: "deny" } without a message', { behavior: "deny" }],
    ['{ behavior: "maybe" }', { behavior: "maybe" }],
  ];
  for (const [what, answer] of garbage) {
    it(`a non-decision value: ${what}`, async () => {
      await expectRefused({ r1: answer });
    });
  }

  it("approvals that are not an object", async () => {
    await expectRefused([true] as unknown as Record<string, unknown>);
  });
});

describe("approvalSecret: resuming in another process", () => {
  it("must be a string of at least 16 characters", () => {
    for (const secret of ["short", "", "0123456789abcde", 12345]) {
      expect(
        () =>
          createBareAgent({
            model: scriptedModel([]),
            approvalSecret: secret as unknown as string,
          }),
        String(secret),
      ).toThrow(ConfigurationError);
    }
    expect(() =>
      createBareAgent({ model: scriptedModel([]), approvalSecret: "0123456789abcdef" }),
    ).not.toThrow();
  });

  it("a second agent with the same secret resumes the state", async () => {
    const { fresh, agentOptions, risky } = await paused({ approvalSecret: SECRET });
    const resumed = await createBareAgent({ ...agentOptions, approvalSecret: SECRET }).resume(
      fresh(),
      { approvals: { r1: true, r2: true } },
    );
    expect(resumed.subtype).toBe("success");
    expect(risky.runs).toEqual(["alpha", "beta"]);
  });

  it("a second agent with another secret, or none, is refused before anything runs", async () => {
    const { fresh, agentOptions, risky, safe } = await paused({ approvalSecret: SECRET });
    for (const other of [
      { approvalSecret: "another-secret-of-16+" },
      { approvalSecret: undefined },
    ]) {
      const error = await rejectionOf(
        createBareAgent({ ...agentOptions, ...other }).resume(fresh(), {
          approvals: { r1: true, r2: true },
        }),
      );
      expect(error.name).toBe("ResumeError");
    }
    expect(risky.runs).toEqual([]);
    expect(safe.runs).toEqual(["one"]);
  });

  it("a state paused without a secret is refused by an agent with one", async () => {
    const { fresh, agentOptions, risky } = await paused();
    const error = await rejectionOf(
      createBareAgent({ ...agentOptions, approvalSecret: SECRET }).resume(fresh(), {
        approvals: { r1: true },
      }),
    );
    expect(error.name).toBe("ResumeError");
    expect(risky.runs).toEqual([]);
  });

  /** A fresh copy of the package: what a second process would load. */
  async function secondProcess() {
    vi.resetModules();
    const skein = await import("skein");
    const testing = await import("skein/testing");
    const runs: string[] = [];
    const risky = skein.tool(
      "risky",
      "The risky tool",
      z.object({ target: z.string() }),
      async ({ target }) => {
        runs.push(target);
        return `risky ran on ${target}`;
      },
      { ruleContent: (input) => input.target },
    );
    const safe = skein.tool(
      "safe",
      "The safe tool",
      z.object({ target: z.string() }),
      async ({ target }) => {
        runs.push(`safe:${target}`);
        return "ok";
      },
    );
    const options = (extra: Partial<AgentOptions>) =>
      ({
        model: testing.scriptedModel([{ text: "all done" }]),
        tools: [safe, risky],
        permissions: { ask: ["risky"] },
        ...extra,
      }) as AgentOptions;
    return { skein, runs, options };
  }

  it("in a fresh copy of the package: works with the shared secret", async () => {
    const { fresh } = await paused({ approvalSecret: SECRET });
    const other = await secondProcess();
    const resumed = await other.skein
      .createBareAgent(other.options({ approvalSecret: SECRET }))
      .resume(fresh(), { approvals: { r1: true, r2: true } });
    expect(resumed.subtype).toBe("success");
    expect(other.runs.filter((run) => run.startsWith("safe:")).sort()).toEqual([
      "safe:three",
      "safe:two",
    ]);
    expect(other.runs.filter((run) => !run.startsWith("safe:"))).toEqual(["alpha", "beta"]);
  });

  it("in a fresh copy of the package: refused without a secret (the default key is per process)", async () => {
    vi.stubEnv("SKEIN_APPROVAL_SECRET", undefined);
    const { fresh } = await paused();
    const other = await secondProcess();
    const error = await rejectionOf(
      other.skein.createBareAgent(other.options({})).resume(fresh(), {
        approvals: { r1: true, r2: true },
      }),
    );
    expect(error.name).toBe("ResumeError");
    expect(other.runs).toEqual([]);
  });
});

describe("ToolContext.runData across a pause", () => {
  function runDataSetup() {
    const seen: unknown[] = [];
    const setter = tool(
      "setter",
      "Stores a value",
      z.object({ value: z.string() }),
      (input, ctx) => {
        ctx.runData.set("test.value", { stored: input.value, list: [1, 2] });
        return "stored";
      },
    );
    const getter = tool("getter", "Reads the value", z.object({}), (_input, ctx) => {
      seen.push(ctx.runData.get("test.value"));
      return JSON.stringify(ctx.runData.get("test.value") ?? null);
    });
    const gate = countingTool("gate");
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "set", name: "setter", input: { value: "v1" } },
          { id: "ask", name: "gate", input: { target: "x" } },
          { id: "held", name: "getter", input: {} },
        ],
      },
      { toolCalls: [{ id: "later", name: "getter", input: {} }] },
      { text: "done" },
    ]);
    const options: AgentOptions = {
      model,
      tools: [setter, getter, gate.tool],
      permissions: { ask: ["gate"] },
    };
    return { seen, options };
  }

  it("a value set before the pause is read after resume, by a held call and in a later turn", async () => {
    const { seen, options } = runDataSetup();
    const first = await createBareAgent(options).run("go");
    expect(first.subtype).toBe("paused");
    expect(seen).toEqual([]);
    const state = JSON.parse(JSON.stringify(first.state)) as RunState;
    const resumed = await createBareAgent(options).resume(state, { approvals: { ask: true } });
    expect(resumed.subtype).toBe("success");
    const value = { stored: "v1", list: [1, 2] };
    expect(seen).toEqual([value, value]);
    expect(resultText(toolResultsOf(resumed.messages.at(-2)).at(-1))).toBe(JSON.stringify(value));
  });
});
