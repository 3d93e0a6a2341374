import { test } from "vitest";
import { z } from "zod";
import { z as z3 } from "zod/v3";
import { tool, defineTool, createBareAgent } from "skein";
import { scriptedModel } from "skein/testing";

test("probe", async () => {
  const t4 = tool("a", "d", z.object({ n: z.number(), s: z.string().optional() }), () => "ok");
  console.log(JSON.stringify(t4), Object.keys(t4));
  const t3 = tool("b", "d", z3.object({ n: z3.number(), s: z3.string().optional() }), () => "ok");
  console.log(JSON.stringify(t3));
  const model = scriptedModel([{ toolCalls: [{ name: "a", input: { n: "x", s: 5 } }] }, { text: "done" }]);
  const agent = createBareAgent({ model, tools: [t4] });
  const r = await agent.run("hi");
  console.log(JSON.stringify(r.messages, null, 1), JSON.stringify(r.steps, null, 1));
  console.log(JSON.stringify(model.requests[0]));
  const d = defineTool({ id: "x", execute: () => 1 });
  console.log(JSON.stringify(d), Object.keys(d));
});
