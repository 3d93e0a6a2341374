import { type AgentEvent, createBareAgent, type ToolBatchPolicy, type ToolCall, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { resultText, toolResultsOf } from "../support/results.ts";
import { collect } from "./helpers.ts";

function setup(policy: ToolBatchPolicy) {
  const trace: string[] = [];
  const incrementRevision = tool(
    "incrementRevision",
    "Bump the revision",
    z.object({ doc: z.string() }),
    async ({ doc }) => {
      trace.push(`run:incrementRevision:${doc}`);
      return "revision 2";
    },
    { isConcurrencySafe: () => true },
  );
  const handoff = tool(
    "handoff",
    "Hand work to a member",
    z.object({ mode: z.string() }),
    async ({ mode }) => {
      trace.push(`run:handoff:${mode}`);
      return "handed off";
    },
    { isConcurrencySafe: () => true },
  );
  const model = scriptedModel([
    {
      toolCalls: [
        { id: "u1", name: "incrementRevision", input: { doc: "spec" } },
        { id: "h1", name: "handoff", input: { mode: "handoff" } },
      ],
    },
    { text: "understood" },
  ]);
  const agent = createBareAgent({
    model,
    tools: [incrementRevision, handoff],
    toolBatchPolicy: policy,
  });
  return { agent, model, trace };
}

const rejectUpdateWithHandoff: ToolBatchPolicy = {
  validate({ toolCalls }) {
    const update = toolCalls.find((call) => call.name === "incrementRevision");
    const handoff = toolCalls.find((call) => (call.input as { mode?: string }).mode === "handoff");
    if (update && handoff) {
      return {
        allowed: false,
        code: "invalid_tool_batch",
        message: "Update the revision before delegating dependent work.",
        conflictingToolCallIds: [update.id, handoff.id],
        suggestedNextStep: "Run the update first, then hand off the new revision.",
      };
    }
    return { allowed: true };
  },
};

describe("toolBatchPolicy", () => {
  it('sees every call of the response, as { id, name, input, kind: "tool" }, before any handler', async () => {
    const seen: ToolCall[][] = [];
    const { agent, trace } = setup({
      validate({ toolCalls }) {
        seen.push(structuredClone(toolCalls));
        trace.push("validate");
        return { allowed: true };
      },
    });
    await agent.run("go");
    expect(seen).toEqual([
      [
        { id: "u1", name: "incrementRevision", input: { doc: "spec" }, kind: "tool" },
        { id: "h1", name: "handoff", input: { mode: "handoff" }, kind: "tool" },
      ],
    ]);
    expect(trace).toEqual(["validate", "run:incrementRevision:spec", "run:handoff:handoff"]);
  });

  it("on rejection runs no handler and answers every call with the message, code and next step", async () => {
    const { agent, model, trace } = setup(rejectUpdateWithHandoff);
    const { events, result } = await collect(agent.stream("go"));
    expect(trace).toEqual([]);
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("understood");
    const blocks = toolResultsOf(model.requests[1]!.messages.at(-1));
    expect(blocks.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ["u1", true],
      ["h1", true],
    ]);
    for (const block of blocks) {
      const text = resultText(block);
      expect(text).toContain("Update the revision before delegating dependent work.");
      expect(text).toContain("invalid_tool_batch");
      expect(text).toContain("Run the update first, then hand off the new revision.");
    }
    const ends = events.filter(
      (event): event is Extract<AgentEvent, { type: "tool_end" }> => event.type === "tool_end",
    );
    expect(ends.map((event) => [event.callId, event.isError])).toEqual([
      ["u1", true],
      ["h1", true],
    ]);
    expect(ends[0]!.details).toMatchObject({
      code: "invalid_tool_batch",
      conflictingToolCallIds: ["u1", "h1"],
    });
  });

  it("uses the code tool_batch_policy_error and runs nothing when the policy throws", async () => {
    const { agent, model, trace } = setup({
      validate() {
        throw new Error("policy store offline");
      },
    });
    const { events, result } = await collect(agent.stream("go"));
    expect(trace).toEqual([]);
    expect(result.subtype).toBe("success");
    const ends = events.filter(
      (event): event is Extract<AgentEvent, { type: "tool_end" }> => event.type === "tool_end",
    );
    expect(ends.map((event) => event.callId)).toEqual(["u1", "h1"]);
    for (const end of ends) {
      expect(end.isError).toBe(true);
      expect(end.details).toMatchObject({ code: "tool_batch_policy_error" });
    }
    const blocks = toolResultsOf(model.requests[1]!.messages.at(-1));
    expect(blocks.map((block) => block.is_error)).toEqual([true, true]);
  });

  it("treats an async policy that rejects like one that throws", async () => {
    const { agent, trace } = setup({
      validate: async () => {
        throw new Error("later");
      },
    });
    const { events } = await collect(agent.stream("go"));
    expect(trace).toEqual([]);
    const details = events.flatMap((event) => (event.type === "tool_end" ? [event.details] : []));
    expect(details).toEqual([
      expect.objectContaining({ code: "tool_batch_policy_error" }),
      expect.objectContaining({ code: "tool_batch_policy_error" }),
    ]);
  });

  it("runs an allowed batch normally", async () => {
    const { agent, model, trace } = setup({ validate: async () => ({ allowed: true }) });
    const result = await agent.run("go");
    expect(trace).toEqual(["run:incrementRevision:spec", "run:handoff:handoff"]);
    const blocks = toolResultsOf(model.requests[1]!.messages.at(-1));
    expect(blocks.map((block) => [resultText(block), block.is_error])).toEqual([
      ["revision 2", false],
      ["handed off", false],
    ]);
    expect(result.subtype).toBe("success");
  });

  it("still gives every rejected call its tool_start and tool_end, in call order", async () => {
    const { agent } = setup(rejectUpdateWithHandoff);
    const { events } = await collect(agent.stream("go"));
    expect(
      events
        .filter((event) => event.type.startsWith("tool_"))
        .map((event) => `${event.type}:${(event as { callId: string }).callId}`),
    ).toEqual(["tool_start:u1", "tool_start:h1", "tool_end:u1", "tool_end:h1"]);
  });
});

describe("toolBatchPolicy returning something unusable", () => {
  const decisions: [string, unknown][] = [
    ["nothing", undefined],
    ["a string", "allowed"],
    [
      "an object whose getters throw",
      new Proxy(
        {},
        {
          get() {
            throw new Error("getter trap");
          },
        },
      ),
    ],
  ];
  for (const [what, decision] of decisions) {
    it(`treats ${what} as a policy failure: tool_batch_policy_error, nothing runs, the run goes on`, async () => {
      const { agent, model, trace } = setup({ validate: () => decision as never });
      const { events, result } = await collect(agent.stream("go"));
      expect(result.subtype).toBe("success");
      expect(model.requests).toHaveLength(2);
      expect(trace).toEqual([]);
      const details = events.flatMap((event) => (event.type === "tool_end" ? [event.details] : []));
      expect(details).toEqual([
        expect.objectContaining({ code: "tool_batch_policy_error" }),
        expect.objectContaining({ code: "tool_batch_policy_error" }),
      ]);
    });
  }
});
