import { createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { expectValidTranscript, resultText, toolResultsOf } from "../support/results.ts";
import { Gates } from "./helpers.ts";

describe("one agent, several runs at once", () => {
  it("keeps each run's transcript, ids and results apart", async () => {
    const gates = new Gates();
    const work = tool("work", "Work", z.object({ who: z.string() }), async ({ who }) => {
      await gates.pass(who);
      return `worked for ${who}`;
    });
    const promptOf = (messages: { content: unknown }[]) => String(messages[0]!.content);
    const model = scriptedModel((request) =>
      request.messages.length === 1
        ? {
            toolCalls: [
              { id: "same-id", name: "work", input: { who: promptOf(request.messages) } },
            ],
          }
        : { text: `done for ${promptOf(request.messages)}` },
    );
    const agent = createBareAgent({ model, tools: [work] });
    const first = agent.run("alice");
    const second = agent.run("bob");
    await gates.started("alice", "bob");
    await gates.finish("bob");
    await gates.finish("alice");
    const [a, b] = await Promise.all([first, second]);
    expect([a.result, b.result]).toEqual(["done for alice", "done for bob"]);
    expect(resultText(toolResultsOf(a.messages[2])[0])).toBe("worked for alice");
    expect(resultText(toolResultsOf(b.messages[2])[0])).toBe("worked for bob");
    expect(toolResultsOf(a.messages[2])[0]!.tool_use_id).toBe("same-id");
    expect(toolResultsOf(b.messages[2])[0]!.tool_use_id).toBe("same-id");
    expectValidTranscript(a.messages);
    expectValidTranscript(b.messages);
    expect(a.sessionId).not.toBe(b.sessionId);
  });

  it("aborting one run leaves the other running", async () => {
    const gates = new Gates();
    const work = tool("work", "Work", z.object({ who: z.string() }), async ({ who }, ctx) => {
      await Promise.race([
        gates.pass(who),
        new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true }),
        ),
      ]);
      return `worked for ${who}`;
    });
    const model = scriptedModel((request) =>
      request.messages.length === 1
        ? {
            toolCalls: [
              { id: "t", name: "work", input: { who: String(request.messages[0]!.content) } },
            ],
          }
        : { text: "done" },
    );
    const agent = createBareAgent({ model, tools: [work] });
    const controller = new AbortController();
    const stopped = agent.run("alice", { signal: controller.signal });
    const going = agent.run("bob");
    await gates.started("alice", "bob");
    controller.abort();
    await expect(stopped).rejects.toMatchObject({ name: "AbortError" });
    await gates.finish("bob");
    const result = await going;
    expect(result.subtype).toBe("success");
    expect(resultText(toolResultsOf(result.messages[2])[0])).toBe("worked for bob");
  });
});
