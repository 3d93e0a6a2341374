/**
 * skein's own tool options for adapted tools (the optional second argument of both adapters):
 * `security` lets the hardened preset take them, `timeoutMs` bounds them, `concurrencySafe` lets
 * them overlap; the options are checked strictly.
 */
import { tool as agentsTool } from "@openai/agents-core";
import { tool } from "ai";
import { ConfigurationError, createAgent, createBareAgent } from "skein";
import { fromAiSdkTools, fromOpenAIAgentsTools } from "skein/adapters";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const weather = () =>
  tool({
    description: "The weather",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => `Sunny in ${city}`,
  });

describe("shared tool options", () => {
  it("security: the hardened preset takes the adapted tools", () => {
    const tools = fromAiSdkTools({ weather: weather() }, { security: { network: "none" } });
    expect(tools[0]!.security).toEqual({ network: "none" });
    const model = scriptedModel([]);
    expect(() => createAgent({ model, tools, preset: "hardened" })).not.toThrow();
    const agentsTools = fromOpenAIAgentsTools(
      [
        agentsTool({
          name: "lookup",
          description: "Looks up",
          parameters: z.object({ key: z.string() }),
          execute: async ({ key }) => key,
        }),
      ],
      { security: { network: "loopback" } },
    );
    expect(() => createAgent({ model, tools: agentsTools, preset: "hardened" })).not.toThrow();
  });

  it("timeoutMs: a slow adapted tool ends with the usual timeout result", async () => {
    const slow = tool({
      inputSchema: z.object({}),
      execute: (_input, { abortSignal }) =>
        new Promise<string>((resolve) =>
          abortSignal?.addEventListener("abort", () => resolve("stopped"), { once: true }),
        ),
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "s", name: "slow", input: {} }] },
      { text: "moved on" },
    ]);
    const result = await createBareAgent({
      model,
      tools: fromAiSdkTools({ slow }, { timeoutMs: 50 }),
    }).run("go");
    expect(result.steps[0]!.toolCalls[0]!.result.details).toMatchObject({ reason: "timeout" });
  });

  it("concurrencySafe: two calls overlap in mode safe", async () => {
    let running = 0;
    let most = 0;
    const both = tool({
      inputSchema: z.object({}),
      execute: async () => {
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 20));
        running--;
        return "ok";
      },
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "a", name: "both", input: {} },
          { id: "b", name: "both", input: {} },
        ],
      },
      { text: "done" },
    ]);
    await createBareAgent({
      model,
      tools: fromAiSdkTools({ both }, { concurrencySafe: true }),
    }).run("go");
    expect(most).toBe(2);
  });

  it("is checked strictly: unknown keys, bad security, bad timeoutMs", () => {
    expect(() => fromAiSdkTools({ weather: weather() }, { bogus: 1 } as never)).toThrow(
      'fromAiSdkTools(): unknown option "bogus". Check for a typo, or upgrade the SDK if this option was added in a newer version.',
    );
    expect(() =>
      fromAiSdkTools({ weather: weather() }, { security: { network: "everywhere" } } as never),
    ).toThrow(ConfigurationError);
    expect(() => fromAiSdkTools({ weather: weather() }, { timeoutMs: -1 })).toThrow(
      /timeoutMs must be a positive number/,
    );
    expect(() =>
      fromAiSdkTools({ weather: weather() }, { concurrencySafe: "yes" } as never),
    ).toThrow(/concurrencySafe must be true or false/);
  });
});
