import { createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

describe("tool_end.durationMs", () => {
  it("ends when the call settles, not when the whole batch is finalized", async () => {
    let releaseSlow!: () => void;
    const slowGate = new Promise<void>((resolve) => {
      releaseSlow = resolve;
    });
    const slow = tool(
      "slow",
      "Slow",
      z.object({}),
      async () => {
        await slowGate;
        return "slow done";
      },
      { isConcurrencySafe: () => true },
    );
    const fast = tool(
      "fast",
      "Fast",
      z.object({}),
      async () => {
        // Keep the slow call waiting well past the fast one's end, with room for a busy machine.
        setTimeout(releaseSlow, 1_000);
        return "fast done";
      },
      { isConcurrencySafe: () => true },
    );
    const model = scriptedModel([
      {
        toolCalls: [
          { name: "slow", input: {} },
          { name: "fast", input: {} },
          { name: "missing", input: {} },
        ],
      },
      { text: "ok" },
    ]);
    const ends: Record<string, number> = {};
    for await (const event of createBareAgent({ model, tools: [slow, fast] }).stream("go")) {
      if (event.type === "tool_end") ends[event.name] = event.durationMs;
    }
    expect(ends.slow).toBeGreaterThanOrEqual(990);
    expect(ends.fast).toBeLessThan(ends.slow! / 2);
    expect(ends.missing).toBeLessThan(ends.slow! / 2);
  });
});
