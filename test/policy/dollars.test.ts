// maxBudgetUsd (design/policy.md, "Budgets"): counts each model call's priced usage over the tree;
// a model with no price is refused before any request, with how to fix it.
import { agentTool, ConfigurationError, createBareAgent, type Model, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { expectValidTranscript } from "../support/results.ts";

const PRICE = { inputPerMTok: 1_000_000, outputPerMTok: 1_000_000 }; // $1 a token

describe("maxBudgetUsd", () => {
  it("trips on the dollars of the tree's priced calls, the child's included", async () => {
    const child = createBareAgent({
      id: "child",
      model: scriptedModel(
        [
          {
            toolCalls: [{ id: "c1", name: "noop", input: {} }],
            usage: { inputTokens: 2, outputTokens: 1 },
          },
          { text: "never" },
        ],
        { modelId: "my-child-model" },
      ),
      pricing: { "my-child-model": PRICE },
      tools: [tool("noop", "Does nothing", z.object({}), () => "ok")],
    });
    const rootModel = scriptedModel(
      [
        {
          toolCalls: [{ id: "r1", name: "child", input: { prompt: "go" } }],
          usage: { inputTokens: 1, outputTokens: 1 },
        },
        { text: "never" },
      ],
      { modelId: "my-model" },
    );
    const root = createBareAgent({
      model: rootModel,
      pricing: { "my-model": PRICE },
      tools: [agentTool(child, { description: "C" })],
      maxBudgetUsd: 4,
    });
    // $2 at the root, then $3 in the child: $5 > $4.
    const result = await root.run("go");
    expect(result.subtype).toBe("error_max_budget");
    expect(result.error!.message).toMatch(
      /maxBudgetUsd \(AgentOptions\) is \$4, and the agent tree reached \$5\.000000/,
    );
    expect(rootModel.requests).toHaveLength(1);
    expectValidTranscript(result.messages);
  });

  it("a model with no price is a ConfigurationError before any request, saying to pass pricing", async () => {
    const model = scriptedModel([{ text: "hi" }], { modelId: "unpriced-model" });
    let thrown: unknown;
    try {
      createBareAgent({ model, maxBudgetUsd: 1 });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigurationError);
    expect((thrown as Error).message).toMatch(
      /AgentOptions: maxBudgetUsd counts US dollars, but the model "unpriced-model" \(the agent\) has no price.*pricing: \{ "unpriced-model": \{ inputPerMTok, outputPerMTok \} \}/,
    );
    // As a run option too; with a price the same agent runs.
    const agent = createBareAgent({ model });
    await expect(agent.run("go", { maxBudgetUsd: 1 })).rejects.toThrow(
      /RunOptions: maxBudgetUsd counts US dollars, but the model "unpriced-model"/,
    );
    expect(model.requests).toHaveLength(0);
    const priced = createBareAgent({
      model,
      pricing: { "unpriced-model": PRICE },
      maxBudgetUsd: 100,
    });
    expect((await priced.run("go")).subtype).toBe("success");
  });

  it("an unpriced model anywhere in the tree is refused at the root's assembly, naming the agent", () => {
    const child = createBareAgent({
      id: "helper",
      model: scriptedModel([{ text: "x" }], { modelId: "local-llm" }),
    });
    expect(() =>
      createBareAgent({
        model: scriptedModel([{ text: "x" }], { modelId: "claude-sonnet-4-6" }),
        tools: [agentTool(child, { description: "H" })],
        maxBudgetUsd: 1,
      }),
    ).toThrow(/the model "local-llm" \(helper\) has no price/);
  });

  it("a model a beforeModelCall hook swaps in without a price ends the run before its request", async () => {
    const other = scriptedModel([{ text: "never" }], { modelId: "swapped-in" });
    const agent = createBareAgent({
      model: scriptedModel([{ text: "x" }], { modelId: "claude-sonnet-4-6" }),
      maxBudgetUsd: 1,
      hooks: { beforeModelCall: () => ({ model: other as Model }) },
    });
    const result = await agent.run("go");
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error).toMatchObject({ name: "ConfigurationError" });
    expect(result.error!.message).toMatch(/"swapped-in" \(the agent\) has no price/);
    expect(other.requests).toHaveLength(0);
  });
});
