/**
 * Connections and watchdogs (RELIABILITY P5, P9, P10): a request timeout until the headers, an
 * idle watchdog between stream events that keep-alives do not reset, connection errors retried,
 * and no timer left behind once a turn is over.
 */
import { createBareAgent } from "skein";
import { mockServer } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { sleep } from "../support/promises.ts";
import { closeMockServers } from "../support/servers.ts";
import { collect, FAST, ofType, PROTOCOLS, type SharedOptions, serve } from "./helpers.ts";

afterEach(closeMockServers);

describe.each(PROTOCOLS)("$name: timeouts and connections", (protocol) => {
  const { make } = protocol;

  async function agentRun(turns: Parameters<typeof serve>[0], options: SharedOptions) {
    const server = await serve(turns);
    const agent = createBareAgent({ model: make(server.url, { ...FAST, ...options }) });
    const started = performance.now();
    const run = await collect(agent);
    return { server, ...run, elapsed: performance.now() - started };
  }

  // The server never answers: only the timeout can end these runs (else the test's timeout does).
  it("P5: headers that never come: timeoutMs fires, is retried, and ends as APITimeoutError", async () => {
    // Attempts counted as the client makes them: on a busy machine the second request may not
    // have reached the server before its own 100 ms ran out.
    let attempts = 0;
    const { events, result } = await agentRun([{ hang: true }], {
      timeoutMs: 100,
      maxRetries: 1,
      fetch: (input, init) => {
        attempts++;
        return fetch(input, init);
      },
    });
    const timeout = {
      name: "APITimeoutError",
      message: "No response from the model API within 100 ms.",
    };
    expect(attempts).toBe(2);
    expect(ofType(events, "retry").map((event) => event.error)).toEqual([timeout]);
    expect(result).toMatchObject({ subtype: "error_during_execution", error: timeout });
  });

  it("P5: a slow first byte within timeoutMs is fine", async () => {
    const { result } = await agentRun([{ text: "late", delayMs: 60 }], { timeoutMs: 1_000 });
    expect(result.result).toBe("late");
  });

  it("P5: a connection reset before the headers is an APIConnectionError, retried", async () => {
    const once = await agentRun([{ text: "ok", dropConnection: true, times: 1 }], {});
    expect(once.server.requests).toHaveLength(2);
    expect(ofType(once.events, "retry").map((event) => event.error.name)).toEqual([
      "APIConnectionError",
    ]);
    expect(once.result.result).toBe("ok");

    const always = await agentRun([{ dropConnection: true }], { maxRetries: 1 });
    expect(always.server.requests).toHaveLength(2);
    expect(always.result.error).toMatchObject({ name: "APIConnectionError" });
    expect(always.result.error!.status).toBeUndefined();
  });

  it("P5: a refused connection is an APIConnectionError that names the host", async () => {
    const closed = await mockServer({ script: [] });
    await closed.close();
    const agent = createBareAgent({ model: make(closed.url, { ...FAST, maxRetries: 0 }) });
    const { result } = await collect(agent);
    expect(result).toMatchObject({ subtype: "error_during_execution", isError: true });
    expect(result.error).toMatchObject({
      name: "APIConnectionError",
      message: `Could not reach the model API at ${closed.url} (ECONNREFUSED).`,
    });
  });

  it("P9: headers, then silence: the idle watchdog fires, and the turn is retried", async () => {
    const { server, events, result } = await agentRun([{ text: "ok", stallAfter: 0, times: 1 }], {
      idleTimeoutMs: 100,
    });
    expect(server.requests).toHaveLength(2);
    expect(ofType(events, "retry").map((event) => event.error)).toEqual([
      { name: "APITimeoutError", message: "The model API sent nothing for 100 ms." },
    ]);
    expect(result.result).toBe("ok");
  });

  it("P9: a stall after text fails the run with APITimeoutError and keeps the text", async () => {
    const { server, result } = await agentRun(
      [{ text: "one two three", stallAfter: protocol.afterWords(2) }],
      { idleTimeoutMs: 100 },
    );
    expect(server.requests).toHaveLength(1);
    expect(result.error).toMatchObject({
      name: "APITimeoutError",
      message: "The model API sent nothing for 100 ms.",
    });
    expect(result.messages.at(-1)).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "one two " }],
      incomplete: true,
    });
  });

  // Gaps of a fifth of the watchdog's time (room for a busy machine), adding up to more than it.
  it("P9: every payload event re-arms the watchdog: slow but steady streams finish", async () => {
    const { result, elapsed } = await agentRun(
      [{ text: "one two three four five six", gapMs: 150 }],
      { idleTimeoutMs: 750 },
    );
    expect(result.result).toBe("one two three four five six");
    expect(elapsed).toBeGreaterThan(750);
  });

  it("P9: no late timeout after a completed run, and no timer left behind", async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on("unhandledRejection", onRejection);
    try {
      const timers = () =>
        process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;
      const server = await serve(() => ({ text: "done" }));
      const model = make(server.url, { ...FAST, timeoutMs: 500, idleTimeoutMs: 500 });
      const agent = createBareAgent({ model });
      await agent.run("warm up");
      await sleep(150);
      const before = timers();
      for (let run = 0; run < 5; run++) expect((await agent.run("hi")).result).toBe("done");
      expect(timers()).toBeLessThanOrEqual(before);
      // Past both limits: a timer left armed would have fired by now.
      await sleep(600);
      expect(rejections).toEqual([]);
    } finally {
      process.off("unhandledRejection", onRejection);
    }
  });

  // The stall never ends: only the watchdog can end these runs (else the test's timeout does).
  it.each([
    ["comments", 20],
    ["pings", { everyMs: 20, kind: "ping" as const }],
  ])(
    "P10: keep-alive %s during a stall do not reset the idle watchdog",
    async (_kind, keepAlive) => {
      const { server, result } = await agentRun([{ text: "never", stallAfter: 0, keepAlive }], {
        idleTimeoutMs: 150,
        maxRetries: 0,
      });
      expect(server.requests).toHaveLength(1);
      expect(result.error).toMatchObject({
        name: "APITimeoutError",
        message: "The model API sent nothing for 150 ms.",
      });
    },
  );

  it("P10: keep-alives between slow events are ignored by the parser", async () => {
    const { result } = await agentRun(
      [{ text: "a b c", gapMs: 50, keepAlive: { everyMs: 10, kind: "ping" } }],
      { idleTimeoutMs: 500 },
    );
    expect(result).toMatchObject({ subtype: "success", result: "a b c" });
  });
});
