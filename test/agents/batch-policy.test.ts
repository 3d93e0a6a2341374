// Seeds 000/001, "Validate a tool batch before execution", with a real handoff: the policy sees
// `kind: "agent_tool"`, and a rejected batch runs no handler and posts nothing.
import {
  agentTool,
  createBareAgent,
  createMailbox,
  delegateTool,
  type ToolBatchPolicy,
  type ToolCall,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { resultText, toolResultsOf } from "../support/results.ts";
import { collect, noteTool, scriptedChild, toolEnds } from "./helpers.ts";

/** The seed's policy, exactly as examples/000-tools-batch-policy.ts (001's text) prints it. */
const seedPolicy: ToolBatchPolicy = {
  validate({ toolCalls }) {
    const update = toolCalls.find((call) => call.name === "incrementRevision");
    const handoff = toolCalls.find(
      (call) => call.kind === "agent_tool" && (call.input as { mode?: string }).mode === "handoff",
    );
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

function setup(
  calls: { id: string; name: string; input: unknown }[],
  policy: ToolBatchPolicy = seedPolicy,
) {
  const document = { revision: 1 };
  const handlerRuns: string[] = [];
  const incrementRevision = tool(
    "incrementRevision",
    "Increment the document's revision",
    z.object({}),
    async () => {
      handlerRuns.push("incrementRevision");
      return `revision ${++document.revision}`;
    },
  );
  const writer = scriptedChild("writer", [{ text: "written" }]);
  const mailbox = createMailbox();
  const seen: ToolCall[][] = [];
  const model = scriptedModel([{ toolCalls: calls }, { text: "understood" }]);
  const agent = createBareAgent({
    model,
    tools: [incrementRevision, delegateTool({ writer: writer.agent }, { mailbox })],
    toolBatchPolicy: {
      validate(batch) {
        seen.push(structuredClone(batch.toolCalls));
        return policy.validate(batch);
      },
    },
  });
  return { agent, model, mailbox, document, handlerRuns, writer, seen };
}

describe("the seed 000/001 policy with an update and a handoff in one reply", () => {
  const batch = [
    { id: "u1", name: "incrementRevision", input: {} },
    {
      id: "h1",
      name: "delegate",
      input: { agent: "writer", prompt: "Write v2", mode: "handoff" },
    },
  ];

  it("runs no handler, posts nothing, and answers every call is_error with invalid_tool_batch", async () => {
    const { agent, model, mailbox, document, handlerRuns, writer } = setup(batch);
    const { events, result } = await collect(agent.stream("go"));
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("understood");
    expect(handlerRuns).toEqual([]);
    expect(document.revision).toBe(1);
    expect(await mailbox.claim("writer")).toBeUndefined();
    expect(writer.model.requests).toHaveLength(0);
    const blocks = toolResultsOf(model.requests[1]!.messages.at(-1));
    expect(blocks.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ["u1", true],
      ["h1", true],
    ]);
    for (const block of blocks) {
      expect(resultText(block)).toContain("invalid_tool_batch");
      expect(resultText(block)).toContain("Update the revision before delegating dependent work.");
    }
    const ends = toolEnds(events);
    expect(ends.map((event) => [event.callId, event.isError])).toEqual([
      ["u1", true],
      ["h1", true],
    ]);
    expect(ends[1]!.details).toMatchObject({
      code: "invalid_tool_batch",
      conflictingToolCallIds: ["u1", "h1"],
    });
  });

  it('the policy sees the delegate call as kind "agent_tool" and the custom tool as kind "tool"', async () => {
    const { agent, seen } = setup(batch);
    await agent.run("go");
    expect(seen).toEqual([
      [
        { id: "u1", name: "incrementRevision", input: {}, kind: "tool" },
        {
          id: "h1",
          name: "delegate",
          input: { agent: "writer", prompt: "Write v2", mode: "handoff" },
          kind: "agent_tool",
        },
      ],
    ]);
  });

  it("the same handoff alone is allowed: it is posted, naming the target, and the run goes on", async () => {
    const { agent, mailbox, handlerRuns } = setup([batch[1]!]);
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");
    expect(handlerRuns).toEqual([]);
    const message = await mailbox.claim("writer");
    expect(message).toMatchObject({ to: "writer", prompt: "Write v2" });
    expect(message!.from).toEqual({ sessionId: result.sessionId, callId: "h1" });
  });

  it("a policy that throws (tool_batch_policy_error) posts nothing either", async () => {
    const { agent, mailbox, model } = setup(batch, {
      validate() {
        throw new Error("policy offline");
      },
    });
    await agent.run("go");
    expect(await mailbox.claim("writer")).toBeUndefined();
    for (const block of toolResultsOf(model.requests[1]!.messages.at(-1))) {
      expect(block.is_error).toBe(true);
      expect(resultText(block)).toContain("tool_batch_policy_error");
    }
  });
});

describe('kind on ToolContext.call and in the policy ("agent_tool" only for agent tools)', () => {
  it("agentTool calls are agent_tool; a custom tool's handler sees its own call as kind tool", async () => {
    const note = noteTool();
    const helper = scriptedChild("helper", [{ text: "helped" }]);
    const seen: ToolCall[] = [];
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "n1", name: "note", input: { note: "x" } },
          { id: "a1", name: "helper", input: { prompt: "help" } },
        ],
      },
      { text: "done" },
    ]);
    const agent = createBareAgent({
      model,
      tools: [note.tool, agentTool(helper.agent, { description: "Helps" })],
      toolBatchPolicy: {
        validate({ toolCalls }) {
          seen.push(...toolCalls);
          return { allowed: true };
        },
      },
    });
    await agent.run("go");
    expect(seen.map((call) => [call.id, call.kind])).toEqual([
      ["n1", "tool"],
      ["a1", "agent_tool"],
    ]);
    expect(note.runs.map((run) => run.call)).toEqual([
      { id: "n1", name: "note", input: { note: "x" }, kind: "tool" },
    ]);
  });
});
