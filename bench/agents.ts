/**
 * `npm run bench -- agents` (design/agents.md): an agent tool call costs one child run and no
 * more. A parent makes 20 turns of one call each to a child agent that answers after one echo
 * call; the same parent with a plain tool whose handler runs the child itself (`child.run`) is
 * the baseline: the same work, with nothing of agentTool's (event forwarding, narrowed rules,
 * usage roll-up). Reported: the minimum wall time per child call of each, interleaved, and the
 * difference: what agentTool adds to the child run it starts.
 */
import { z } from "zod";
import { collectGarbage, skein, TABLE_HEADER, testing, us, verdict } from "./support.ts";

const { agentTool, createBareAgent, tool } = skein;
const { scriptedModel } = testing;

const CALLS = 20;
const RUNS = 21;

const echo = tool("echo", "Echo", z.object({ n: z.number() }), async ({ n }) => `${n}`);

/** A child that calls echo once, then answers. */
function child() {
  return createBareAgent({
    id: "child",
    model: scriptedModel((request) =>
      request.messages.length === 1
        ? { toolCalls: [{ name: "echo", input: { n: 1 } }] }
        : { text: "done" },
    ),
    tools: [echo],
  });
}

/** A parent that calls `name` once per turn for CALLS turns, then ends. */
function parentModel(name: string) {
  return scriptedModel((_request, index) =>
    index < CALLS ? { toolCalls: [{ name, input: { prompt: `task ${index}` } }] } : { text: "end" },
  );
}

async function timed(agent: ReturnType<typeof createBareAgent>): Promise<number> {
  collectGarbage();
  const started = performance.now();
  const result = await agent.run("go");
  const elapsed = performance.now() - started;
  if (result.subtype !== "success") throw new Error(`bench run failed: ${result.result}`);
  return (elapsed * 1000) / CALLS;
}

export async function agentsBench(): Promise<{ rows: string[][]; notes: string }> {
  const viaAgentTool = () =>
    createBareAgent({
      model: parentModel("child"),
      tools: [agentTool(child(), { description: "Runs the child" })],
    });
  const byHand = () => {
    const target = child();
    const runChild = tool(
      "child",
      "Runs the child",
      z.object({ prompt: z.string() }),
      async ({ prompt }, context) => (await target.run(prompt, { signal: context.signal })).result,
    );
    return createBareAgent({ model: parentModel("child"), tools: [runChild] });
  };
  let best = { agentTool: Number.POSITIVE_INFINITY, byHand: Number.POSITIVE_INFINITY };
  for (let index = 0; index < RUNS + 3; index++) {
    const order =
      index % 2 ? (["byHand", "agentTool"] as const) : (["agentTool", "byHand"] as const);
    for (const side of order) {
      const perCall = await timed(side === "agentTool" ? viaAgentTool() : byHand());
      if (index >= 3) best = { ...best, [side]: Math.min(best[side], perCall) };
    }
  }
  const added = best.agentTool - best.byHand;
  const ratio = best.agentTool / best.byHand;
  return {
    rows: [
      TABLE_HEADER,
      [
        "per child call: agentTool vs child.run in a tool",
        us(best.agentTool),
        us(best.byHand),
        `${ratio.toFixed(3)} x (${added >= 0 ? "+" : ""}${us(added)})`,
        "≤ 1.10 x",
        verdict(ratio <= 1.1),
      ],
    ],
    notes: `Minimum over ${RUNS} interleaved runs of ${CALLS} parent turns, each one call to a child agent (one echo call, then an answer), per child call. The baseline runs the same child with child.run() inside a plain tool.`,
  };
}
