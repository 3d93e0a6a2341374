/**
 * Model settings, the engine's part (design/interactive.md, "Model settings and transport"):
 * `modelSettings` checked at assembly with `AgentOptions: modelSettings.<key> must be ...,
 * received <value>.`; `ModelRequest.settings` as a model receives it (`"required"` normalised to
 * `"any"`, absent when there are none); a `beforeModelCall` hook's settings merged over the
 * agent's, key by key, for that call only.
 */
import { ConfigurationError, createBareAgent, type ModelSettings } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { workTool } from "./helpers.ts";

const UNKNOWN =
  'AgentOptions: modelSettings: unknown option "temprature". Check for a typo, or upgrade the SDK if this option was added in a newer version.';

function assemble(modelSettings: unknown) {
  const work = workTool();
  return () =>
    createBareAgent({
      model: scriptedModel([]),
      tools: [work.tool],
      modelSettings: modelSettings as ModelSettings,
    });
}

describe("modelSettings at assembly", () => {
  it.each<[string, unknown, string]>([
    ["temperature", -0.1, "-0.1"],
    ["temperature", Number.NaN, "NaN"],
    ["temperature", Number.POSITIVE_INFINITY, "Infinity"],
    ["temperature", "hot", '"hot"'],
    ["topP", 1.5, "1.5"],
    ["topP", -1, "-1"],
    ["topP", "0.5", '"0.5"'],
    ["stopSequences", "END", '"END"'],
    ["stopSequences", ["END", ""], "an array"],
    ["stopSequences", [1], "an array"],
    ["toolChoice", "sometimes", '"sometimes"'],
    ["toolChoice", { name: "rm_rf" }, '"rm_rf"'],
    ["toolChoice", 3, "3"],
    ["maxOutputTokens", 0, "0"],
    ["maxOutputTokens", 2.5, "2.5"],
    ["maxOutputTokens", -8, "-8"],
    ["maxOutputTokens", "100", '"100"'],
  ])("%s: %j is refused", (key, value, shown) => {
    const build = assemble({ [key]: value });
    expect(build).toThrow(ConfigurationError);
    let message = "";
    try {
      build();
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message.startsWith(`AgentOptions: modelSettings.${key} must be `)).toBe(true);
    expect(message.endsWith(`, received ${shown}.`)).toBe(true);
  });

  it("an unknown key is refused with the usual message", () => {
    expect(assemble({ temprature: 0.2 })).toThrow(UNKNOWN);
  });

  it("a toolChoice { name } with another key is refused", () => {
    expect(assemble({ toolChoice: { name: "work", strict: true } })).toThrow(ConfigurationError);
  });

  it.each<ModelSettings>([
    { temperature: 0 },
    { temperature: 1.7 },
    { topP: 0 },
    { topP: 1 },
    { stopSequences: [] },
    { stopSequences: ["END", "\n\n"] },
    { toolChoice: "auto" },
    { toolChoice: "any" },
    { toolChoice: "required" },
    { toolChoice: "none" },
    { toolChoice: { name: "work" } },
    { maxOutputTokens: 1 },
  ])("%j is accepted", (settings) => {
    expect(assemble(settings)).not.toThrow();
  });
});

describe("ModelRequest.settings", () => {
  it("holds the agent's settings, toolChoice required normalised to any", async () => {
    const model = scriptedModel([{ text: "ok" }]);
    const settings: ModelSettings = {
      temperature: 0.2,
      topP: 0.9,
      stopSequences: ["END"],
      toolChoice: "required",
      maxOutputTokens: 256,
    };
    await createBareAgent({ model, modelSettings: settings }).run("go");
    expect(model.requests[0]!.settings).toEqual({ ...settings, toolChoice: "any" });
  });

  it("is absent when there are none", async () => {
    const model = scriptedModel([{ text: "ok" }, { text: "ok" }]);
    await createBareAgent({ model }).run("go");
    await createBareAgent({ model, modelSettings: {} }).run("go");
    expect(model.requests[0]).not.toHaveProperty("settings");
    expect(model.requests[1]).not.toHaveProperty("settings");
  });

  it("a named toolChoice goes as { name }", async () => {
    const work = workTool();
    const model = scriptedModel([{ text: "ok" }]);
    await createBareAgent({
      model,
      tools: [work.tool],
      modelSettings: { toolChoice: { name: "work" } },
    }).run("go");
    expect(model.requests[0]!.settings).toEqual({ toolChoice: { name: "work" } });
  });
});

describe("settings from beforeModelCall", () => {
  it("are merged over the agent's key by key, for that call only", async () => {
    const work = workTool();
    const model = scriptedModel([
      { toolCalls: [{ id: "c1", name: "work", input: { n: 1 } }] },
      { text: "done" },
    ]);
    const seen: ModelSettings[] = [];
    await createBareAgent({
      model,
      tools: [work.tool],
      modelSettings: { temperature: 0.2, maxOutputTokens: 100 },
      hooks: {
        beforeModelCall: ({ turn, modelSettings }) => {
          seen.push(modelSettings);
          if (turn === 1)
            return { modelSettings: { temperature: 0.9, toolChoice: "required", topP: 0.5 } };
        },
      },
    }).run("go");
    expect(model.requests[0]!.settings).toEqual({
      temperature: 0.9,
      maxOutputTokens: 100,
      toolChoice: "any",
      topP: 0.5,
    });
    expect(model.requests[1]!.settings).toEqual({ temperature: 0.2, maxOutputTokens: 100 });
    // The hook always sees the agent's settings.
    expect(seen).toEqual([
      { temperature: 0.2, maxOutputTokens: 100 },
      { temperature: 0.2, maxOutputTokens: 100 },
    ]);
  });

  it("give a request settings when the agent has none", async () => {
    const model = scriptedModel([{ text: "ok" }]);
    await createBareAgent({
      model,
      hooks: { beforeModelCall: () => ({ modelSettings: { toolChoice: "none" } }) },
    }).run("go");
    expect(model.requests[0]!.settings).toEqual({ toolChoice: "none" });
  });

  it("invalid ones end the run before the call, naming the setting", async () => {
    const model = scriptedModel([{ text: "never" }]);
    const result = await createBareAgent({
      model,
      hooks: { beforeModelCall: () => ({ modelSettings: { temperature: -1 } }) },
    }).run("go");
    expect(model.requests).toHaveLength(0);
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.message).toContain("modelSettings.temperature");
  });

  it("a toolChoice naming a tool the hook left out ends the run before the call", async () => {
    const work = workTool();
    const other = workTool({ name: "other" });
    const model = scriptedModel([{ text: "never" }]);
    const result = await createBareAgent({
      model,
      tools: [work.tool, other.tool],
      hooks: {
        beforeModelCall: () => ({
          tools: ["work"],
          modelSettings: { toolChoice: { name: "other" } },
        }),
      },
    }).run("go");
    expect(model.requests).toHaveLength(0);
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.message).toContain("toolChoice");
  });
});
