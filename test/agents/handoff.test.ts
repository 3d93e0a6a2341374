// Handoff mode (design/agents.md, "Handoff mode and the mailbox", "Handoffs never widen
// permissions"): a delegate call with mode "handoff" posts the task and goes on; bad targets or
// modes are invalid_input; runNext applies the sender chain's rules on top of the target's.
import {
  type Agent,
  type AgentOptions,
  agentTool,
  createBareAgent,
  createMailbox,
  delegateTool,
  type Mailbox,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { resultFor, resultText } from "../support/results.ts";
import { collect, detailsOf, noteTool, offered, scriptedChild, toolEnds } from "./helpers.ts";

function sender(
  calls: { id: string; name: string; input: unknown }[],
  options: {
    mailbox?: Mailbox;
    targets?: Record<string, ReturnType<typeof scriptedChild>["agent"]>;
  } = {},
) {
  const writer = scriptedChild("writer", [{ text: "written" }]);
  const model = scriptedModel([{ toolCalls: calls }, { text: "sender goes on" }]);
  const agent = createBareAgent({
    model,
    tools: [
      delegateTool(
        options.targets ?? { writer: writer.agent },
        options.mailbox ? { mailbox: options.mailbox } : {},
      ),
    ],
  });
  return { agent, model, writer };
}

describe('mode "handoff"', () => {
  it("posts { to, prompt, from }, runs no child, answers at once naming the target and message", async () => {
    const mailbox = createMailbox();
    const { agent, model, writer } = sender(
      [
        {
          id: "h1",
          name: "delegate",
          input: { agent: "writer", prompt: "Write v2", mode: "handoff" },
        },
      ],
      { mailbox },
    );
    const { events, result } = await collect(agent.stream("go"));
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("sender goes on");
    expect(model.requests).toHaveLength(2);
    expect(writer.model.requests).toHaveLength(0);
    const message = await mailbox.claim("writer");
    expect(message).toMatchObject({
      to: "writer",
      prompt: "Write v2",
      from: { sessionId: result.sessionId, callId: "h1" },
    });
    const block = resultFor(result.messages, "h1");
    expect(block.is_error ?? false).toBe(false);
    expect(resultText(block)).toContain("writer");
    expect(resultText(block)).toContain(message!.id);
    // No child events: nothing tagged with the handoff's call id.
    expect(events.some((event) => (event as { parentCallId?: string }).parentCallId)).toBe(false);
  });

  it('"call" (and no mode) waits for the child\'s answer instead', async () => {
    const mailbox = createMailbox();
    const { agent, writer } = sender(
      [{ id: "d1", name: "delegate", input: { agent: "writer", prompt: "now", mode: "call" } }],
      { mailbox },
    );
    const result = await agent.run("go");
    expect(resultText(resultFor(result.messages, "d1"))).toBe("written");
    expect(writer.model.requests).toHaveLength(1);
    expect(await mailbox.claim("writer")).toBeUndefined();
  });

  it('the schema offers "handoff" only when a mailbox was given', () => {
    const writer = scriptedChild("writer", []);
    const modes = (tool: ReturnType<typeof delegateTool>) =>
      (tool.inputSchema.properties as Record<string, { enum?: string[] }>).mode!.enum;
    expect(modes(delegateTool({ writer: writer.agent }))).toEqual(["call"]);
    expect(modes(delegateTool({ writer: writer.agent }, { mailbox: createMailbox() }))).toEqual([
      "call",
      "handoff",
    ]);
  });

  it("a failing post is an error result; the run goes on", async () => {
    const broken: Mailbox = {
      post: async () => {
        throw new Error("queue is down");
      },
      claim: async () => undefined,
      ack: async () => {},
    };
    const { agent } = sender(
      [{ id: "h1", name: "delegate", input: { agent: "writer", prompt: "x", mode: "handoff" } }],
      { mailbox: broken },
    );
    const result = await agent.run("go");
    expect(result.result).toBe("sender goes on");
    expect(resultFor(result.messages, "h1").is_error).toBe(true);
    expect(resultText(resultFor(result.messages, "h1"))).toContain("queue is down");
  });
});

describe("a model that names an unknown target or mode: invalid_input, nothing runs or is posted", () => {
  const cases: [string, Record<string, unknown>, boolean][] = [
    ["an unknown target (handoff)", { agent: "nobody", prompt: "x", mode: "handoff" }, true],
    ["an unknown target (call)", { agent: "nobody", prompt: "x" }, true],
    ["an unknown mode", { agent: "writer", prompt: "x", mode: "later" }, true],
    ['"handoff" without a mailbox', { agent: "writer", prompt: "x", mode: "handoff" }, false],
    ["a missing prompt", { agent: "writer" }, true],
  ];
  for (const [what, input, withMailbox] of cases) {
    it(what, async () => {
      const mailbox = createMailbox();
      const spy: Mailbox = {
        post: (message) => mailbox.post(message),
        claim: (to) => mailbox.claim(to),
        ack: (id) => mailbox.ack(id),
      };
      const { agent, writer } = sender(
        [{ id: "d1", name: "delegate", input }],
        withMailbox ? { mailbox: spy } : {},
      );
      const { events, result } = await collect(agent.stream("go"));
      expect(result.result).toBe("sender goes on");
      expect(resultFor(result.messages, "d1").is_error).toBe(true);
      expect(toolEnds(events).find((event) => event.callId === "d1")?.details).toMatchObject({
        reason: "invalid_input",
      });
      expect(writer.model.requests).toHaveLength(0);
      expect(await mailbox.claim("writer")).toBeUndefined();
      expect(await mailbox.claim("nobody")).toBeUndefined();
    });
  }
});

/**
 * sender (options) --handoff--> writer, who has `publish` and `note`. The writer's model calls
 * publish when it runs. `via` puts a middle agent between the root and the delegate tool.
 */
function handoffSetup(senderOptions: Partial<AgentOptions>, via?: "child") {
  const mailbox = createMailbox();
  const publish = noteTool("publish");
  const note = noteTool("note");
  const writerModel = scriptedModel([
    { toolCalls: [{ id: "w1", name: "publish", input: { note: "v2" } }] },
    { text: "writer done" },
  ]);
  const writerOptions: AgentOptions = {
    id: "writer",
    model: writerModel,
    tools: [publish.tool, note.tool],
  };
  const writer = createBareAgent(writerOptions);
  const handoff = {
    toolCalls: [
      {
        id: "h1",
        name: "delegate",
        input: { agent: "writer", prompt: "publish v2", mode: "handoff" },
      },
    ],
  };
  const delegate = delegateTool({ writer }, { mailbox });
  let root: Agent;
  if (via) {
    const middle = createBareAgent({
      id: "middle",
      model: scriptedModel([handoff, { text: "middle done" }]),
      tools: [delegate],
    });
    root = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "p1", name: "middle", input: { prompt: "arrange it" } }] },
        { text: "root done" },
      ]),
      tools: [agentTool(middle, { description: "Arranges" })],
      ...senderOptions,
    });
  } else {
    root = createBareAgent({
      model: scriptedModel([handoff, { text: "sender done" }]),
      tools: [delegate],
      ...senderOptions,
    });
  }
  return { root, writer, writerModel, publish, mailbox };
}

describe("a handoff never gives the target more than the sender had (runNext)", () => {
  it("the sender's deny rule on a target's tool denies it when the target runs the message", async () => {
    const { root, writer, publish, mailbox } = handoffSetup({ permissions: { deny: ["publish"] } });
    await root.run("go");
    const result = await writer.runNext(mailbox);
    expect(result?.subtype).toBe("success");
    expect(publish.runs).toEqual([]);
    expect(resultFor(result!.messages, "w1").is_error).toBe(true);
  });

  it("the target's own run (not from the mailbox) is not narrowed", async () => {
    const { writer, publish } = handoffSetup({ permissions: { deny: ["publish"] } });
    await writer.run("publish directly");
    expect(publish.runs.map((run) => run.note)).toEqual(["v2"]);
  });

  it("an ancestor's deny rule travels too (root denies, its child hands off)", async () => {
    const { root, writer, publish, mailbox } = handoffSetup(
      { permissions: { deny: ["publish"] } },
      "child",
    );
    const sent = await root.run("go");
    expect(sent.subtype).toBe("success");
    const result = await writer.runNext(mailbox);
    expect(result?.task.prompt).toBe("publish v2");
    // Posted from the middle agent's run: its session and call.
    expect(result?.task.from).toEqual({
      sessionId: detailsOf(sent, "p1").sessionId,
      callId: "h1",
    });
    expect(publish.runs).toEqual([]);
    expect(resultFor(result!.messages, "w1").is_error).toBe(true);
  });

  it("tools the sender hides (disallowedTools) are hidden from the target's model", async () => {
    const { root, writer, writerModel, mailbox } = handoffSetup({ disallowedTools: ["publish"] });
    await root.run("go");
    await writer.runNext(mailbox);
    expect(offered(writerModel)).toEqual(["note"]);
  });

  it("the sender's ask rule makes the target's call ask: with no handler, the run pauses", async () => {
    const { root, writer, publish, mailbox } = handoffSetup({ permissions: { ask: ["publish"] } });
    await root.run("go");
    const result = await writer.runNext(mailbox);
    expect(result?.subtype).toBe("paused");
    expect(result?.pending?.map((call) => [call.id, call.reason])).toEqual([["w1", "approval"]]);
    expect(publish.runs).toEqual([]);
  });
});
