// Call mode (design/agents.md, "Call mode: the child run"): a fresh transcript with the child's own
// prompt, tools and model; its text, toModelOutput or structuredResult as the call's result;
// failures as error results that never end the parent.
import { agentTool, createBareAgent, delegateTool, type SDKResultMessage } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { expectValidTranscript, resultFor, resultText, stepCall } from "../support/results.ts";
import {
  detailsOf,
  finishTool,
  noteTool,
  offered,
  scriptedChild,
  tokens,
  turn,
} from "./helpers.ts";

/** A parent whose model calls `toolName` once with `input`, then answers "parent done". */
function parentCalling(
  tools: Parameters<typeof createBareAgent>[0]["tools"],
  call: { id?: string; name: string; input: unknown },
) {
  const model = scriptedModel([{ toolCalls: [call] }, { text: "parent done" }]);
  const agent = createBareAgent({ model, tools, systemPrompt: "PARENT SYSTEM" });
  return { agent, model };
}

describe("the child run", () => {
  it("starts from a fresh transcript: one user message, the prompt; its own system prompt and tools", async () => {
    const note = noteTool();
    const child = scriptedChild(
      "researcher",
      [{ toolCalls: [{ id: "c1", name: "note", input: { note: "n" } }] }, { text: "found" }],
      { tools: [note.tool], systemPrompt: "CHILD SYSTEM" },
    );
    const parentNote = noteTool("parent_only");
    const parent = parentCalling(
      [parentNote.tool, agentTool(child.agent, { description: "Researches" })],
      { id: "a1", name: "researcher", input: { prompt: "Find the answer" } },
    );
    const result = await parent.agent.run("parent prompt, never seen by the child");
    expect(result.subtype).toBe("success");
    const first = child.model.requests[0]!;
    expect(first.messages).toEqual([{ role: "user", content: "Find the answer" }]);
    expect(first.system).toContain("CHILD SYSTEM");
    expect(first.system).not.toContain("PARENT SYSTEM");
    expect(offered(child.model)).toEqual(["note"]);
    expect(JSON.stringify(child.model.requests)).not.toContain("never seen by the child");
    expect(note.runs.map((run) => run.note)).toEqual(["n"]);
    expect(parentNote.runs).toEqual([]);
  });

  it("its final text is the call's result; the parent goes on with its own next turn", async () => {
    const child = scriptedChild("researcher", [{ text: "the answer is 42" }]);
    const parent = parentCalling([agentTool(child.agent, { description: "Researches" })], {
      id: "a1",
      name: "researcher",
      input: { prompt: "q" },
    });
    const result = await parent.agent.run("go");
    expect(result.result).toBe("parent done");
    const block = resultFor(result.messages, "a1");
    expect(block.is_error ?? false).toBe(false);
    expect(resultText(block)).toBe("the answer is 42");
    expect(parent.model.requests).toHaveLength(2);
    expectValidTranscript(result.messages);
  });

  it("toModelOutput decides what the parent's model reads; it gets the child's result message", async () => {
    const child = scriptedChild("researcher", [{ text: "long report" }]);
    const seen: SDKResultMessage[] = [];
    const parent = parentCalling(
      [
        agentTool(child.agent, {
          description: "Researches",
          toModelOutput: (result) => {
            seen.push(result);
            return `summary of ${result.result.length} chars`;
          },
        }),
      ],
      { id: "a1", name: "researcher", input: { prompt: "q" } },
    );
    const result = await parent.agent.run("go");
    expect(seen).toHaveLength(1);
    expect(seen[0]!.type).toBe("result");
    expect(seen[0]!.subtype).toBe("success");
    expect(seen[0]!.result).toBe("long report");
    expect(resultText(resultFor(result.messages, "a1"))).toBe("summary of 11 chars");
  });

  it("the child's structuredResult is carried (JSON text when its text is empty) and does not end the parent", async () => {
    const payload = { verdict: "ship", score: 9 };
    const child = scriptedChild(
      "judge",
      [{ toolCalls: [{ id: "f1", name: "finish", input: {} }] }, { text: "never" }],
      { tools: [finishTool(payload)] },
    );
    const parent = parentCalling([agentTool(child.agent, { description: "Judges" })], {
      id: "a1",
      name: "judge",
      input: { prompt: "judge it" },
    });
    const result = await parent.agent.run("go");
    expect(child.model.requests).toHaveLength(1);
    expect(stepCall(result, "a1").result.structuredResult).toEqual(payload);
    expect(JSON.parse(resultText(resultFor(result.messages, "a1")))).toEqual(payload);
    // The parent was not ended by the child's endTurn: its model was asked again.
    expect(parent.model.requests).toHaveLength(2);
    expect(result.result).toBe("parent done");
    expect(result.structuredResult).toBeUndefined();
  });

  it("with text and a structuredResult, the text is the content and the payload still carried", async () => {
    const child = scriptedChild(
      "judge",
      [{ toolCalls: [{ id: "f1", name: "finish", input: {} }] }],
      { tools: [finishTool({ ok: true }, "verdict: ship")] },
    );
    const parent = parentCalling([agentTool(child.agent, { description: "Judges" })], {
      id: "a1",
      name: "judge",
      input: { prompt: "judge it" },
    });
    const result = await parent.agent.run("go");
    expect(resultText(resultFor(result.messages, "a1"))).toBe("verdict: ship");
    expect(stepCall(result, "a1").result.structuredResult).toEqual({ ok: true });
  });

  it("details: { agent, sessionId, subtype, numTurns, usage } on tool_end and in the steps", async () => {
    const child = scriptedChild(
      "researcher",
      [
        turn({ toolCalls: [{ id: "c1", name: "note", input: { note: "n" } }] }, 10, 1),
        turn({ text: "found" }, 20, 2),
      ],
      { tools: [noteTool().tool] },
    );
    const parent = parentCalling([agentTool(child.agent, { description: "Researches" })], {
      id: "a1",
      name: "researcher",
      input: { prompt: "q" },
    });
    const events = [];
    for await (const event of parent.agent.stream("go")) events.push(event);
    const result = events.at(-1) as SDKResultMessage;
    const details = detailsOf(result, "a1");
    expect(details).toEqual({
      agent: "researcher",
      sessionId: expect.any(String),
      subtype: "success",
      numTurns: 2,
      usage: tokens(30, 3),
    });
    expect(details.sessionId).not.toBe(result.sessionId);
    const end = events.find(
      (event) => event.type === "tool_end" && event.callId === "a1" && !event.parentCallId,
    );
    expect(end).toBeDefined();
    expect((end as { details: unknown }).details).toEqual(details);
  });

  it("delegateTool: details name the target key, and each target runs its own agent", async () => {
    const researcher = scriptedChild("r-id", [{ text: "research" }]);
    const writer = scriptedChild("w-id", [{ text: "prose" }]);
    const parent = parentCalling(
      [delegateTool({ researcher: researcher.agent, writer: writer.agent })],
      { id: "d1", name: "delegate", input: { agent: "writer", prompt: "write" } },
    );
    const result = await parent.agent.run("go");
    expect(researcher.model.requests).toHaveLength(0);
    expect(writer.model.requests[0]!.messages).toEqual([{ role: "user", content: "write" }]);
    expect(resultText(resultFor(result.messages, "d1"))).toBe("prose");
    expect(detailsOf(result, "d1")).toMatchObject({ agent: "writer", subtype: "success" });
  });

  it("parent and child calls may share default ids (toolu_1_1): both run, both transcripts valid", async () => {
    const note = noteTool();
    const child = scriptedChild(
      "researcher",
      [{ toolCalls: [{ name: "note", input: { note: "inner" } }] }, { text: "found" }],
      { tools: [note.tool] },
    );
    const parent = parentCalling([agentTool(child.agent, { description: "Researches" })], {
      name: "researcher",
      input: { prompt: "q" },
    });
    const result = await parent.agent.run("go");
    expect(result.subtype).toBe("success");
    expect(note.runs.map((run) => run.callId)).toEqual(["toolu_1_1"]);
    expect(resultText(resultFor(result.messages, "toolu_1_1"))).toBe("found");
    expectValidTranscript(result.messages);
    expectValidTranscript(child.model.requests[1]!.messages);
  });
});

describe("a failed child is an error result; the parent goes on", () => {
  async function failing(script: Parameters<typeof scriptedChild>[1], maxTurns?: number) {
    const child = scriptedChild("worker", script, {
      tools: [noteTool().tool],
      ...(maxTurns ? { maxTurns } : {}),
    });
    const parent = parentCalling([agentTool(child.agent, { description: "Works" })], {
      id: "a1",
      name: "worker",
      input: { prompt: "work" },
    });
    const result = await parent.agent.run("go");
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("parent done");
    const block = resultFor(result.messages, "a1");
    expect(block.is_error).toBe(true);
    expect(resultText(block)).toMatch(/^Agent "worker" failed: /);
    return { result, text: resultText(block), details: detailsOf(result, "a1") };
  }

  it("a script that runs out (error_during_execution)", async () => {
    const { text, details } = await failing([]);
    expect(text).toMatch(/script/);
    expect(details).toMatchObject({
      agent: "worker",
      subtype: "error_during_execution",
      reason: "agent_failed",
    });
  });

  it("a model error", async () => {
    const { text, details } = await failing([new Error("model exploded")]);
    expect(text).toContain("model exploded");
    expect(details.reason).toBe("agent_failed");
  });

  it("the child's own maxTurns (error_max_turns)", async () => {
    const loop = { toolCalls: [{ name: "note", input: { note: "again" } }] };
    const { details } = await failing(() => loop, 2);
    expect(details).toMatchObject({
      subtype: "error_max_turns",
      numTurns: 2,
      reason: "agent_failed",
    });
  });
});
