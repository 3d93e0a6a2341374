// Lifecycle hooks across a tree of agents (design/policy.md): a root hook sees every call of a
// three-level tree, innermost first, with depth and parentCallId; scope "self"; the new hooks.
import {
  agentTool,
  commandHook,
  createBareAgent,
  HookError,
  memoryStore,
  type SDKResultMessage,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

function noteTool(name = "note") {
  const runs: string[] = [];
  return {
    runs,
    tool: tool(name, `The ${name} tool`, z.object({ note: z.string() }), ({ note }) => {
      runs.push(note);
      return `noted ${note}`;
    }),
  };
}

/** root --r2--> child --c2--> grandchild; each level calls `note` once. */
function threeLevels(hooks: {
  root?: Record<string, unknown>;
  child?: Record<string, unknown>;
  grandchild?: Record<string, unknown>;
}) {
  const note = noteTool();
  const grandchild = createBareAgent({
    id: "grandchild",
    model: scriptedModel([
      { toolCalls: [{ id: "g1", name: "note", input: { note: "g" } }] },
      { text: "grandchild done" },
    ]),
    tools: [note.tool],
    ...(hooks.grandchild ? { hooks: hooks.grandchild } : {}),
  });
  const child = createBareAgent({
    id: "child",
    model: scriptedModel([
      {
        toolCalls: [
          { id: "c1", name: "note", input: { note: "c" } },
          { id: "c2", name: "grandchild", input: { prompt: "deeper" } },
        ],
      },
      { text: "child done" },
    ]),
    tools: [note.tool, agentTool(grandchild, { description: "G" })],
    ...(hooks.child ? { hooks: hooks.child } : {}),
  });
  const root = createBareAgent({
    model: scriptedModel([
      {
        toolCalls: [
          { id: "r1", name: "note", input: { note: "r" } },
          { id: "r2", name: "child", input: { prompt: "work" } },
        ],
      },
      { text: "root done" },
    ]),
    tools: [note.tool, agentTool(child, { description: "C" })],
    ...(hooks.root ? { hooks: hooks.root } : {}),
  });
  return { root, note };
}

describe("hooks cover the tree beneath the agent that registered them", () => {
  it("a root hook sees every call and model call of a three-level tree, with depth and parentCallId", async () => {
    const seen: unknown[] = [];
    const models: unknown[] = [];
    const { root } = threeLevels({
      root: {
        beforeToolCall: ({ callId, depth, parentCallId }: any) => {
          seen.push({ callId, depth, parentCallId });
        },
        beforeModelCall: ({ depth, parentCallId }: any) => {
          models.push({ depth, parentCallId });
        },
      },
    });
    const result = await root.run("go");
    expect(result.subtype).toBe("success");
    expect(seen).toEqual([
      { callId: "r1", depth: 0, parentCallId: undefined },
      { callId: "r2", depth: 0, parentCallId: undefined },
      { callId: "c1", depth: 1, parentCallId: "r2" },
      { callId: "c2", depth: 1, parentCallId: "r2" },
      { callId: "g1", depth: 2, parentCallId: "c2" },
    ]);
    expect(models).toEqual([
      { depth: 0, parentCallId: undefined },
      { depth: 1, parentCallId: "r2" },
      { depth: 2, parentCallId: "c2" },
      { depth: 2, parentCallId: "c2" },
      { depth: 1, parentCallId: "r2" },
      { depth: 0, parentCallId: undefined },
    ]);
  });

  it("innermost first: the grandchild's own hook, then the child's, then the root's", async () => {
    const order: string[] = [];
    const log =
      (who: string) =>
      ({ callId }: any) => {
        if (callId === "g1") order.push(who);
      };
    const { root } = threeLevels({
      root: { beforeToolCall: log("root") },
      child: { beforeToolCall: log("child") },
      grandchild: { beforeToolCall: log("grandchild") },
    });
    await root.run("go");
    expect(order).toEqual(["grandchild", "child", "root"]);
  });

  it("a child cannot remove a parent's hook: a parent's block holds whatever the child's hook says", async () => {
    const { root, note } = threeLevels({
      root: {
        beforeToolCall: ({ name, depth }: any) =>
          name === "note" && depth > 0 ? { block: true, reason: "root says no" } : undefined,
      },
      grandchild: { beforeToolCall: () => undefined },
    });
    const result = await root.run("go");
    expect(result.subtype).toBe("success");
    expect(note.runs).toEqual(["r"]);
  });

  it('scope "self" sees only the registering agent\'s own calls', async () => {
    const seen: string[] = [];
    const { root } = threeLevels({
      root: {
        beforeToolCall: { handler: ({ callId }: any) => void seen.push(callId), scope: "self" },
      },
    });
    await root.run("go");
    expect(seen).toEqual(["r1", "r2"]);
  });

  it("subagentStart and subagentStop for every child run, with the child's name and result", async () => {
    const events: unknown[] = [];
    const { root } = threeLevels({
      root: {
        subagentStart: ({ name, parentCallId, depth }: any) =>
          void events.push(["start", name, parentCallId, depth]),
        subagentStop: ({ name, parentCallId, depth, result }: any) =>
          void events.push(["stop", name, parentCallId, depth, result.result]),
      },
    });
    await root.run("go");
    expect(events).toEqual([
      ["start", "child", "r2", 1],
      ["start", "grandchild", "c2", 2],
      ["stop", "grandchild", "c2", 2, "grandchild done"],
      ["stop", "child", "r2", 1, "child done"],
    ]);
  });
});

describe("userPromptSubmit", () => {
  it("replaces the prompt", async () => {
    const model = scriptedModel([{ text: "ok" }]);
    const agent = createBareAgent({
      model,
      hooks: { userPromptSubmit: ({ prompt }) => ({ prompt: `${prompt} (please be brief)` }) },
    });
    await agent.run("hello");
    expect(model.requests[0]!.messages[0]!.content).toBe("hello (please be brief)");
  });

  it("blocks: error_blocked with the reason, no model call, nothing logged", async () => {
    const model = scriptedModel([{ text: "never" }]);
    const store = memoryStore();
    const agent = createBareAgent({
      model,
      sessionStore: store,
      hooks: { userPromptSubmit: () => ({ block: true, reason: "no secrets in prompts" }) },
    });
    const result = await agent.run("my password is hunter2", { sessionId: "s" });
    expect(result).toMatchObject({ subtype: "error_blocked", isError: true });
    expect(result.error?.message).toBe("no secrets in prompts");
    expect(model.requests).toHaveLength(0);
    expect(JSON.stringify(result.messages)).not.toContain("hunter2");
    const logged = await store.read("s");
    expect(JSON.stringify(logged)).not.toContain("hunter2");
  });

  it("a throw ends the run with a HookError naming the hook", async () => {
    const model = scriptedModel([{ text: "never" }]);
    const agent = createBareAgent({
      model,
      hooks: {
        userPromptSubmit: () => {
          throw new Error("boom");
        },
      },
    });
    const result = await agent.run("hi");
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error).toMatchObject({ name: "HookError" });
    expect(result.error!.message).toMatch(/userPromptSubmit.*boom/);
    expect(model.requests).toHaveLength(0);
  });

  it("a hook past its timeoutMs fails as if it threw", async () => {
    const agent = createBareAgent({
      model: scriptedModel([{ text: "never" }]),
      hooks: { userPromptSubmit: { handler: () => new Promise(() => {}), timeoutMs: 20 } },
    });
    const result = await agent.run("hi");
    expect(result.error?.name).toBe(new HookError("x").name);
    expect(result.error!.message).toMatch(/did not answer within 20 ms/);
  });
});

describe("sessionStart, sessionEnd and stop", () => {
  it("sessionStart says new or continue; sessionEnd gets the subtype", async () => {
    const seen: string[] = [];
    const agent = createBareAgent({
      model: scriptedModel([{ text: "one" }, { text: "two" }]),
      sessionStore: memoryStore(),
      hooks: {
        sessionStart: ({ source }) => void seen.push(`start ${source}`),
        sessionEnd: ({ reason }) => void seen.push(`end ${reason}`),
      },
    });
    await agent.run("a", { sessionId: "s" });
    await agent.run("b", { sessionId: "s" });
    expect(seen).toEqual(["start new", "end success", "start continue", "end success"]);
  });

  it("stop keeps the run going with its message, at most maxStopContinuations times", async () => {
    const model = scriptedModel([{ text: "1" }, { text: "2" }, { text: "3" }, { text: "4" }]);
    const active: boolean[] = [];
    const agent = createBareAgent({
      model,
      maxStopContinuations: 2,
      hooks: {
        stop: ({ stopHookActive }) => {
          active.push(stopHookActive);
          return { continue: "Check your work once more." };
        },
      },
    });
    const result: SDKResultMessage = await agent.run("go");
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("3");
    expect(model.requests).toHaveLength(3);
    expect(active).toEqual([false, true, true]);
    expect(JSON.stringify(model.requests[1]!.messages.at(-1)!.content)).toContain(
      "Check your work once more.",
    );
  });
});

describe("preCompact", () => {
  const big = "x".repeat(8000);
  function compacting(preCompact: (ctx: any) => unknown) {
    const model = scriptedModel([
      { toolCalls: [{ id: "t1", name: "big", input: {} }] },
      { toolCalls: [{ id: "t2", name: "big", input: {} }] },
      { text: "done" },
    ]);
    const agent = createBareAgent({
      model,
      tools: [tool("big", "Big output", z.object({}), () => big)],
      context: { window: 3000, threshold: 0.5, target: 0.3 },
      hooks: { preCompact: preCompact as never },
    });
    return { model, agent };
  }

  it("sees the messages before anything is removed, and may veto", async () => {
    const seen: number[] = [];
    const { model, agent } = compacting(({ messages }) => {
      seen.push(messages.length);
      return { veto: true };
    });
    await agent.run("go");
    expect(seen.length).toBeGreaterThan(0);
    // Vetoed: the full results are still sent.
    expect(JSON.stringify(model.requests.at(-1)!.messages)).not.toContain("skein: removed");
  });

  it("may supply the summary", async () => {
    const { model, agent } = compacting(() => ({ summary: "The tool printed x's." }));
    await agent.run("go");
    expect(JSON.stringify(model.requests.at(-1)!.messages)).toContain("The tool printed x's.");
  });
});

describe("commandHook: Claude Code's hook format", () => {
  function deployAgent(hooks: Record<string, unknown>, targets: string[], extra = {}) {
    const deploy = noteTool("deploy");
    const model = scriptedModel([
      { toolCalls: targets.map((note, i) => ({ id: `d${i}`, name: "deploy", input: { note } })) },
      { text: "done" },
    ]);
    const agent = createBareAgent({ model, tools: [deploy.tool], hooks, ...extra });
    return { agent, deploy, model };
  }

  it("PreToolUse: stdin JSON; exit 2 blocks with stderr; JSON deny and ask; exit 1 is a HookError", async () => {
    const inputs = `${process.env.TMPDIR ?? "/tmp"}/skein-hook-${process.pid}.jsonl`;
    const script = [
      `input=$(cat); printf '%s\\n' "$input" >> '${inputs}'`,
      `case "$input" in`,
      `  *'"note":"prod"'*) echo "no prod deploys" >&2; exit 2;;`,
      `  *'"note":"deny"'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"denied by script"}}';;`,
      `  *'"note":"ask"'*) echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"a human should look"}}';;`,
      `  *'"note":"crash"'*) echo "oops" >&2; exit 1;;`,
      `esac`,
    ].join("\n");
    const { agent, deploy } = deployAgent({ beforeToolCall: commandHook(script) }, [
      "staging",
      "prod",
      "deny",
      "ask",
      "crash",
    ]);
    const result = await agent.run("go");
    expect(deploy.runs).toEqual(["staging"]);
    const text = (id: string) =>
      JSON.stringify(result.steps[0]!.toolCalls.find((c) => c.callId === id)!.result.content);
    expect(text("d1")).toContain("no prod deploys");
    expect(text("d2")).toContain("denied by script");
    expect(result.pending?.map((p) => [p.id, p.approvalReason])).toEqual([
      ["d3", "a human should look"],
    ]);
    expect(text("d4")).toMatch(/exited with code 1: oops/);
    const { readFileSync, rmSync } = await import("node:fs");
    const first = JSON.parse(readFileSync(inputs, "utf8").split("\n")[0]!);
    rmSync(inputs, { force: true });
    expect(first).toMatchObject({
      hook_event_name: "PreToolUse",
      tool_name: "deploy",
      tool_input: { note: "staging" },
      cwd: process.cwd(),
    });
    expect(typeof first.session_id).toBe("string");
  });

  it("UserPromptSubmit's plain stdout is added as context; Stop's block continues once", async () => {
    const model = scriptedModel([{ text: "first" }, { text: "second" }]);
    const agent = createBareAgent({
      model,
      maxStopContinuations: 1,
      hooks: {
        userPromptSubmit: commandHook("cat > /dev/null; echo 'Today is Monday.'"),
        stop: commandHook(
          `input=$(cat); case "$input" in *'"stop_hook_active":false'*) echo '{"decision":"block","reason":"Run the tests first."}';; esac`,
        ),
      },
    });
    const result = await agent.run("plan the week");
    expect(result.result).toBe("second");
    expect(model.requests[0]!.messages[0]!.content).toBe("plan the week\n\nToday is Monday.");
    expect(JSON.stringify(model.requests[1]!.messages.at(-1))).toContain("Run the tests first.");
  });

  it("is refused for beforeModelCall and under the hardened preset", () => {
    const model = scriptedModel([{ text: "x" }]);
    expect(() =>
      createBareAgent({ model, hooks: { beforeModelCall: commandHook("true") as never } }),
    ).toThrow(/beforeModelCall cannot be a commandHook/);
    expect(() =>
      createBareAgent({ model, preset: "hardened", hooks: { stop: commandHook("true") } }),
    ).toThrow(/refused under the hardened preset/);
  });
});
