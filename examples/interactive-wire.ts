// skein's own example: what the model sends and is sent, over the OpenAI protocol. The tool call's
// arguments stream in as `tool_input_delta` events (a UI can show them as they are typed), the
// agent's `modelSettings` go on the wire, every request goes through the app's own `fetch` (a
// proxy's, say), a `beforeToolCall` hook sends the search to approval (`{ ask }`), and `output`
// uses the protocol's native structured output (`response_format`). It runs offline against skein's mock server on 127.0.0.1. Run it
// with `npx tsx examples/interactive-wire.ts`.
import path from "node:path";
import { createBareAgent, openai, tool } from "skein";
import { mockServer } from "skein/testing";
import { z } from "zod";

export async function main(log: (line: string) => void = console.log): Promise<void> {
  const server = await mockServer({
    script: [
      { toolCalls: [{ name: "search", input: { query: "tide tables for Brest" } }] },
      { text: '{"place":"Brest","highTides":["05:12","17:40"]}' },
    ],
  });
  try {
    const search = tool(
      "search",
      "Searches the web",
      z.object({ query: z.string() }),
      async () => "Brest: high tides at 05:12 and 17:40.",
    );
    let fetched = 0;
    const viaProxy: typeof fetch = (input, init) => {
      fetched++;
      return fetch(input, init);
    };
    const agent = createBareAgent({
      model: openai({
        baseURL: `${server.url}/v1`,
        apiKey: "test",
        model: "gpt-4o",
        fetch: viaProxy,
      }),
      tools: [search],
      modelSettings: { temperature: 0.2, maxOutputTokens: 500 },
      output: z.object({ place: z.string(), highTides: z.array(z.string()) }),
      hooks: { beforeToolCall: () => ({ ask: "searches leave the machine" }) },
      approval: (name, _input, { reason }) => {
        log(`approve ${name}? (${reason}) yes`);
        return true;
      },
    });
    let deltas = 0;
    for await (const event of agent.stream("When are the high tides in Brest?")) {
      if (event.type === "tool_input_delta") {
        deltas++;
        log(`typing ${event.name}: ${JSON.stringify(event.partialInput)}`);
      }
      if (event.type === "result")
        log(`${event.subtype}: ${event.structuredResult?.highTides.join(" and ")}`);
    }
    const body = server.requests[0]!.body;
    log(
      `${deltas} deltas; sent temperature ${body.temperature}, response_format ${body.response_format.type}; ${fetched} requests through the app's fetch`,
    );
  } finally {
    await server.close();
  }
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();
