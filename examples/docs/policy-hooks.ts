import { agentTool, createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { z } from "zod";

const search = tool(
  "search",
  "Search the web",
  z.object({ q: z.string() }),
  ({ q }) => `results for ${q}`,
);

const researcher = createBareAgent({
  id: "researcher",
  model: scriptedModel([
    { toolCalls: [{ id: "s1", name: "search", input: { q: "skein hooks" } }] },
    { text: "Hooks cover the whole tree." },
  ]),
  tools: [search],
});

const lead = createBareAgent({
  model: scriptedModel([
    { toolCalls: [{ id: "r1", name: "researcher", input: { prompt: "Find out about hooks." } }] },
    { text: "Done: hooks cover the whole tree." },
    { text: "Checked: the answer stands." },
  ]),
  tools: [agentTool(researcher, { description: "Researches a question" })],
  maxStopContinuations: 1,
  hooks: {
    // Sees the lead's own calls (depth 0) and every call of the runs beneath it.
    beforeToolCall: ({ name, depth, parentCallId }) =>
      console.log(`call ${name} at depth ${depth}${parentCallId ? ` under ${parentCallId}` : ""}`),
    subagentStop: ({ name, result }) => console.log(`${name} answered: ${result.result}`),
    // Once, before the lead answers: ask it to check its work.
    stop: ({ stopHookActive, depth }) =>
      depth === 0 && !stopHookActive ? { continue: "Check the answer once more." } : undefined,
  },
});

const result = await lead.run("What do hooks cover?");
console.log(result.result);
