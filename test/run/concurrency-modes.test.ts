import { type AgentOptions, createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { lastResults, toolResultsOf } from "../support/results.ts";
import { drain, Gates, noEager } from "./helpers.ts";

type Safety = "yes" | "no" | "throw";

/** `work` decides its safety from its input; `plain` declares no rule; `serial` is sequential. */
function setup(
  calls: { id: string; name?: string; safe?: Safety }[],
  options: Partial<AgentOptions> = {},
) {
  const gates = new Gates();
  const handler = async ({ id }: { id: string }) => {
    await gates.pass(id);
    return `done ${id}`;
  };
  const work = tool(
    "work",
    "Work",
    z.object({ id: z.string(), safe: z.enum(["yes", "no", "throw"]), n: z.number().optional() }),
    handler,
    {
      isConcurrencySafe: (input) => {
        if (input.safe === "throw") throw new Error("rule broke");
        return input.safe === "yes";
      },
    },
  );
  const plain = tool("plain", "No rule", z.object({ id: z.string() }), handler);
  const serial = tool("serial", "Sequential", z.object({ id: z.string() }), handler, {
    isConcurrencySafe: () => true,
    executionMode: "sequential",
  });
  const model = scriptedModel([
    {
      toolCalls: calls.map(({ id, name = "work", safe = "yes" }) => ({
        id,
        name,
        input: name === "work" ? { id, safe } : { id },
      })),
    },
    { text: "finished" },
  ]);
  const agent = createBareAgent({ model, tools: [work, plain, serial], ...options });
  const result = agent.run("go");
  return { gates, result, model };
}

/** Waits for `keys` to start, checks exactly they are running, then lets them finish. */
async function phase(gates: Gates, keys: string[]): Promise<void> {
  await gates.started(...keys);
  await drain();
  expect(gates.running()).toEqual(keys);
  for (const key of keys) await gates.finish(key);
}

describe('mode "safe" (the default)', () => {
  it("overlaps only consecutive calls whose rule returns true; the others run alone, in order", async () => {
    const { gates, result, model } = setup([
      { id: "s1" },
      { id: "s2" },
      { id: "no", safe: "no" },
      { id: "s3" },
      { id: "s4" },
      { id: "throws", safe: "throw" },
      { id: "s5" },
      { id: "plain", name: "plain" },
      { id: "s6" },
    ]);
    await phase(gates, ["s1", "s2"]);
    await phase(gates, ["no"]);
    await phase(gates, ["s3", "s4"]);
    await phase(gates, ["throws"]);
    await phase(gates, ["s5"]);
    await phase(gates, ["plain"]);
    await phase(gates, ["s6"]);
    const done = await result;
    expect(done.subtype).toBe("success");
    expect(lastResults(model.requests[1]!.messages).map((block) => block.is_error)).toEqual(
      Array(9).fill(false),
    );
  });

  // (Every test in this file runs without eager execution: `serial`, among the agent's tools, has
  // executionMode "sequential". The policy makes that explicit here; eager.test.ts covers the rest.)
  it("runs an unsafe first call alone, before the safe calls after it (pass-through batch policy)", async () => {
    const { gates, result } = setup(
      [
        { id: "no", safe: "no" },
        { id: "s1" },
        { id: "s2" },
        { id: "plain", name: "plain" },
        { id: "s3" },
      ],
      { toolBatchPolicy: noEager },
    );
    await phase(gates, ["no"]);
    await phase(gates, ["s1", "s2"]);
    await phase(gates, ["plain"]);
    await phase(gates, ["s3"]);
    expect((await result).subtype).toBe("success");
  });

  it("asks the rule about the validated (coerced) input, and never about an invalid one", async () => {
    const gates = new Gates();
    const saw: unknown[] = [];
    const work = tool(
      "work",
      "Work",
      z.object({ id: z.string(), n: z.number() }),
      async ({ id }) => {
        await gates.pass(id);
        return id;
      },
      {
        isConcurrencySafe: (input) => {
          saw.push(input);
          return true;
        },
      },
    );
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "a", name: "work", input: { id: "a", n: "3" } },
          { id: "bad", name: "work", input: { id: "bad", n: "three" } },
          { id: "b", name: "work", input: { id: "b", n: 4 } },
        ],
      },
      { text: "ok" },
    ]);
    const run = createBareAgent({ model, tools: [work] }).run("go");
    await phase(gates, ["a", "b"]);
    const done = await run;
    expect(saw).toEqual([
      { id: "a", n: 3 },
      { id: "b", n: 4 },
    ]);
    expect(gates.hasStarted("bad")).toBe(false);
    const blocks = toolResultsOf(done.messages[2]);
    expect(blocks.map((block) => [block.tool_use_id, block.is_error])).toEqual([
      ["a", false],
      ["bad", true],
      ["b", false],
    ]);
  });
});

describe('mode "all"', () => {
  it("overlaps every call, whatever the rules say", async () => {
    const { gates, result } = setup(
      [
        { id: "s1" },
        { id: "no", safe: "no" },
        { id: "throws", safe: "throw" },
        { id: "plain", name: "plain" },
      ],
      { toolConcurrency: { mode: "all" } },
    );
    await phase(gates, ["s1", "no", "throws", "plain"]);
    expect((await result).subtype).toBe("success");
  });

  it('still runs a batch holding an executionMode: "sequential" tool one call at a time', async () => {
    const { gates, result } = setup(
      [{ id: "s1" }, { id: "x", name: "serial" }, { id: "s2" }, { id: "p", name: "plain" }],
      { toolConcurrency: { mode: "all" } },
    );
    await phase(gates, ["s1"]);
    await phase(gates, ["x"]);
    await phase(gates, ["s2"]);
    await phase(gates, ["p"]);
    expect((await result).subtype).toBe("success");
  });
});

describe('mode "sequential"', () => {
  it("runs one call at a time in call order, even safe ones", async () => {
    const { gates, result } = setup([{ id: "s1" }, { id: "s2" }, { id: "s3" }], {
      toolConcurrency: { mode: "sequential" },
    });
    await phase(gates, ["s1"]);
    await phase(gates, ["s2"]);
    await phase(gates, ["s3"]);
    expect((await result).subtype).toBe("success");
  });
});

describe('executionMode: "sequential" in mode "safe"', () => {
  it("makes the whole batch it is in sequential", async () => {
    const { gates, result } = setup([{ id: "s1" }, { id: "s2" }, { id: "x", name: "serial" }]);
    await phase(gates, ["s1"]);
    await phase(gates, ["s2"]);
    await phase(gates, ["x"]);
    expect((await result).subtype).toBe("success");
  });

  it("does not touch a later batch it is not in", async () => {
    const gates = new Gates();
    const handler = async ({ id }: { id: string }) => {
      await gates.pass(id);
      return id;
    };
    const safe = tool("safe", "Safe", z.object({ id: z.string() }), handler, {
      isConcurrencySafe: () => true,
    });
    const serial = tool("serial", "Serial", z.object({ id: z.string() }), handler, {
      executionMode: "sequential",
    });
    const model = scriptedModel([
      { toolCalls: [{ id: "x", name: "serial", input: { id: "x" } }] },
      {
        toolCalls: [
          { id: "a", name: "safe", input: { id: "a" } },
          { id: "b", name: "safe", input: { id: "b" } },
        ],
      },
      { text: "ok" },
    ]);
    const run = createBareAgent({ model, tools: [safe, serial] }).run("go");
    await phase(gates, ["x"]);
    await phase(gates, ["a", "b"]);
    expect((await run).subtype).toBe("success");
  });
});

describe("maxConcurrency", () => {
  it("is reached and never exceeded: 12 calls at maxConcurrency 4 peak at exactly 4", async () => {
    const ids = Array.from({ length: 12 }, (_, index) => `c${index}`);
    const { gates, result, model } = setup(
      ids.map((id) => ({ id })),
      { toolConcurrency: { mode: "safe", maxConcurrency: 4 } },
    );
    await gates.started("c0", "c1", "c2", "c3");
    await drain();
    expect(gates.running()).toEqual(["c0", "c1", "c2", "c3"]);
    // Free one slot at a time: exactly one more call starts each time, in call order.
    for (let index = 0; index < 12; index++) {
      await gates.finish(ids[index]!);
      const next = ids[index + 4];
      if (next) {
        await gates.started(next);
        await drain();
        expect(gates.running()).toEqual(ids.slice(index + 1, index + 5));
      }
    }
    const done = await result;
    expect(gates.peak).toBe(4);
    expect(lastResults(model.requests[1]!.messages).map((block) => block.tool_use_id)).toEqual(ids);
    expect(done.subtype).toBe("success");
  });

  it('toolExecution: { toolConcurrency: 3 } means mode "all" with at most 3 at once', async () => {
    const ids = ["p1", "p2", "p3", "p4", "p5"];
    const { gates, result } = setup(
      ids.map((id) => ({ id, name: "plain" })),
      { toolExecution: { toolConcurrency: 3 } },
    );
    await gates.started("p1", "p2", "p3");
    await drain();
    expect(gates.running()).toEqual(["p1", "p2", "p3"]);
    await gates.finish("p2");
    await gates.started("p4");
    await drain();
    expect(gates.running()).toEqual(["p1", "p3", "p4"]);
    await gates.finish("p1");
    await gates.started("p5");
    for (const id of ["p3", "p4", "p5"]) await gates.finish(id);
    expect((await result).subtype).toBe("success");
    expect(gates.peak).toBe(3);
  });

  it("maxConcurrency 1 runs even safe calls one at a time", async () => {
    const { gates, result } = setup([{ id: "s1" }, { id: "s2" }], {
      toolConcurrency: { maxConcurrency: 1 },
    });
    await phase(gates, ["s1"]);
    await phase(gates, ["s2"]);
    expect((await result).subtype).toBe("success");
    expect(gates.peak).toBe(1);
  });
});
