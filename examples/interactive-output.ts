// skein's own example: a typed final answer. `output` takes a Zod schema; the run ends with
// `result.structuredResult` typed from it. A model that answers with the wrong shape gets the
// schema's errors and another try. It runs offline: a scripted model plays the model's side
// (it has no native structured output, so it answers through the `final_output` tool). Run it
// with `npx tsx examples/interactive-output.ts`.
import path from "node:path";
import { createBareAgent } from "skein";
import { scriptedModel } from "skein/testing";
import { z } from "zod";

const Forecast = z.object({
  city: z.string(),
  highC: z.number(),
  rain: z.boolean(),
});

export async function main(log: (line: string) => void = console.log): Promise<void> {
  const model = scriptedModel([
    { toolCalls: [{ name: "final_output", input: { city: "Oslo", highC: "nine", rain: true } }] },
    { toolCalls: [{ name: "final_output", input: { city: "Oslo", highC: 9, rain: true } }] },
  ]);
  const agent = createBareAgent({ model, output: Forecast, outputRetries: 2 });
  const result = await agent.run("What is tomorrow's forecast for Oslo?");
  // Typed from the schema: { city: string; highC: number; rain: boolean } | undefined.
  const forecast = result.structuredResult;
  log(`${result.subtype} after ${result.numTurns} model calls`);
  // The first answer was refused with what was wrong, as the call's error result.
  log(`refused: ${String(result.steps[0]!.toolCalls[0]!.result.content).split("\n")[1]}`);
  if (forecast) log(`${forecast.city}: ${forecast.highC} °C, rain: ${forecast.rain}`);
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();
