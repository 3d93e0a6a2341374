// skein's own example: agents as tools. A lead agent asks a researcher (agentTool: it waits for
// the answer) and hands the write-up to a writer (delegateTool with a mailbox: the task is queued
// and the lead goes on at once); later the writer takes its task with runNext. It runs offline:
// scripted models play each agent's side. Run it with `npx tsx examples/agents-researcher-writer.ts`.
import path from "node:path";
import {
  type AgentEvent,
  agentTool,
  createBareAgent,
  createMailbox,
  delegateTool,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { z } from "zod";

export async function main(log: (line: string) => void = console.log): Promise<void> {
  const lookUp = tool(
    "look_up",
    "Looks a topic up in the team's notes",
    z.object({ topic: z.string() }),
    async ({ topic }) => `${topic}: tides follow the moon, twice a day.`,
  );
  const researcher = createBareAgent({
    id: "researcher",
    systemPrompt: "You research a topic and answer in one sentence.",
    model: scriptedModel([
      { toolCalls: [{ name: "look_up", input: { topic: "tides" } }], usage: { outputTokens: 8 } },
      { text: "Tides rise and fall twice a day, pulled by the moon.", usage: { outputTokens: 14 } },
    ]),
    tools: [lookUp],
  });
  const writer = createBareAgent({
    id: "writer",
    systemPrompt: "You write short articles.",
    model: scriptedModel((request) => ({
      text: `Article: ${request.messages[0]!.content}`,
    })),
  });

  const mailbox = createMailbox();
  const lead = createBareAgent({
    model: scriptedModel([
      {
        toolCalls: [{ name: "researcher", input: { prompt: "How do tides work?" } }],
        usage: { outputTokens: 10 },
      },
      {
        toolCalls: [
          {
            name: "delegate",
            input: {
              agent: "writer",
              mode: "handoff",
              prompt: "Tides rise and fall twice a day, pulled by the moon.",
            },
          },
        ],
      },
      { text: "Research done; the writer has the article.", usage: { outputTokens: 9 } },
    ]),
    tools: [
      agentTool(researcher, { description: "Researches a topic and answers in one sentence." }),
      delegateTool({ writer }, { mailbox }),
    ],
  });

  // The researcher's events come inside the lead's stream, tagged with the call that started it.
  let result: Extract<AgentEvent, { type: "result" }> | undefined;
  for await (const event of lead.stream("Write an article about tides.")) {
    if (event.type === "tool_end" && event.parentCallId !== undefined)
      log(`  (inside ${event.parentCallId}) ${event.name}: ${String(event.result.content)}`);
    else if (event.type === "tool_end") log(`${event.name}: ${String(event.result.content)}`);
    if (event.type === "result") result = event;
  }
  log(`lead: ${result!.result}`);
  log(
    `lead used ${result!.usage.outputTokens} output tokens; with the researcher: ${result!.totalUsage.outputTokens}`,
  );

  // Later (here, or in another worker): the writer takes its task.
  const task = await writer.runNext(mailbox);
  log(`writer: ${task!.result} (task from call ${task!.task.from!.callId})`);
  log(`more tasks: ${(await writer.runNext(mailbox)) === undefined ? "none" : "some"}`);
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();
