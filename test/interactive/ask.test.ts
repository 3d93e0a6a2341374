/**
 * `beforeToolCall` may answer `{ ask: reason }` (design/interactive.md, "Model settings and
 * transport"): unless a deny rule applies, the call goes to the approval path as an ask rule
 * would: the handler gets the reason; without a handler the run pauses with the call's
 * `approvalReason`; on resume an approved call runs without `beforeToolCall` again.
 */
import { createBareAgent, type RunState } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { resultFor, resultText } from "../support/results.ts";
import { countingTool } from "../support/tools.ts";
import { detailsOf } from "./helpers.ts";

const REASON = "Deploys need a second pair of eyes.";

function setup() {
  const deploy = countingTool("deploy");
  const hookCalls: string[] = [];
  const approvals: { name: string; reason: string | undefined; callId: string }[] = [];
  const model = () =>
    scriptedModel([
      { toolCalls: [{ id: "d1", name: "deploy", input: { target: "staging" } }] },
      { text: "done" },
    ]);
  const hooks = {
    beforeToolCall: ({ callId }: { callId: string }) => {
      hookCalls.push(callId);
      return { ask: REASON };
    },
  };
  return { deploy, hookCalls, approvals, model, hooks };
}

describe("beforeToolCall { ask }", () => {
  it("goes to the approval handler with the reason; approved, the call runs", async () => {
    const { deploy, hookCalls, approvals, model, hooks } = setup();
    const result = await createBareAgent({
      model: model(),
      tools: [deploy.tool],
      hooks,
      approval: (name, _input, { reason, callId }) => {
        approvals.push({ name, reason, callId });
        return true;
      },
    }).run("deploy");
    expect(approvals).toEqual([{ name: "deploy", reason: REASON, callId: "d1" }]);
    expect(deploy.runs).toEqual(["staging"]);
    expect(hookCalls).toEqual(["d1"]);
    expect(result.subtype).toBe("success");
  });

  it("denied by the handler, the call does not run", async () => {
    const { deploy, model, hooks } = setup();
    const result = await createBareAgent({
      model: model(),
      tools: [deploy.tool],
      hooks,
      approval: () => ({ behavior: "deny", message: "not today" }),
    }).run("deploy");
    expect(deploy.runs).toEqual([]);
    expect(resultFor(result.messages, "d1").is_error).toBe(true);
    expect(resultText(resultFor(result.messages, "d1"))).toContain("not today");
  });

  it("wins over an allow rule, as an ask rule would", async () => {
    const { deploy, approvals, model, hooks } = setup();
    await createBareAgent({
      model: model(),
      tools: [deploy.tool],
      hooks,
      permissions: { allow: ["deploy"] },
      approval: (name, _input, { reason, callId }) => {
        approvals.push({ name, reason, callId });
        return true;
      },
    }).run("deploy");
    expect(approvals.map((entry) => entry.reason)).toEqual([REASON]);
  });

  it("a deny rule still wins: the handler is never asked", async () => {
    const { deploy, approvals, model, hooks } = setup();
    const result = await createBareAgent({
      model: model(),
      tools: [deploy.tool],
      hooks,
      permissions: { deny: ["deploy(staging)"] },
      approval: (name, _input, { reason, callId }) => {
        approvals.push({ name, reason, callId });
        return true;
      },
    }).run("deploy");
    expect(approvals).toEqual([]);
    expect(deploy.runs).toEqual([]);
    expect(resultFor(result.messages, "d1").is_error).toBe(true);
    expect(detailsOf(result, "d1").reason).toBe("denied");
  });

  it("without a handler the run pauses with approvalReason; resumed approved, it runs without beforeToolCall again", async () => {
    const { deploy, hookCalls, model, hooks } = setup();
    const options = {
      tools: [deploy.tool],
      hooks,
      approvalSecret: "a-secret-shared-by-both-agents",
    };
    const paused = await createBareAgent({ model: model(), ...options }).run("deploy");
    expect(paused.subtype).toBe("paused");
    expect(paused.pending).toEqual([
      {
        id: "d1",
        name: "deploy",
        input: { target: "staging" },
        reason: "approval",
        approvalReason: REASON,
      },
    ]);
    expect(deploy.runs).toEqual([]);
    expect(hookCalls).toEqual(["d1"]);

    const state = JSON.parse(JSON.stringify(paused.state)) as RunState;
    const next = scriptedModel([{ text: "deployed" }]);
    const resumed = await createBareAgent({ model: next, ...options }).resume(state, {
      approvals: { d1: true },
    });
    expect(resumed.subtype).toBe("success");
    expect(deploy.runs).toEqual(["staging"]);
    expect(hookCalls).toEqual(["d1"]);
    expect(resultText(resultFor(resumed.messages, "d1"))).toBe("deploy ran on staging");
  });

  it("resumed and denied, the call does not run", async () => {
    const { deploy, model, hooks } = setup();
    const options = {
      tools: [deploy.tool],
      hooks,
      approvalSecret: "a-secret-shared-by-both-agents",
    };
    const paused = await createBareAgent({ model: model(), ...options }).run("deploy");
    const resumed = await createBareAgent({
      model: scriptedModel([{ text: "ok" }]),
      ...options,
    }).resume(paused.state!, { approvals: { d1: false } });
    expect(deploy.runs).toEqual([]);
    expect(resultFor(resumed.messages, "d1").is_error).toBe(true);
  });

  it("an ask whose reason is not a string does not run the call", async () => {
    const deploy = countingTool("deploy");
    const model = scriptedModel([
      { toolCalls: [{ id: "d1", name: "deploy", input: { target: "x" } }] },
      { text: "done" },
    ]);
    const result = await createBareAgent({
      model,
      tools: [deploy.tool],
      hooks: { beforeToolCall: () => ({ ask: 42 }) as never },
      approval: () => true,
    }).run("go");
    expect(deploy.runs).toEqual([]);
    expect(resultFor(result.messages, "d1").is_error).toBe(true);
  });
});
