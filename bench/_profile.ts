import type { Model, ModelStreamEvent } from "skein";
const { createBareAgent, tool } = (await import(new URL("../dist/index.js", import.meta.url).href)) as typeof import("skein");
import { z } from "zod";
const echo = tool("echo", "Echo a number.", z.object({ n: z.number() }), async ({ n }) => String(n), { isConcurrencySafe: () => true });
// A model that does no copying, to see the engine alone.
const cheap = (): Model => { let i = 0; return { provider: "x", modelId: "x", async *stream(): AsyncGenerator<ModelStreamEvent> {
  const turn = i++;
  if (turn >= 20) { yield { type: "message", message: { role: "assistant", content: [{ type: "text", text: "done" }] }, stopReason: "end_turn" }; return; }
  const content = Array.from({ length: 10 }, (_, c) => ({ type: "tool_use" as const, id: `c${turn}_${c}`, name: "echo", input: { n: c } }));
  yield { type: "message", message: { role: "assistant", content }, stopReason: "tool_use" };
} }; };
const t0 = performance.now();
const N = Number(process.argv[2] ?? 1500);
for (let i = 0; i < N; i++) await createBareAgent({ model: cheap(), tools: [echo] }).run("go");
console.log(((performance.now() - t0) / N / 200 * 1000).toFixed(2), "µs per call, engine + handler, no model copy");
