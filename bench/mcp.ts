/**
 * `npm run bench -- mcp` (design/mcp.md): what an MCP tool call costs over the same tool called
 * directly. A parent makes 20 turns; each turn calls `echo` once (or 8 times, all overlapping: the
 * served tool is read-only). Through MCP the call goes to a server over stdio (skein's own
 * serveMcp() from dist/, in a child process, connected once and kept, as an agent keeps it); the
 * baseline is the same echo tool given to the agent directly. Reported: the minimum wall time per
 * call of each, interleaved, their ratio, and the difference: what one MCP call adds (JSON-RPC
 * framing, the pipe both ways, the server's own validation and dispatch).
 */
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { collectGarbage, dist, skein, TABLE_HEADER, testing, us } from "./support.ts";

const { createBareAgent, tool } = skein;
const { scriptedModel } = testing;
const { mcpServer } = (await import(dist("mcp/index.js"))) as typeof import("skein/mcp");

const TURNS = 20;
const RUNS = 21;
const WARMUP = 3;
const SERVER = fileURLToPath(new URL("./mcp-echo-server.mjs", import.meta.url));

const echo = tool("echo", "Echo", z.object({ n: z.number() }), async ({ n }) => `${n}`, {
  isConcurrencySafe: () => true,
});

/** TURNS turns of `perTurn` calls to `name`, then an answer. */
function model(name: string, perTurn: number) {
  return scriptedModel((_request, index) =>
    index < TURNS
      ? { toolCalls: Array.from({ length: perTurn }, (_, n) => ({ name, input: { n } })) }
      : { text: "end" },
  );
}

async function perCall(agent: ReturnType<typeof createBareAgent>, calls: number): Promise<number> {
  collectGarbage();
  const started = performance.now();
  const result = await agent.run("go");
  const elapsed = performance.now() - started;
  if (result.subtype !== "success") throw new Error(`bench run failed: ${result.result}`);
  const failed = result.steps.flatMap((step) => step.toolCalls).find((call) => call.isError);
  if (failed) throw new Error(`bench call failed: ${JSON.stringify(failed.result.content)}`);
  return (elapsed * 1000) / calls;
}

export async function mcpBench(): Promise<{ rows: string[][]; notes: string }> {
  const server = mcpServer({ command: process.execPath, args: [SERVER], stderr: "inherit" });
  const rows = [TABLE_HEADER];
  try {
    // Connected (and its tools listed) once, outside the clock: an agent keeps the connection.
    await server.tools("sk");
    for (const perTurn of [1, 8]) {
      const calls = TURNS * perTurn;
      const viaMcp = () =>
        createBareAgent({ model: model("mcp__sk__echo", perTurn), mcpServers: { sk: server } });
      const direct = () => createBareAgent({ model: model("echo", perTurn), tools: [echo] });
      let best = { mcp: Number.POSITIVE_INFINITY, direct: Number.POSITIVE_INFINITY };
      for (let index = 0; index < RUNS + WARMUP; index++) {
        const order = index % 2 ? (["direct", "mcp"] as const) : (["mcp", "direct"] as const);
        for (const side of order) {
          const value = await perCall(side === "mcp" ? viaMcp() : direct(), calls);
          if (index >= WARMUP) best = { ...best, [side]: Math.min(best[side], value) };
        }
      }
      const added = best.mcp - best.direct;
      rows.push([
        perTurn === 1
          ? "per call, one a turn: MCP vs direct"
          : `per call, ${perTurn} overlapping a turn`,
        us(best.mcp),
        us(best.direct),
        `${(best.mcp / best.direct).toFixed(1)} x (+${us(added)})`,
        "reported",
        "",
      ]);
    }
  } finally {
    await server.close();
  }
  return {
    rows,
    notes: `Minimum over ${RUNS} interleaved runs of ${TURNS} turns per measure, per tool call. MCP: the echo tool served by skein's serveMcp() in a child process over stdio (one connection for the whole benchmark); direct: the same tool in the agent.`,
  };
}
