// skein's own example: talking to an agent while it works. A steering message sent while the
// first of two tool calls runs stops the second (it is answered "interrupted"), and the model sees
// the message before it goes on; a follow-up runs once the answer is done, in the same run. It
// runs offline: a scripted model plays the model's side. Run it with
// `npx tsx examples/interactive-steering.ts`.
import path from "node:path";
import { createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { z } from "zod";

export async function main(log: (line: string) => void = console.log): Promise<void> {
  let onDeploy = () => {};
  const deploy = tool(
    "deploy",
    "Deploys a service",
    z.object({ service: z.string() }),
    async ({ service }) => {
      onDeploy();
      return `deployed ${service}`;
    },
  );
  const agent = createBareAgent({
    model: scriptedModel([
      {
        toolCalls: [
          { name: "deploy", input: { service: "api" } },
          { name: "deploy", input: { service: "web" } },
        ],
      },
      { text: "Understood: api is deployed, web is not." },
      { text: "Rollback plan: redeploy the previous api image." },
    ]),
    tools: [deploy],
    toolConcurrency: { mode: "sequential" },
  });

  const run = agent.stream("Deploy api and web.");
  // The user changes their mind while the first deploy runs.
  onDeploy = () => {
    onDeploy = () => {};
    run.steer("Stop after api; do not deploy web.");
    run.followUp("Then write the rollback plan.");
  };
  for await (const event of run) {
    if (event.type === "tool_end") log(`${event.name}: ${String(event.result.content)}`);
    if (event.type === "user_message") log(`${event.origin}: ${textOf(event.message.content)}`);
    if (event.type === "result") log(`result: ${event.result}`);
  }
}

function textOf(content: string | { type: string; text?: string }[]): string {
  return typeof content === "string" ? content : content.map((block) => block.text ?? "").join("");
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();
