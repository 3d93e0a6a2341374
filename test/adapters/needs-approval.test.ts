/**
 * `needsApproval` of adapted tools: a tool written for Vercel ai or OpenAI Agents that asks for
 * approval there asks in skein too (the agent's approval handler, or a paused run), never runs
 * without it, and a check that fails keeps the call from running.
 */
import { tool as openaiTool } from "@openai/agents-core";
import { tool as aiTool } from "ai";
import { ConfigurationError, createBareAgent, type ToolDefinition } from "skein";
import { fromAiSdkTools, fromOpenAIAgentsTools } from "skein/adapters";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const amountSchema = z.object({ amount: z.number() });
const amountParameters = {
  type: "object" as const,
  properties: { amount: { type: "number" } },
  required: ["amount"],
  additionalProperties: false as const,
};

/** One model turn calling `pay` with each amount, then a final answer. */
function payingModel(...amounts: number[]) {
  return scriptedModel([
    {
      toolCalls: amounts.map((amount, index) => ({
        id: `call_${index + 1}`,
        name: "pay",
        input: { amount },
      })),
    },
    { text: "done" },
  ]);
}

/** The `pay` tool of each SDK, asking for amounts over 100, recording what ran and what was asked. */
function payTools(log: { ran: number[]; checks: unknown[][] }): [string, ToolDefinition][] {
  const [fromAi] = fromAiSdkTools({
    pay: aiTool({
      inputSchema: amountSchema,
      needsApproval: async (input, options) => {
        log.checks.push([input, options]);
        return input.amount > 100;
      },
      execute: async ({ amount }) => {
        log.ran.push(amount);
        return `paid ${amount}`;
      },
    }),
  });
  const [fromOpenAI] = fromOpenAIAgentsTools([
    openaiTool({
      name: "pay",
      description: "Pays",
      parameters: amountParameters,
      strict: true,
      needsApproval: async (runContext, input, callId) => {
        log.checks.push([runContext, input, callId]);
        return (input as { amount: number }).amount > 100;
      },
      execute: async (input) => {
        const { amount } = input as { amount: number };
        log.ran.push(amount);
        return `paid ${amount}`;
      },
    }),
  ]);
  return [
    ["ai", fromAi!],
    ["OpenAI Agents", fromOpenAI!],
  ];
}

describe.each(["ai", "OpenAI Agents"])("needsApproval of a %s tool", (sdk) => {
  const setup = () => {
    const log = { ran: [] as number[], checks: [] as unknown[][] };
    const pay = new Map(payTools(log)).get(sdk)!;
    return { log, pay };
  };

  it("asks the approval handler for a call it flags, with the validated input; a no never runs", async () => {
    const { log, pay } = setup();
    const asked: unknown[] = [];
    const agent = createBareAgent({
      model: payingModel(5, 500),
      tools: [pay],
      approval: async (name, input, { reason }) => {
        asked.push([name, input, reason]);
        return false;
      },
    });
    const result = await agent.run("pay");
    expect(result.subtype).toBe("success");
    expect(asked).toEqual([["pay", { amount: 500 }, expect.stringContaining("needsApproval")]]);
    expect(log.ran).toEqual([5]);
    const blocks = result.messages.at(-2)!.content as { content: string; is_error: boolean }[];
    expect(blocks[1]).toMatchObject({ is_error: true });
    if (sdk === "ai")
      expect(log.checks).toEqual([
        [{ amount: 5 }, { toolCallId: "call_1", messages: [] }],
        [{ amount: 500 }, { toolCallId: "call_2", messages: [] }],
      ]);
    else
      expect(log.checks).toEqual([
        [{ context: undefined }, { amount: 5 }, "call_1"],
        [{ context: undefined }, { amount: 500 }, "call_2"],
      ]);
  });

  it("without a handler the run pauses on the flagged call, and runs it once approved on resume", async () => {
    const { log, pay } = setup();
    const agent = createBareAgent({ model: payingModel(500), tools: [pay] });
    const paused = await agent.run("pay");
    expect(paused.subtype).toBe("paused");
    expect(paused.pending).toEqual([
      expect.objectContaining({ id: "call_1", name: "pay", reason: "approval" }),
    ]);
    expect(log.ran).toEqual([]);
    const resumed = await agent.resume(paused.state!, { approvals: { call_1: true } });
    expect(resumed.subtype).toBe("success");
    expect(log.ran).toEqual([500]);
  });

  it("a deny rule still comes first", async () => {
    const { log, pay } = setup();
    const asked: unknown[] = [];
    const agent = createBareAgent({
      model: payingModel(500),
      tools: [pay],
      permissions: { deny: ["pay"] },
      approval: async (name) => {
        asked.push(name);
        return true;
      },
    });
    const result = await agent.run("pay");
    expect(result.subtype).toBe("success");
    expect(asked).toEqual([]);
    expect(log.ran).toEqual([]);
  });
});

describe("needsApproval: checks that fail, and values that are not one", () => {
  it.each([
    ["now asks", (amount: number) => amount > 10, false],
    [
      "now throws",
      () => {
        throw new Error("policy service down");
      },
      false,
    ],
    ["still allows", (amount: number) => amount > 100, true],
  ] as const)(
    "a call held behind the paused one is checked again on resume: a check that %s",
    async (_, onResume, runs) => {
      const ran: number[] = [];
      let check = (amount: number): boolean => amount > 100;
      const [pay] = fromAiSdkTools({
        pay: aiTool({
          inputSchema: amountSchema,
          needsApproval: async (input) => check(input.amount),
          execute: async ({ amount }) => {
            ran.push(amount);
            return `paid ${amount}`;
          },
        }),
      });
      const agent = createBareAgent({ model: payingModel(500, 50), tools: [pay!] });
      const paused = await agent.run("pay");
      // The second call (not flagged then) waits behind the first, in the paused state.
      expect(paused.pending?.map((call) => [call.id, call.reason])).toEqual([
        ["call_1", "approval"],
      ]);
      expect(ran).toEqual([]);
      check = onResume; // the policy changed while the run was paused
      const resumed = await agent.resume(paused.state!, { approvals: { call_1: true } });
      expect(resumed.subtype).toBe("success");
      expect(ran).toEqual(runs ? [500, 50] : [500]);
      const blocks = resumed.messages.at(-2)!.content as { content: string; is_error: boolean }[];
      expect(blocks[1]).toMatchObject({ is_error: !runs });
      if (!runs) expect(blocks[1]!.content).toContain("not given");
    },
  );

  it("a check that throws or answers something else leaves the call unrun, with an error result", async () => {
    const ran: string[] = [];
    const tools = fromAiSdkTools({
      throws: aiTool({
        inputSchema: z.object({}),
        needsApproval: () => {
          throw new Error("policy service down");
        },
        execute: async () => ran.push("throws"),
      }),
      maybe: aiTool({
        inputSchema: z.object({}),
        needsApproval: (() => "yes") as unknown as () => boolean,
        execute: async () => ran.push("maybe"),
      }),
    });
    const agent = createBareAgent({
      model: scriptedModel([
        {
          toolCalls: [
            { id: "a", name: "throws", input: {} },
            { id: "b", name: "maybe", input: {} },
          ],
        },
        { text: "done" },
      ]),
      tools,
      approval: async () => true,
    });
    const result = await agent.run("go");
    expect(ran).toEqual([]);
    const blocks = result.messages.at(-2)!.content as { content: string; is_error: boolean }[];
    expect(blocks.map((block) => block.is_error)).toEqual([true, true]);
    expect(blocks[0]!.content).toContain("policy service down");
    expect(blocks[1]!.content).toContain("not true or false");
  });

  it("needsApproval: true always asks; false never adds an ask", async () => {
    const asked: string[] = [];
    const tools = fromAiSdkTools({
      always: aiTool({ inputSchema: z.object({}), needsApproval: true, execute: async () => "a" }),
      never: aiTool({ inputSchema: z.object({}), needsApproval: false, execute: async () => "n" }),
    });
    const agent = createBareAgent({
      model: scriptedModel([
        {
          toolCalls: [
            { id: "a", name: "always", input: {} },
            { id: "n", name: "never", input: {} },
          ],
        },
        { text: "done" },
      ]),
      tools,
      approval: async (name) => {
        asked.push(name);
        return true;
      },
    });
    expect((await agent.run("go")).subtype).toBe("success");
    expect(asked).toEqual(["always"]);
  });

  it("a needsApproval that is neither a boolean nor a function is refused when the tool is adapted", () => {
    const make = () =>
      fromAiSdkTools({
        odd: { inputSchema: z.object({}), needsApproval: "always", execute: async () => "x" },
      } as never);
    expect(make).toThrow(ConfigurationError);
    expect(make).toThrow(
      /fromAiSdkTools\("odd"\): needsApproval must be true, false or a function/,
    );
    const openai = () =>
      fromOpenAIAgentsTools([
        {
          type: "function",
          name: "odd",
          parameters: amountParameters,
          invoke: async () => "x",
          needsApproval: 1,
        },
      ] as never);
    expect(openai).toThrow(/needsApproval must be true, false or a function/);
  });
});
