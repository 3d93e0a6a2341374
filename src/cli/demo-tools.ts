import { setTimeout as sleep } from "node:timers/promises";
import { defineTool } from "../index.ts";

// The demo's tools are plain JSON Schema (`defineTool`), so `skein demo` needs no Zod installed.

const stations: Record<string, { sky: string; celsius: number; latencyMs: number }> = {
  Lisbon: { sky: "sunny", celsius: 24, latencyMs: 120 },
  Oslo: { sky: "light rain", celsius: 9, latencyMs: 90 },
  Kyoto: { sky: "overcast", celsius: 17, latencyMs: 60 },
};

/** Read-only, so the calls of one reply may overlap (`isConcurrencySafe`); fails for an unknown city. */
export const getWeather = defineTool<{ city: string }, string>({
  id: "get_weather",
  description: "Current weather for a city.",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false,
  },
  isConcurrencySafe: () => true,
  async execute({ city }, { signal }) {
    const station = stations[city];
    if (!station) throw new Error(`no weather station knows "${city}"`);
    await sleep(station.latencyMs, undefined, { signal });
    return `${city}: ${station.sky}, ${station.celsius} °C`;
  },
});

const SIGHTS = ["old town on foot", "a museum and the riverside", "a day trip out of town"];

/** Reports progress: each `yield` is a `tool_update` event; the `return` is the result. */
export const planTrip = defineTool<{ city: string; days: number }, string>({
  id: "plan_trip",
  description: "Draft a day-by-day plan for a trip to one city.",
  parameters: {
    type: "object",
    properties: {
      city: { type: "string" },
      days: { type: "integer", minimum: 1, maximum: 14 },
    },
    required: ["city", "days"],
    additionalProperties: false,
  },
  async *execute({ city, days }, { signal, call }) {
    // The model sent days as "3": validation coerced it, so the handler sees a number.
    yield `days = ${JSON.stringify(days)} (a ${typeof days}); looking up sights in ${city}`;
    await sleep(150, undefined, { signal });
    yield `drafting ${days} days`;
    await sleep(150, undefined, { signal });
    const plan = Array.from({ length: days }, (_, day) => SIGHTS[day % 3]).join("; ");
    return `${received(call.input, days)}: ${plan}`;
  },
});

/**
 * What the planner got against what the model sent (`days "3" → 3 (a number)`), first in its
 * result: on a terminal the progress lines pass in the spinner, and the result's line is the one
 * that stays.
 */
function received(sent: unknown, days: number): string {
  const raw = typeof sent === "object" && sent !== null && "days" in sent ? sent.days : days;
  return raw === days ? `days = ${days}` : `days ${JSON.stringify(raw)} → ${days} (a number)`;
}
