import { createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { deferred } from "../support/promises.ts";
import { expectValidTranscript, resultText, toolResultsOf } from "../support/results.ts";

describe("a batch of 500 calls", () => {
  for (const mode of ["safe", "all"] as const) {
    it(`answers every call, in call order, whatever order they finish in (mode "${mode}")`, async () => {
      const finished: number[] = [];
      // Every handler waits; once the running ones fill maxConcurrency (or are all that is
      // left), they are released in reverse order of their start. So calls finish out of call
      // order in waves (9..0, then the next ten, ...) whether they start while the model still
      // streams (eager execution) or after its reply.
      const waiting: (() => void)[] = [];
      const work = tool(
        "work",
        "Work",
        z.object({ n: z.number() }),
        async ({ n }) => {
          const gate = deferred();
          waiting.push(gate.resolve);
          if (waiting.length === Math.min(10, 500 - finished.length)) {
            const wave = waiting.splice(0).reverse();
            // After this handler's own await below, so it is released in its turn too.
            queueMicrotask(() => {
              for (const release of wave) release();
            });
          }
          await gate.promise;
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
      expect(new Set(finished).size).toBe(500);
      expect(finished.slice(0, 10)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
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
