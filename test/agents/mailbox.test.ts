// The in-memory mailbox and agent.runNext (design/agents.md, "Handoff mode and the mailbox").
import { AbortError, createMailbox, type Mailbox, type MailboxMessage } from "skein";
import { describe, expect, it } from "vitest";
import { rejectionOf } from "../support/promises.ts";
import { scriptedChild, waitingTool } from "./helpers.ts";

/** A mailbox that records what is acked (the in-memory one does the work). */
function spiedMailbox() {
  const inner = createMailbox();
  const acks: string[] = [];
  const mailbox: Mailbox = {
    post: (message) => inner.post(message),
    claim: (to) => inner.claim(to),
    ack: async (id) => {
      acks.push(id);
      return inner.ack(id);
    },
  };
  return { mailbox, acks };
}

describe("createMailbox()", () => {
  it("post returns the message: an id, the recipient, the prompt, from, postedAt", async () => {
    const mailbox = createMailbox();
    const before = Date.now();
    const message = await mailbox.post({
      to: "writer",
      prompt: "write",
      from: { sessionId: "s1", callId: "c1" },
    });
    expect(message).toMatchObject({
      id: expect.any(String),
      to: "writer",
      prompt: "write",
      from: { sessionId: "s1", callId: "c1" },
    });
    expect(message.postedAt).toBeGreaterThanOrEqual(before);
    expect(await mailbox.claim("writer")).toEqual(message);
  });

  it("hands out each recipient's messages in the order they were posted", async () => {
    const mailbox = createMailbox();
    for (const [to, prompt] of [
      ["a", "a1"],
      ["b", "b1"],
      ["a", "a2"],
      ["b", "b2"],
      ["a", "a3"],
    ] as const)
      await mailbox.post({ to, prompt });
    const prompts = async (to: string) => {
      const got: string[] = [];
      for (let message = await mailbox.claim(to); message; message = await mailbox.claim(to))
        got.push(message.prompt);
      return got;
    };
    expect(await prompts("b")).toEqual(["b1", "b2"]);
    expect(await prompts("a")).toEqual(["a1", "a2", "a3"]);
    expect(await mailbox.claim("nobody")).toBeUndefined();
  });

  it("concurrent claims never get the same message, and every message is handed out once", async () => {
    const mailbox = createMailbox();
    const posted = await Promise.all(
      Array.from({ length: 40 }, (_, index) => mailbox.post({ to: "w", prompt: `task ${index}` })),
    );
    const claims = await Promise.all(Array.from({ length: 60 }, () => mailbox.claim("w")));
    const got = claims.filter((message): message is MailboxMessage => message !== undefined);
    expect(got).toHaveLength(40);
    expect(new Set(got.map((message) => message.id)).size).toBe(40);
    expect(new Set(got.map((message) => message.id))).toEqual(
      new Set(posted.map((message) => message.id)),
    );
    expect(claims.filter((message) => message === undefined)).toHaveLength(20);
  });

  it("a claimed message is never handed out again, acked or not; a second ack is a no-op", async () => {
    const mailbox = createMailbox();
    const first = await mailbox.post({ to: "w", prompt: "one" });
    await mailbox.post({ to: "w", prompt: "two" });
    const claimed = await mailbox.claim("w");
    expect(claimed?.id).toBe(first.id);
    // Not acked: still not handed out again.
    const next = await mailbox.claim("w");
    expect(next?.prompt).toBe("two");
    await mailbox.ack(next!.id);
    await expect(mailbox.ack(next!.id)).resolves.toBeUndefined();
    expect(await mailbox.claim("w")).toBeUndefined();
  });

  it("a message is a copy: changing what post or claim returned changes nothing stored", async () => {
    const mailbox = createMailbox();
    const posted = await mailbox.post({ to: "w", prompt: "original" });
    posted.prompt = "changed";
    const claimed = await mailbox.claim("w");
    expect(claimed?.prompt).toBe("original");
  });
});

describe("agent.runNext(mailbox)", () => {
  it("runs the oldest message for its id as a top-level run, with the prompt alone, and carries the task", async () => {
    const { mailbox, acks } = spiedMailbox();
    const writer = scriptedChild("writer", [{ text: "draft one" }, { text: "draft two" }]);
    const first = await mailbox.post({ to: "writer", prompt: "first task" });
    const second = await mailbox.post({ to: "writer", prompt: "second task" });
    await mailbox.post({ to: "someone-else", prompt: "not mine" });

    const one = await writer.agent.runNext(mailbox);
    expect(one?.subtype).toBe("success");
    expect(one?.result).toBe("draft one");
    expect(one?.task).toEqual(first);
    expect(writer.model.requests[0]!.messages).toEqual([{ role: "user", content: "first task" }]);
    expect(acks).toEqual([first.id]);

    const two = await writer.agent.runNext(mailbox);
    expect(two?.task.id).toBe(second.id);
    expect(acks).toEqual([first.id, second.id]);
  });

  it("resolves undefined and runs nothing when no message waits", async () => {
    const writer = scriptedChild("writer", [{ text: "never" }]);
    const mailbox = createMailbox();
    await mailbox.post({ to: "other", prompt: "x" });
    expect(await writer.agent.runNext(mailbox)).toBeUndefined();
    expect(writer.model.requests).toHaveLength(0);
  });

  it("{ to } names the recipient to claim for", async () => {
    const writer = scriptedChild("writer", [{ text: "done" }]);
    const mailbox = createMailbox();
    await mailbox.post({ to: "drafts", prompt: "draft it" });
    const result = await writer.agent.runNext(mailbox, { to: "drafts" });
    expect(result?.task.to).toBe("drafts");
    expect(writer.model.requests[0]!.messages).toEqual([{ role: "user", content: "draft it" }]);
  });

  it("acks the message whatever the run's subtype (a failed run too)", async () => {
    const { mailbox, acks } = spiedMailbox();
    const writer = scriptedChild("writer", []);
    const posted = await mailbox.post({ to: "writer", prompt: "fail" });
    const result = await writer.agent.runNext(mailbox);
    expect(result?.subtype).toBe("error_during_execution");
    expect(acks).toEqual([posted.id]);
  });

  it("a run that rejects (abort) leaves the message claimed and unacked: not delivered again", async () => {
    const { mailbox, acks } = spiedMailbox();
    const wait = waitingTool();
    const writer = scriptedChild("writer", [{ toolCalls: [{ name: "wait", input: {} }] }], {
      tools: [wait.tool],
    });
    await mailbox.post({ to: "writer", prompt: "long task" });
    const controller = new AbortController();
    const running = writer.agent.runNext(mailbox, { signal: controller.signal });
    await wait.started.promise;
    controller.abort();
    expect(await rejectionOf(running)).toBeInstanceOf(AbortError);
    expect(acks).toEqual([]);
    expect(await mailbox.claim("writer")).toBeUndefined();
    expect(await writer.agent.runNext(mailbox)).toBeUndefined();
  });
});
