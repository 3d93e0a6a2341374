// A handoff never widens what the task may do, even through a mailbox of the app's own: the
// sender's allowedTools travel with the message, and a mailbox that drops the restrictions gets
// its task refused rather than run unnarrowed.
import {
  ConfigurationError,
  createBareAgent,
  createMailbox,
  delegateTool,
  type Mailbox,
  type MailboxMessage,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const noted: string[] = [];
const note = (name: string) =>
  tool(name, `The ${name} tool`, z.object({}), async () => {
    noted.push(name);
    return `${name} ran`;
  });

function handingOff(mailbox: Mailbox, senderOptions: { allowedTools?: string[] } = {}) {
  const writerModel = scriptedModel([
    { toolCalls: [{ id: "w1", name: "publish", input: {} }] },
    { text: "done" },
  ]);
  const writer = createBareAgent({
    id: "writer",
    model: writerModel,
    tools: [note("draft"), note("publish")],
  });
  const sender = createBareAgent({
    model: scriptedModel([
      {
        toolCalls: [
          {
            id: "h1",
            name: "delegate",
            input: { agent: "writer", prompt: "write and publish", mode: "handoff" },
          },
        ],
      },
      { text: "handed off" },
    ]),
    tools: [delegateTool({ writer }, { mailbox })],
    ...senderOptions,
  });
  return { writer, writerModel, sender };
}

describe("the sender's allowedTools travel with the handoff", () => {
  it("the target's model sees only tools every list lets through; a call to another is not_found", async () => {
    noted.length = 0;
    const mailbox = createMailbox();
    const { writer, writerModel, sender } = handingOff(mailbox, {
      allowedTools: ["delegate", "draft"],
    });
    await sender.run("go");
    const result = await writer.runNext(mailbox);
    expect(writerModel.requests[0]!.tools.map((spec) => spec.name)).toEqual(["draft"]);
    expect(result!.steps[0]!.toolCalls[0]!.result.details).toMatchObject({ reason: "not_found" });
    expect(noted).toEqual([]);
  });

  it("without allowedTools on the sender, the target keeps its tools", async () => {
    noted.length = 0;
    const mailbox = createMailbox();
    const { writer, writerModel, sender } = handingOff(mailbox);
    await sender.run("go");
    await writer.runNext(mailbox);
    expect(writerModel.requests[0]!.tools.map((spec) => spec.name)).toEqual(["draft", "publish"]);
    expect(noted).toEqual(["publish"]);
  });
});

describe("a mailbox that loses the restrictions", () => {
  it("gets its handed-off task refused, nothing run, the message left claimed", async () => {
    noted.length = 0;
    const inner = createMailbox();
    const acked: string[] = [];
    // An app's mailbox written to the three-method interface, storing only what it knows of.
    const forgetful: Mailbox = {
      post: (message) => inner.post(message),
      claim: async (to) => {
        const message = await inner.claim(to);
        if (!message) return undefined;
        const { restrictions: _dropped, ...kept } = message;
        return kept as MailboxMessage;
      },
      ack: async (id) => {
        acked.push(id);
      },
    };
    const { writer, writerModel, sender } = handingOff(forgetful, { allowedTools: ["delegate"] });
    await sender.run("go");
    const refused = await writer.runNext(forgetful).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ConfigurationError);
    expect(String((refused as Error).message)).toMatch(
      /without the restrictions its sender posted/,
    );
    expect(writerModel.requests).toHaveLength(0);
    expect(noted).toEqual([]);
    expect(acked).toEqual([]);
  });
});
