/**
 * What the adapters refuse, at once, with a ConfigurationError that names the tool and says what
 * to do: anything that is not a record / array of tools, tools without execute, hosted tools.
 */
import { tool as agentsTool, hostedMcpTool, shellTool } from "@openai/agents-core";
import { jsonSchema, tool } from "ai";
import { ConfigurationError } from "skein";
import { fromAiSdkTools, fromOpenAIAgentsTools } from "skein/adapters";
import { describe, expect, it } from "vitest";
import { z } from "zod";

function refused(run: () => unknown): ConfigurationError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return error as ConfigurationError;
  }
  throw new Error("expected a ConfigurationError, nothing was thrown");
}

const weather = tool({
  description: "The weather",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => `Sunny in ${city}`,
});

const lookUp = agentsTool({
  name: "look_up",
  description: "Looks a word up",
  parameters: z.object({ word: z.string() }),
  execute: async ({ word }) => `${word}: a word`,
});

/** Passes what the types forbid, on purpose. */
const loose = (value: unknown): any => value;

describe("fromAiSdkTools() refuses", () => {
  it.each([
    ["undefined", undefined, /received undefined\.$/],
    ["null", null, /received null\.$/],
    ["a string", "weather", /received "weather"\.$/],
    [
      "an array",
      [weather],
      /received an array \(an array of OpenAI Agents tools goes to fromOpenAIAgentsTools\)/,
    ],
    ["a Map", new Map([["weather", weather]]), /received a Map\.$/],
    ["one tool", weather, /this looks like one tool: put it in a record under its name/],
    [
      "an OpenAI Agents tool",
      lookUp,
      /this is an OpenAI Agents function tool: pass \[tool\] to fromOpenAIAgentsTools/,
    ],
  ])("%s instead of the record", (_label, value, message) => {
    const error = refused(() => fromAiSdkTools(loose(value)));
    expect(error.message).toMatch(
      /^fromAiSdkTools\(\): expected the record generateText\(\{ tools \}\) takes, tools keyed by name, received /,
    );
    expect(error.message).toMatch(message);
  });

  it("a value in the record that is not a tool", () => {
    expect(refused(() => fromAiSdkTools(loose({ weather: "sunny" }))).message).toBe(
      'fromAiSdkTools("weather"): expected a tool made with ai\'s tool({ description, inputSchema, execute }), received "sunny".',
    );
  });

  it("a tool without execute, naming it and what to do", () => {
    const { execute: _, ...noExecute } = weather;
    const message = refused(() => fromAiSdkTools({ weather: noExecute })).message;
    expect(message).toMatch(/^fromAiSdkTools\("weather"\): the tool has no execute function/);
    expect(message).toContain("defineTool({ execute: false })");
  });

  it("a provider-defined tool (ai 6 and ai 5 shapes), naming its id", () => {
    for (const type of ["provider", "provider-defined"]) {
      const message = refused(() =>
        fromAiSdkTools(
          loose({
            web_search: { type, id: "openai.web_search", args: {}, inputSchema: jsonSchema({}) },
          }),
        ),
      ).message;
      expect(message).toMatch(
        /^fromAiSdkTools\("web_search"\): this is a provider-defined tool \(openai\.web_search\)/,
      );
    }
  });

  it("an ai 4 tool (parameters, no inputSchema)", () => {
    const message = refused(() =>
      fromAiSdkTools(loose({ old: { parameters: z.object({}), execute: async () => "x" } })),
    ).message;
    expect(message).toMatch(/^fromAiSdkTools\("old"\): it has "parameters" but no "inputSchema"/);
  });

  it("an OpenAI Agents tool in the record", () => {
    expect(refused(() => fromAiSdkTools(loose({ look_up: lookUp }))).message).toMatch(
      /^fromAiSdkTools\("look_up"\): this is an OpenAI Agents function tool; pass it to fromOpenAIAgentsTools/,
    );
  });

  it("a key that is not a name model APIs accept", () => {
    expect(refused(() => fromAiSdkTools({ "get weather": weather })).message).toMatch(
      /^fromAiSdkTools\("get weather"\): the tool name must be 1-64 letters, digits, "_" or "-"/,
    );
  });

  it.each([
    [
      "a string",
      "z.object()",
      /inputSchema must be a Zod \(or other Standard Schema\) schema or ai's jsonSchema/,
    ],
    [
      "a plain JSON Schema (not wrapped in jsonSchema())",
      { type: "object" },
      /inputSchema must be a Zod/,
    ],
    ["a schema that is not an object", jsonSchema({ type: "string" }), /must describe an object/],
    [
      "an invalid JSON Schema",
      jsonSchema({ type: "object", properties: { a: { type: 7 } } }),
      /invalid JSON Schema/,
    ],
    [
      "a lazy schema that throws",
      () => {
        throw new Error("not ready");
      },
      /its lazy inputSchema threw when called \(not ready\)/,
    ],
  ])("an inputSchema that is %s", (_label, inputSchema, message) => {
    const error = refused(() =>
      fromAiSdkTools(loose({ bad: { inputSchema, execute: async () => "x" } })),
    );
    expect(error.message).toMatch(/^fromAiSdkTools\("bad"\): /);
    expect(error.message).toMatch(message);
  });

  it("a description that is not a string", () => {
    expect(
      refused(() => fromAiSdkTools(loose({ w: { ...weather, description: 42 } }))).message,
    ).toBe('fromAiSdkTools("w"): description must be a string, received 42.');
  });
});

describe("fromOpenAIAgentsTools() refuses", () => {
  it.each([
    ["undefined", undefined, /received undefined\.$/],
    [
      "a record of ai tools",
      { weather },
      /received an object \(a record of Vercel ai tools goes to fromAiSdkTools\)/,
    ],
    ["one tool", lookUp, /received an object \(this looks like one tool: wrap it in an array\)/],
    ["a string", "look_up", /received "look_up"\.$/],
  ])("%s instead of the array", (_label, value, message) => {
    const error = refused(() => fromOpenAIAgentsTools(loose(value)));
    expect(error.message).toMatch(
      /^fromOpenAIAgentsTools\(\): expected an array of OpenAI Agents tools, received /,
    );
    expect(error.message).toMatch(message);
  });

  it("a hosted tool, at once", () => {
    const hosted = hostedMcpTool({ serverLabel: "docs", serverUrl: "https://example.com/mcp" });
    expect(refused(() => fromOpenAIAgentsTools([lookUp, hosted])).message).toBe(
      'fromOpenAIAgentsTools(): tool "hosted_mcp": this is a hosted tool, which runs on OpenAI\'s servers, not in your process; skein runs function tools only.',
    );
  });

  it("a shell tool, which the OpenAI Agents runner drives itself", () => {
    const shell = shellTool({
      shell: { run: async () => ({ output: [] }) },
    } as unknown as Parameters<typeof shellTool>[0]);
    expect(refused(() => fromOpenAIAgentsTools([shell])).message).toMatch(
      /^fromOpenAIAgentsTools\(\): tool "shell": this is a shell tool, which the OpenAI Agents runner drives itself/,
    );
  });

  it("an element that is not a tool, by its index", () => {
    expect(refused(() => fromOpenAIAgentsTools(loose([lookUp, null]))).message).toBe(
      "fromOpenAIAgentsTools(): tool 1: expected a function tool made with tool({ name, description, parameters, execute }), received null.",
    );
  });

  it("a function tool without invoke", () => {
    const { invoke: _, ...noInvoke } = lookUp;
    expect(refused(() => fromOpenAIAgentsTools(loose([noInvoke]))).message).toMatch(
      /^fromOpenAIAgentsTools\(\): tool "look_up": a function tool needs its invoke function/,
    );
  });

  it("parameters that are not a JSON Schema object, or not a valid one", () => {
    expect(
      refused(() => fromOpenAIAgentsTools(loose([{ ...lookUp, parameters: "word" }]))).message,
    ).toBe(
      'fromOpenAIAgentsTools(): tool "look_up": parameters must be the tool\'s JSON Schema object, received "word".',
    );
    expect(
      refused(() =>
        fromOpenAIAgentsTools(
          loose([{ ...lookUp, parameters: { type: "object", required: "word" } }]),
        ),
      ).message,
    ).toMatch(/^fromOpenAIAgentsTools\(\): tool "look_up": invalid JSON Schema/);
  });

  it("two tools of one name", () => {
    expect(refused(() => fromOpenAIAgentsTools([lookUp, lookUp])).message).toBe(
      'fromOpenAIAgentsTools(): two tools are named "look_up"; a name must be unique.',
    );
  });

  it("a name model APIs do not accept", () => {
    expect(
      refused(() => fromOpenAIAgentsTools(loose([{ ...lookUp, name: "look up" }]))).message,
    ).toMatch(/^fromOpenAIAgentsTools\(\): tool "look up": the tool name must be 1-64 letters/);
  });
});
