// Tool input guardrails run after the rules and before approval (design/policy.md, "Guardrails"):
// a tripped check is never put to the approval handler, and a run never pauses to ask about it.
import { createBareAgent, type PermissionResult, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

function deploy() {
  const runs: string[] = [];
  const definition = tool("deploy", "Deploys", z.object({ target: z.string() }), ({ target }) => {
    runs.push(target);
    return `deployed ${target}`;
  });
  return { tool: definition, runs };
}

const noProd = {
  name: "no-prod",
  check: ({ input }: { input: unknown }) => ({
    tripwire: JSON.stringify(input).includes("prod"),
    info: "production is off limits",
  }),
};

describe("tool input guardrails come before approval", () => {
  it("a tripped check ends the run before the approval handler is asked", async () => {
    const { tool: deployTool, runs } = deploy();
    const order: string[] = [];
    const agent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "d1", name: "deploy", input: { target: "prod" } }] },
        { text: "never" },
      ]),
      tools: [deployTool],
      permissions: { ask: ["deploy"] },
      approval: () => {
        order.push("approval");
        return true;
      },
      guardrails: {
        toolInput: [
          {
            ...noProd,
            check: (context) => {
              order.push("guardrail");
              return noProd.check(context);
            },
          },
        ],
      },
    });
    const result = await agent.run("ship it");
    expect(result.subtype).toBe("error_guardrail");
    expect(result.error!.message).toBe(
      'The toolInput guardrail "no-prod" tripped: production is off limits',
    );
    expect(order).toEqual(["guardrail"]);
    expect(runs).toEqual([]);
  });

  it("without a handler the run ends with error_guardrail instead of pausing to ask", async () => {
    const { tool: deployTool, runs } = deploy();
    const agent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "d1", name: "deploy", input: { target: "prod" } }] },
        { text: "never" },
      ]),
      tools: [deployTool],
      permissions: { ask: ["deploy"] },
      guardrails: { toolInput: [noProd] },
    });
    const result = await agent.run("ship it");
    expect(result.subtype).toBe("error_guardrail");
    expect(result.pending).toBeUndefined();
    expect(runs).toEqual([]);
  });

  it("a passed check, then approval: the call runs; input an approval rewrites is checked again", async () => {
    const { tool: deployTool, runs } = deploy();
    const seen: string[] = [];
    const rails = {
      toolInput: [
        {
          ...noProd,
          check: (context: { input: unknown }) => {
            seen.push(JSON.stringify(context.input));
            return noProd.check(context);
          },
        },
      ],
    };
    const ok = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "d1", name: "deploy", input: { target: "staging" } }] },
        { text: "done" },
      ]),
      tools: [deployTool],
      permissions: { ask: ["deploy"] },
      approval: () => true,
      guardrails: rails,
    });
    expect((await ok.run("ship it")).subtype).toBe("success");
    expect(runs).toEqual(["staging"]);
    expect(seen).toEqual(['{"target":"staging"}']);

    seen.length = 0;
    const rewritten = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "d1", name: "deploy", input: { target: "staging" } }] },
        { text: "never" },
      ]),
      tools: [deployTool],
      permissions: { ask: ["deploy"] },
      approval: (): PermissionResult => ({ behavior: "allow", updatedInput: { target: "prod" } }),
      guardrails: rails,
    });
    const result = await rewritten.run("ship it");
    expect(result.subtype).toBe("error_guardrail");
    expect(seen).toEqual(['{"target":"staging"}', '{"target":"prod"}']);
    expect(runs).toEqual(["staging"]);
  });
});
