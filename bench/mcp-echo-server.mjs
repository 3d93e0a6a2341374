// The MCP server the `mcp` benchmark calls: skein's built serveMcp() over stdio, serving the same
// echo tool the baseline calls directly (started with `node`, no tsx: dist/ as users run it).
import { z } from "zod";

const dist = (path) => new URL(`../dist/${path}`, import.meta.url).href;
const { tool } = await import(dist("index.js"));
const { serveMcp } = await import(dist("mcp/index.js"));

const echo = tool("echo", "Echo", z.object({ n: z.number() }), async ({ n }) => `${n}`, {
  isConcurrencySafe: () => true,
});
await serveMcp({ tools: [echo], name: "bench-echo" });
