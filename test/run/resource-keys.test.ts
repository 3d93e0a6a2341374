import { type ConcurrencyMode, createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toolResultsOf } from "../support/results.ts";
import { drain, Gates } from "./helpers.ts";

const input = z.object({ id: z.string(), keys: z.array(z.string()) });

function setup(
  calls: { id: string; keys: string[]; name?: string }[],
  mode: ConcurrencyMode,
  maxConcurrency = 10,
) {
  const gates = new Gates();
  const options = {
    isConcurrencySafe: () => true,
    resourceKeys: ({ keys }: { keys: string[] }) => keys,
  };
  const handler = async ({ id }: { id: string }) => {
    await gates.pass(id);
    return id;
  };
  const write = tool("write", "Write", input, handler, options);
  const edit = tool("edit", "Edit", input, handler, options);
  const model = scriptedModel([
    {
      toolCalls: calls.map(({ id, keys, name = "write" }) => ({ id, name, input: { id, keys } })),
    },
    { text: "ok" },
  ]);
  const run = createBareAgent({
    model,
    tools: [write, edit],
    toolConcurrency: { mode, maxConcurrency },
  }).run("go");
  return { gates, run };
}

async function expectRunning(gates: Gates, keys: string[]): Promise<void> {
  await gates.started(...keys);
  await drain();
  expect(gates.running()).toEqual(keys);
}

describe("resourceKeys", () => {
  for (const mode of ["safe", "all"] as const) {
    it(`keeps calls sharing a key apart, and lets disjoint ones overlap (mode "${mode}")`, async () => {
      const { gates, run } = setup(
        [
          { id: "w1", keys: ["a.txt"] },
          { id: "w2", keys: ["b.txt"] },
          { id: "w3", keys: ["a.txt"] },
          { id: "w4", keys: ["c.txt"] },
        ],
        mode,
      );
      await expectRunning(gates, ["w1", "w2", "w4"]);
      await gates.finish("w2");
      await gates.finish("w4");
      await drain();
      expect(gates.running()).toEqual(["w1"]);
      await gates.finish("w1");
      await expectRunning(gates, ["w3"]);
      await gates.finish("w3");
      const done = await run;
      expect(toolResultsOf(done.messages[2]).map((block) => block.tool_use_id)).toEqual([
        "w1",
        "w2",
        "w3",
        "w4",
      ]);
    });
  }

  it("lets call order decide among conflicting calls: a later call never jumps an earlier one it conflicts with", async () => {
    const { gates, run } = setup(
      [
        { id: "first", keys: ["a"] },
        { id: "second", keys: ["a", "b"] },
        { id: "third", keys: ["b"] },
      ],
      "all",
    );
    await expectRunning(gates, ["first"]);
    await gates.finish("first");
    await expectRunning(gates, ["second"]);
    await gates.finish("second");
    await expectRunning(gates, ["third"]);
    await gates.finish("third");
    expect((await run).subtype).toBe("success");
  });

  it("keeps calls of two different tools apart when they share a key", async () => {
    const { gates, run } = setup(
      [
        { id: "write", keys: ["same.txt"] },
        { id: "edit", keys: ["same.txt"], name: "edit" },
      ],
      "all",
    );
    await expectRunning(gates, ["write"]);
    await gates.finish("write");
    await expectRunning(gates, ["edit"]);
    await gates.finish("edit");
    expect((await run).subtype).toBe("success");
  });

  it("respects keys under maxConcurrency as well", async () => {
    const { gates, run } = setup(
      [
        { id: "k1", keys: ["x"] },
        { id: "k2", keys: ["x"] },
        { id: "k3", keys: ["y"] },
        { id: "k4", keys: ["z"] },
      ],
      "all",
      2,
    );
    await expectRunning(gates, ["k1", "k3"]);
    await gates.finish("k3");
    await expectRunning(gates, ["k1", "k4"]);
    await gates.finish("k1");
    await expectRunning(gates, ["k4", "k2"]);
    await gates.finish("k4");
    await gates.finish("k2");
    expect((await run).subtype).toBe("success");
    expect(gates.peak).toBe(2);
  });

  it("runs a call alone when its resourceKeys rule throws", async () => {
    const gates = new Gates();
    const risky = tool(
      "risky",
      "Risky",
      z.object({ id: z.string(), boom: z.boolean() }),
      async ({ id }) => {
        await gates.pass(id);
        return id;
      },
      {
        isConcurrencySafe: () => true,
        resourceKeys: ({ id, boom }) => {
          if (boom) throw new Error("no keys for you");
          return [id];
        },
      },
    );
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "r1", name: "risky", input: { id: "r1", boom: false } },
          { id: "r2", name: "risky", input: { id: "r2", boom: true } },
          { id: "r3", name: "risky", input: { id: "r3", boom: false } },
        ],
      },
      { text: "ok" },
    ]);
    const run = createBareAgent({ model, tools: [risky] }).run("go");
    await expectRunning(gates, ["r1"]);
    await gates.finish("r1");
    await expectRunning(gates, ["r2"]);
    await gates.finish("r2");
    await expectRunning(gates, ["r3"]);
    await gates.finish("r3");
    expect((await run).subtype).toBe("success");
  });
});
