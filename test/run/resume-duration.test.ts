/**
 * A call that waited for approval is timed from the resume: `tool_end.durationMs` never includes
 * the time the run spent paused (the user's answer), nor anything before the resume.
 */
import { performance } from "node:perf_hooks";
import { type AgentEvent, createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

function agent() {
  const note = tool("note", "Notes a word.", z.object({ word: z.string() }), async ({ word }) => {
    return `noted ${word}`;
  });
  return createBareAgent({
    model: scriptedModel([
      {
        toolCalls: [
          { id: "a", name: "note", input: { word: "yes" } },
          { id: "b", name: "note", input: { word: "no" } },
        ],
      },
      { text: "done" },
    ]),
    tools: [note],
    permissions: { ask: ["note"] },
  });
}

describe("the duration of a call approved on resume", () => {
  it("is within the resumed stretch, for an approved and a declined call alike", async () => {
    const subject = agent();
    const paused = await subject.run("go");
    expect(paused.subtype).toBe("paused");
    // The user takes a while to answer.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const resumedAt = performance.now();
    const ends: { callId: string; durationMs: number; elapsed: number }[] = [];
    let last: AgentEvent | undefined;
    for await (const event of subject.resumeStream(paused.state!, {
      approvals: { a: true, b: false },
    })) {
      if (event.type === "tool_end")
        ends.push({
          callId: event.callId,
          durationMs: event.durationMs,
          elapsed: performance.now() - resumedAt,
        });
      last = event;
    }
    expect(last).toMatchObject({ type: "result", subtype: "success" });
    expect(ends.map((end) => end.callId).sort()).toEqual(["a", "b"]);
    for (const end of ends) {
      // The call cannot have taken longer than the resume had been going when it ended.
      expect(end.durationMs, end.callId).toBeGreaterThanOrEqual(0);
      expect(end.durationMs, end.callId).toBeLessThanOrEqual(end.elapsed);
    }
  });
});
