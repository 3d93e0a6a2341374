import { createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { expectValidTranscript, resultText, toolResultsOf } from "./helpers.ts";

/** Finishes after a number of microtask turns that varies by call, so completion order is scrambled. */
async function scrambled(n: number): Promise<void> {
  for (let turn = 0; turn < (n * 7) % 13; turn++) await Promise.resolve();
}

describe("a batch of 500 calls", () => {
  for (const mode of ["safe", "all"] as const) {
    it(`answers every call, in call order (mode "${mode}")`, async () => {
      const finished: number[] = [];
      const work = tool(
        "work",
        "Work",
        z.object({ n: z.number() }),
        async ({ n }) => {
          await scrambled(n);
          finished.push(n);
          if (n % 50 === 0) throw new Error(`call ${n} failed`);
          return `result ${n}`;
        },
        { isConcurrencySafe: () => true },
      );
      const calls = Array.from({ length: 500 }, (_, n) => ({
        id: `call_${n}`,
        name: "work",
        input: { n },
      }));
      const model = scriptedModel([{ toolCalls: calls }, { text: "all done" }]);
      const result = await createBareAgent({
        model,
        tools: [work],
        toolConcurrency: { mode, maxConcurrency: 10 },
      }).run("go");
      expect(result.subtype).toBe("success");
      expect(finished).toHaveLength(500);
      expect(finished).not.toEqual([...finished].sort((a, b) => a - b));
      const blocks = toolResultsOf(model.requests[1]!.messages.at(-1));
      expect(blocks.map((block) => block.tool_use_id)).toEqual(calls.map((call) => call.id));
      blocks.forEach((block, n) => {
        expect(block.is_error).toBe(n % 50 === 0);
        if (n % 50 !== 0) expect(resultText(block)).toBe(`result ${n}`);
      });
      expectValidTranscript(result.messages);
      expect(result.steps[0]!.toolCalls.map((call) => call.callId)).toEqual(
        calls.map((call) => call.id),
      );
    });
  }

  it("answers every call when run sequentially", async () => {
    let ran = 0;
    const plain = tool("plain", "Plain", z.object({ n: z.number() }), async ({ n }) => {
      ran++;
      return String(n);
    });
    const calls = Array.from({ length: 500 }, (_, n) => ({
      id: `p${n}`,
      name: "plain",
      input: { n },
    }));
    const model = scriptedModel([{ toolCalls: calls }, { text: "ok" }]);
    const result = await createBareAgent({ model, tools: [plain] }).run("go");
    expect(ran).toBe(500);
    expect(toolResultsOf(result.messages[2]).map(resultText)).toEqual(
      calls.map((_, n) => String(n)),
    );
  });
});
