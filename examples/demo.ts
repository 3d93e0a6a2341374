/**
 * `npm start`: skein's offline demo. A scripted model (from "skein/testing") plays the model's
 * part, so it needs no network and no API key; the tools, the validation, the scheduling and the
 * events are the real thing. Every event of the run is printed as one line.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { type AgentEvent, createBareAgent, type SDKResultMessage, tool } from "skein";
import { type Script, scriptedModel } from "skein/testing";
import { z } from "zod";

// ---------------------------------------------------------------- the tools

const stations: Record<string, { sky: string; celsius: number; latencyMs: number }> = {
  Lisbon: { sky: "sunny", celsius: 24, latencyMs: 120 },
  Oslo: { sky: "light rain", celsius: 9, latencyMs: 90 },
  Kyoto: { sky: "overcast", celsius: 17, latencyMs: 60 },
};

/** Read-only, so the calls of one reply may overlap (`isConcurrencySafe`). */
const getWeather = tool(
  "get_weather",
  "Current weather for a city.",
  z.object({ city: z.string() }),
  async ({ city }, { signal }) => {
    const station = stations[city];
    if (!station) throw new Error(`no weather station knows "${city}"`);
    await sleep(station.latencyMs, undefined, { signal });
    return `${city}: ${station.sky}, ${station.celsius} °C`;
  },
  { isConcurrencySafe: () => true },
);

/** Reports progress: each `yield` is a `tool_update` event; the `return` is the result. */
const planTrip = tool(
  "plan_trip",
  "Draft a day-by-day plan for a trip to one city.",
  z.object({ city: z.string(), days: z.number().int().min(1).max(14) }),
  async function* ({ city, days }, { signal }) {
    yield `looking up sights in ${city}`;
    await sleep(80, undefined, { signal });
    yield `drafting ${days} days`;
    await sleep(80, undefined, { signal });
    const plan = Array.from({ length: days }, (_, day) => `day ${day + 1}: ${SIGHTS[day % 3]}`);
    return { content: plan.join("; "), details: { city, days } };
  },
);
const SIGHTS = ["old town on foot", "a museum and the riverside", "a day trip out of town"];

// ---------------------------------------------------------------- the scripted model

const script: Script = [
  {
    text: "I'll check the weather in all four cities at once.",
    toolCalls: ["Lisbon", "Oslo", "Kyoto", "Atlantis"].map((city) => ({
      name: "get_weather",
      input: { city },
    })),
    usage: { inputTokens: 412, outputTokens: 96 },
  },
  {
    text: "Lisbon is the warmest (Atlantis has no station). Planning three days there.",
    // "3" as a string, as models sometimes send it: the schema wants a number, so it is coerced.
    toolCalls: [{ name: "plan_trip", input: { city: "Lisbon", days: "3" } }],
    usage: { inputTokens: 655, outputTokens: 71, cacheReadInputTokens: 412 },
  },
  {
    text: "Go to Lisbon: sunny and 24 °C. Day 1, the old town on foot; day 2, a museum and the riverside; day 3, a day trip out of town.",
    usage: { inputTokens: 748, outputTokens: 58, cacheReadInputTokens: 655 },
  },
];

// ---------------------------------------------------------------- printing

const started = performance.now();
const callNumbers = new Map<string, number>();

function clock(): string {
  return `${(performance.now() - started).toFixed(1).padStart(7)} ms`;
}

function callName(event: { callId: string; name: string }): string {
  if (!callNumbers.has(event.callId)) callNumbers.set(event.callId, callNumbers.size + 1);
  return `${event.name} #${callNumbers.get(event.callId)}`;
}

function short(value: unknown, width = 70): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > width ? `${text.slice(0, width - 1)}…` : text;
}

function describe(event: AgentEvent): string {
  switch (event.type) {
    case "run_start":
      return `run_start    session ${event.sessionId.slice(0, 8)}`;
    case "turn_start":
      return `turn_start   turn ${event.turn}: asking the model`;
    case "text_delta":
      return `text         ${JSON.stringify(short(event.text))}`;
    case "message": {
      const content = typeof event.message.content === "string" ? [] : event.message.content;
      const calls = content.filter((block) => block.type === "tool_use").length;
      return `message      the model replied${calls ? ` with ${calls} tool call${calls > 1 ? "s" : ""}` : ""}`;
    }
    case "tool_start":
      return `tool_start   ${callName(event)} ${short(event.input)}`;
    case "tool_update":
      return `tool_update  ${callName(event)} ${short(event.update)}`;
    case "tool_end": {
      const outcome = event.isError ? "failed" : "done";
      return `tool_end     ${callName(event)} ${outcome} in ${event.durationMs.toFixed(1)} ms: ${short(event.result.content)}`;
    }
    case "turn_end":
      return `turn_end     turn ${event.turn}${event.toolResults.length ? `, ${event.toolResults.length} tool result(s) back to the model` : ""}`;
    case "result":
      return `result       ${event.subtype} after ${event.numTurns} turns in ${event.durationMs} ms`;
    default:
      return `${event.type.padEnd(12)} ${short(event)}`;
  }
}

// ---------------------------------------------------------------- the run

console.log(`skein offline demo: a scripted model stands in for the LLM (no network, no API key).
The tools are real code: four weather lookups overlap and one of them fails, a planner reports
progress, and the "3" the model sends as a string reaches the planner as the number 3.
`);

const agent = createBareAgent({
  model: scriptedModel(script, { modelId: "scripted-demo" }),
  systemPrompt: "You help people pick a city for a short trip.",
  tools: [getWeather, planTrip],
  toolConcurrency: { mode: "safe", maxConcurrency: 4 },
});

const prompt = "Where should I go for three days: Lisbon, Oslo, Kyoto or Atlantis?";
let result: SDKResultMessage | undefined;
for await (const event of agent.stream(prompt)) {
  console.log(`${clock()}  ${describe(event)}`);
  if (event.type === "result") result = event as SDKResultMessage;
}

if (result) {
  const { usage } = result;
  console.log(
    `\nusage: ${usage.inputTokens} input, ${usage.outputTokens} output, ${usage.cacheReadInputTokens} cache-read tokens`,
  );
  console.log(`answer: ${result.result}`);
}
