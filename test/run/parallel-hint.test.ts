import { type AgentOptions, createBareAgent, PARALLEL_CALLS_HINT, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const input = z.object({ q: z.string() });
const safe = tool("search", "Search", input, async () => "hit", { isConcurrencySafe: () => true });
const unsafe = tool("write", "Write", input, async () => "written");
const safeButSequential = tool("serial", "Serial", input, async () => "x", {
  isConcurrencySafe: () => true,
  executionMode: "sequential",
});

async function systemFor(options: Omit<AgentOptions, "model">): Promise<string> {
  const model = scriptedModel([{ text: "hi" }]);
  await createBareAgent({ model, ...options }).run("hello");
  return model.requests[0]!.system;
}

describe("the parallel-calls hint", () => {
  it("is given when a tool is concurrency-safe, after the systemPrompt", async () => {
    const system = await systemFor({ systemPrompt: "You are terse.", tools: [safe, unsafe] });
    expect(system).toContain(PARALLEL_CALLS_HINT);
    expect(system.startsWith("You are terse.")).toBe(true);
  });

  it('is given in mode "all", even without a safe tool', async () => {
    const system = await systemFor({ tools: [unsafe], toolConcurrency: { mode: "all" } });
    expect(system).toContain(PARALLEL_CALLS_HINT);
  });

  it("is given for toolExecution: { toolConcurrency: n > 1 }", async () => {
    const system = await systemFor({ tools: [unsafe], toolExecution: { toolConcurrency: 3 } });
    expect(system).toContain(PARALLEL_CALLS_HINT);
  });

  const without: [string, Omit<AgentOptions, "model">][] = [
    ["no tool is concurrency-safe", { tools: [unsafe] }],
    ["there are no tools", { tools: [] }],
    ['mode is "sequential"', { tools: [safe], toolConcurrency: { mode: "sequential" } }],
    ["maxConcurrency is 1", { tools: [safe], toolConcurrency: { maxConcurrency: 1 } }],
    ["toolExecution allows 1", { tools: [unsafe], toolExecution: { toolConcurrency: 1 } }],
    ["the only safe tool is sequential", { tools: [safeButSequential, unsafe] }],
    ["the safe tool is hidden", { tools: [safe, unsafe], disallowedTools: ["search"] }],
  ];
  for (const [when, options] of without) {
    it(`is not given when ${when}, and the systemPrompt is kept as is`, async () => {
      const system = await systemFor({ systemPrompt: "You are terse.", ...options });
      expect(system).not.toContain(PARALLEL_CALLS_HINT);
      expect(system).toBe("You are terse.");
    });
  }

  it("sends an empty system when there is neither a prompt nor a hint", async () => {
    expect(await systemFor({ tools: [unsafe] })).toBe("");
  });
});
