/**
 * Aborting over HTTP (RELIABILITY P14): during a retry's wait no further attempt is made;
 * mid-stream the connection is closed at once; before the request nothing is sent; and one
 * AbortController reused across runs gathers no listeners.
 */
import { getEventListeners } from "node:events";
import { AbortError, createBareAgent } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { sleep } from "../support/promises.ts";
import { closeMockServers } from "../support/servers.ts";
import { echoTool, FAST, PROTOCOLS, relay, serve, streamModel } from "./helpers.ts";

const relays: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(relays.splice(0).map((open) => open.close()));
  await closeMockServers();
});

// Runs given no signal share one inside skein; Node warns once per signal, so this runs once,
// first in the file, before any other run without a signal.
it("P14: runs without a signal add no listener to a shared one (no MaxListeners warning)", async () => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.name);
  process.on("warning", onWarning);
  try {
    const server = await serve(() => ({ text: "plain" }));
    const agent = createBareAgent({ model: PROTOCOLS[0]!.make(server.url, FAST) });
    for (let run = 0; run < 12; run++) await agent.run("hi");
    await sleep(10);
    expect(warnings).toEqual([]);
  } finally {
    process.off("warning", onWarning);
  }
});

describe.each(PROTOCOLS)("$name: abort", (protocol) => {
  const { make } = protocol;

  // A retry wait of ten minutes: only the abort can end this run (else the test's timeout does).
  it("P14a: an abort during the retry wait makes no further attempt", async () => {
    const server = await serve([{ status: 503, headers: { "retry-after-ms": "600000" } }]);
    const model = make(server.url, { ...FAST, maxRetryDelayMs: 600_000 });
    const controller = new AbortController();
    const run = (async () => {
      for await (const event of createBareAgent({ model }).stream("hi", {
        signal: controller.signal,
      })) {
        if (event.type === "retry") controller.abort();
      }
    })();
    await expect(run).rejects.toBeInstanceOf(AbortError);
    await sleep(100);
    expect(server.requests).toHaveLength(1);
  });

  // The stream stalls after its first word, for ever: only the abort can end the run and close
  // the connection (else the idle watchdog fails the run with another error, or the test times out).
  it("P14b: an abort mid-stream rejects at once and closes the HTTP connection", async () => {
    const server = await serve([
      { text: "a b c d e f g h i j", stallAfter: protocol.afterWords(1) },
    ]);
    const proxy = await relay(server.url);
    relays.push(proxy);
    const closed = proxy.whenClosed();
    const controller = new AbortController();
    const agent = createBareAgent({ model: make(proxy.url, FAST) });
    const error = await (async () => {
      for await (const event of agent.stream("hi", { signal: controller.signal })) {
        if (event.type === "text_delta") controller.abort();
      }
    })().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(AbortError);
    await closed;
    expect(proxy.closed).toBeGreaterThanOrEqual(1);
    await sleep(50);
    expect(server.requests).toHaveLength(1);
  });

  it("P14b: the aborted run's transcript keeps the partial text, marked incomplete", async () => {
    const server = await serve([{ text: "a b c d e f", gapMs: 100 }]);
    const controller = new AbortController();
    const agent = createBareAgent({ model: make(server.url, FAST) });
    const error = await (async () => {
      for await (const event of agent.stream("hi", { signal: controller.signal })) {
        if (event.type === "text_delta") controller.abort();
      }
    })().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(AbortError);
    expect((error as AbortError).messages).toEqual([
      { role: "user", content: "hi" },
      { role: "assistant", content: [{ type: "text", text: "a " }], incomplete: true },
    ]);
  });

  it("P14c: an abort before the request sends nothing", async () => {
    const server = await serve([{ text: "never" }]);
    const controller = new AbortController();
    controller.abort();
    const agent = createBareAgent({ model: make(server.url, FAST) });
    await expect(agent.run("hi", { signal: controller.signal })).rejects.toMatchObject({
      name: "AbortError",
    });
    await sleep(50);
    expect(server.requests).toHaveLength(0);
  });

  it("P14c: model.stream() with an already-aborted signal sends nothing", async () => {
    const server = await serve([{ text: "never" }]);
    const controller = new AbortController();
    controller.abort(new Error("stop"));
    const outcome = await streamModel(make(server.url, FAST), {}, controller.signal).then(
      () => "resolved",
      (error: unknown) => (error as Error).message,
    );
    expect(outcome).toBe("stop");
    expect(server.requests).toHaveLength(0);
  });

  it("P14: one AbortController reused across runs gathers no abort listeners", async () => {
    const server = await serve(({ index }) =>
      index === 0 ? { toolCalls: [{ name: "echo", input: { text: "x" } }] } : { text: "done" },
    );
    const agent = createBareAgent({ model: make(server.url, FAST), tools: [echoTool()] });
    const controller = new AbortController();
    const counts: number[] = [];
    for (let run = 0; run < 12; run++) {
      const result = await agent.run("hi", { signal: controller.signal });
      expect(result.result).toBe("done");
      counts.push(getEventListeners(controller.signal, "abort").length);
    }
    expect(counts).toEqual(Array.from({ length: 12 }, () => 0));
  });

  it("P14: a reused signal stays clean through stream()", async () => {
    const server = await serve(() => ({ text: "plain" }));
    const agent = createBareAgent({ model: make(server.url, FAST) });
    const controller = new AbortController();
    const counts: number[] = [];
    for (let run = 0; run < 12; run++) {
      for await (const _event of agent.stream("hi", { signal: controller.signal })) {
        // drain
      }
      counts.push(getEventListeners(controller.signal, "abort").length);
    }
    expect(counts).toEqual(Array.from({ length: 12 }, () => 0));
  });
});
