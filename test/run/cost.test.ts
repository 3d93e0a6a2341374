/**
 * Cost (design/models.md, "Cost"): `costUsd` on each step's usage, the run's and the tree's,
 * from `MODEL_PRICES` and the agent's `pricing`; undefined (never 0) when a model call had no
 * price; and the checks on `pricing` and `modelSettings.reasoning`.
 */
import {
  agentTool,
  ConfigurationError,
  createBareAgent,
  MODEL_PRICES,
  PRICES_TAKEN,
  type SDKResultMessage,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";

const usage = {
  inputTokens: 1000,
  outputTokens: 200,
  cacheReadInputTokens: 4000,
  cacheCreationInputTokens: 100,
};

describe("cost", () => {
  it("ships a dated table; a model's price covers its dated ids too", async () => {
    expect(PRICES_TAKEN).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const price = MODEL_PRICES["claude-sonnet-4-6"]!;
    expect(price).toEqual({
      inputPerMTok: 3,
      outputPerMTok: 15,
      cacheReadPerMTok: 0.3,
      cacheWritePerMTok: 3.75,
    });
    const model = scriptedModel([{ text: "ok", usage }], { modelId: "claude-sonnet-4-6-20260101" });
    const result = await createBareAgent({ model }).run("hi");
    const expected = (1000 * 3 + 200 * 15 + 4000 * 0.3 + 100 * 3.75) / 1_000_000;
    expect(result.usage.costUsd).toBeCloseTo(expected, 12);
    expect(result.steps[0]!.usage?.costUsd).toBeCloseTo(expected, 12);
  });

  it("prices by the agent's modelName, and pricing overrides the table", async () => {
    const model = scriptedModel([{ text: "ok", usage }]);
    const result = await createBareAgent({
      model,
      modelName: "gpt-4o",
      pricing: { "gpt-4o": { inputPerMTok: 1000, outputPerMTok: 0 } },
    }).run("hi");
    // Cache reads and writes default to the input price.
    expect(result.usage.costUsd).toBeCloseTo((1000 + 4000 + 100) / 1000, 12);
  });

  it("is undefined, never 0, for a model with no price, and stays so once any call was unpriced", async () => {
    const unpriced = await createBareAgent({
      model: scriptedModel([{ text: "ok", usage }]),
    }).run("hi");
    expect(unpriced.usage.costUsd).toBeUndefined();
    expect("costUsd" in unpriced.usage).toBe(false);

    // A priced parent whose child runs an unpriced model: the tree's cost is unknown.
    const child = createBareAgent({ id: "child", model: scriptedModel([{ text: "c", usage }]) });
    const parent = createBareAgent({
      model: scriptedModel(
        [
          { toolCalls: [{ id: "p1", name: "child", input: { prompt: "go" } }], usage },
          { text: "done", usage },
        ],
        { modelId: "gpt-5-mini" },
      ),
      tools: [agentTool(child, { description: "Works" })],
    });
    const result: SDKResultMessage = await parent.run("hi");
    expect(result.usage.costUsd).toBeGreaterThan(0);
    expect(result.totalUsage.costUsd).toBeUndefined();
    expect(result.totalUsage.inputTokens).toBe(3000);
  });

  it("sums a priced tree into totalUsage.costUsd", async () => {
    const child = createBareAgent({
      id: "child",
      model: scriptedModel([{ text: "c", usage }], { modelId: "gpt-5-mini" }),
    });
    const parent = createBareAgent({
      model: scriptedModel(
        [
          { toolCalls: [{ id: "p1", name: "child", input: { prompt: "go" } }], usage },
          { text: "done", usage },
        ],
        { modelId: "gpt-5-mini" },
      ),
      tools: [agentTool(child, { description: "Works" })],
    });
    const result = await parent.run("hi");
    const one = (1000 * 0.25 + 200 * 2 + 4000 * 0.025 + 100 * 0) / 1_000_000;
    expect(result.usage.costUsd).toBeCloseTo(2 * one, 12);
    expect(result.totalUsage.costUsd).toBeCloseTo(3 * one, 12);
  });

  it("refuses a malformed pricing with a ConfigurationError saying what is wrong", () => {
    const model = scriptedModel([]);
    expect(() => createBareAgent({ model, pricing: [] as never })).toThrow(ConfigurationError);
    expect(() =>
      createBareAgent({ model, pricing: { m: { inputPerMTok: -1, outputPerMTok: 1 } } }),
    ).toThrow(/pricing\["m"\]\.inputPerMTok must be a price/);
    expect(() => createBareAgent({ model, pricing: { m: { inputPerMTok: 1 } as never } })).toThrow(
      /pricing\["m"\]\.outputPerMTok/,
    );
    expect(() =>
      createBareAgent({
        model,
        pricing: { m: { inputPerMTok: 1, outputPerMTok: 1, perCall: 2 } as never },
      }),
    ).toThrow(/perCall/);
  });
});

describe("modelSettings.reasoning", () => {
  it("is checked strictly when the agent is made", () => {
    const model = scriptedModel([]);
    const make = (reasoning: unknown) =>
      createBareAgent({ model, modelSettings: { reasoning: reasoning as never } });
    expect(() => make({ effort: "max" })).toThrow(
      /modelSettings\.reasoning\.effort must be one of/,
    );
    expect(() => make({ summary: "short" })).toThrow(/reasoning\.summary must be one of/);
    expect(() => make({ budgetTokens: 1.5 })).toThrow(/reasoning\.budgetTokens must be a whole/);
    expect(() => make({ effort: "low", depth: 2 })).toThrow(ConfigurationError);
    expect(() => make("high")).toThrow(/must be an object/);
    expect(() => make({ effort: "none", budgetTokens: 2048 })).toThrow(/effort "none"/);
    expect(() => make({ effort: "xhigh", summary: "auto" })).not.toThrow();
  });
});
