/**
 * After a turn's stop event the provider reads the body's end before it hands over the final
 * message, so the connection goes back to the pool and the next turn reuses it, also when the
 * server ends the body a moment after the stop event: a run of several turns closes no
 * connection and does not open one per turn (each would cost a TCP handshake per model call).
 * Node's fetch opens a second connection for the second request of a fresh pool, the plain fetch
 * loop too; from then on the two are reused.
 */
import { createBareAgent } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { setDrainWindowForTesting } from "../../src/model/attempt.ts";
import { closeMockServers, closeRawServers, rawServer } from "../support/servers.ts";
import { collect, echoTool, FAST, PROTOCOLS, relay, serve } from "./helpers.ts";
import { anthropicReply, anthropicText, openaiText, writeSse } from "./raw-server.ts";

const textReply = {
  anthropic: anthropicReply(anthropicText(0, "all done")),
  openai: openaiText("all done"),
};

describe.each(PROTOCOLS)("$name: connections", ({ make, name }) => {
  const relays: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    setDrainWindowForTesting(undefined);
    await Promise.all(relays.splice(0).map((proxy) => proxy.close()));
    await Promise.all([closeMockServers(), closeRawServers()]);
  });

  it("a run of five turns closes no connection and opens at most two", async () => {
    const server = await serve([
      ...["one", "two", "three", "four"].map((text) => ({
        toolCalls: [{ name: "echo", input: { text } }],
      })),
      { text: "done" },
    ]);
    const proxy = await relay(server.url);
    relays.push(proxy);
    const agent = createBareAgent({ model: make(proxy.url, FAST), tools: [echoTool()] });
    const { result } = await collect(agent);
    expect(result).toMatchObject({ subtype: "success", result: "done" });
    expect(server.requests).toHaveLength(5);
    expect(proxy.closed).toBe(0);
    expect(proxy.opened).toBeLessThanOrEqual(2);
  });

  it("a body that ends a moment after the stop event is read to its end, not cut", async () => {
    // The wait for the end lengthened, so that a busy machine cannot make it run out: what is
    // tested is that the end is waited for, not how long.
    setDrainWindowForTesting(30_000);
    const server = await rawServer((_request, response) => {
      writeSse(response, textReply[name], false);
      // The body's end in a later write, after the stop event was read.
      setTimeout(() => response.end(), 20);
    });
    const proxy = await relay(server.url);
    relays.push(proxy);
    const agent = createBareAgent({ model: make(proxy.url, FAST) });
    for (let run = 0; run < 2; run++) {
      const { result } = await collect(agent);
      expect(result).toMatchObject({ subtype: "success", result: "all done" });
    }
    expect(server.requests).toHaveLength(2);
    expect(proxy.closed).toBe(0);
  });
});
