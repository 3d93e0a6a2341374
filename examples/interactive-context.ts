// skein's own example: a long run that stays inside a small context window. Context management is
// on by default: when the next request would pass 80% of the window, old tool results are left
// out of that request (a placeholder names the tool and the size removed), newest first kept;
// the full transcript stays in the result. A `beforeModelCall` hook sees every call. It runs
// offline: a scripted model plays the model's side. Run it with
// `npx tsx examples/interactive-context.ts`.
import path from "node:path";
import { createBareAgent, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { z } from "zod";

export async function main(log: (line: string) => void = console.log): Promise<void> {
  const readLog = tool(
    "read_log",
    "Reads one day of the server log",
    z.object({ day: z.number() }),
    async ({ day }) => `day ${day}: ${"GET /index.html 200\n".repeat(100)}`,
  );
  const days = 40;
  const model = scriptedModel([
    ...Array.from({ length: days }, (_, day) => ({
      toolCalls: [{ name: "read_log", input: { day } }],
    })),
    { text: "No errors in 40 days of logs." },
  ]);
  let calls = 0;
  const agent = createBareAgent({
    model,
    tools: [readLog],
    context: { window: 8_000 },
    hooks: {
      beforeModelCall: ({ turn }) => {
        calls = turn;
      },
    },
  });
  let removed = 0;
  for await (const event of agent.stream("Check the last 40 days of logs for errors.")) {
    if (event.type === "compaction") removed += event.removed.length;
    if (event.type === "result") {
      log(`${event.subtype}: ${event.result}`);
      log(
        `${event.messages.length} messages kept in the result, ${removed} old results left out of requests`,
      );
    }
  }
  const largest = Math.max(
    ...model.requests.map((request) => JSON.stringify(request.messages).length),
  );
  log(
    `the hook saw ${calls} model calls; the largest request held ${largest < 32_000 ? "under" : "over"} 32,000 characters`,
  );
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();
