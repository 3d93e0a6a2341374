/**
 * The total deadline of one attempt (RELIABILITY contract 5, `totalTimeoutMs`): a server that
 * trickles events forever keeps the idle watchdog quiet, and still ends with a retryable
 * APITimeoutError; the deadline is cleared once the turn is over.
 */
import { anthropic, ConfigurationError, createBareAgent, openai } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { sleep } from "../support/promises.ts";
import { closeMockServers } from "../support/servers.ts";
import { collect, echoTool, ofType, PROTOCOLS, serve } from "./helpers.ts";

afterEach(closeMockServers);

// An event every 20 ms never lets 10 s of silence pass; only the 1 s deadline can end it. The
// deadline leaves a busy machine room for the attempt that is not trickling.
const TRICKLING = { idleTimeoutMs: 10_000, timeoutMs: 10_000, totalTimeoutMs: 1_000 };
const deadline = {
  name: "APITimeoutError",
  message: "The model API's reply did not complete within 1000 ms (totalTimeoutMs).",
};

describe.each(PROTOCOLS)("$name: totalTimeoutMs", (protocol) => {
  const { make } = protocol;

  it("a tool call trickling forever before anything was passed on: timed out, retried, then fine", async () => {
    const server = await serve([
      { toolCalls: [{ name: "echo", input: { text: "a" } }], trickleMs: 20, times: 1 },
      { text: "done" },
    ]);
    const seen: string[] = [];
    const agent = createBareAgent({
      model: make(server.url, { ...TRICKLING, maxRetries: 1, maxRetryDelayMs: 10 }),
      tools: [echoTool(seen)],
    });
    const { events, result } = await collect(agent);
    expect(ofType(events, "retry").map((event) => event.error)).toEqual([deadline]);
    expect(server.requests.map((request) => request.attempt)).toEqual([1, 2, 1]);
    expect(seen).toEqual(["a"]);
    expect(result).toMatchObject({ subtype: "success", result: "done" });
  });

  it("text trickling forever: the run fails with APITimeoutError, the text kept as incomplete", async () => {
    const server = await serve([{ text: "so far", trickleMs: 20 }]);
    const agent = createBareAgent({ model: make(server.url, { ...TRICKLING, maxRetries: 2 }) });
    const { events, result } = await collect(agent);
    // Text was passed on, so it is not retried (never retry and concatenate), though the error is of a retryable kind.
    expect(server.requests).toHaveLength(1);
    expect(ofType(events, "retry")).toEqual([]);
    expect(result).toMatchObject({ subtype: "error_during_execution", error: deadline });
    const last = result.messages.at(-1)!;
    expect(last.incomplete).toBe(true);
    expect((last.content as { text: string }[])[0]!.text.startsWith("so far")).toBe(true);
  });

  it("is cleared once the turn is over: no late timeout, no unhandled rejection", async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on("unhandledRejection", onRejection);
    try {
      const server = await serve([{ text: "quick" }, { text: "again" }]);
      const agent = createBareAgent({ model: make(server.url, { totalTimeoutMs: 1_000 }) });
      const first = await agent.run("hi");
      // Past the deadline: one left armed would have fired by now.
      await sleep(1_100);
      const second = await agent.run("hi");
      expect([first.result, second.result]).toEqual(["quick", "quick"]);
      expect(rejections).toEqual([]);
    } finally {
      process.off("unhandledRejection", onRejection);
    }
  });
});

describe("totalTimeoutMs is checked like the other provider options", () => {
  it.each([
    ["anthropic()", () => anthropic({ apiKey: "k", totalTimeoutMs: 0 })],
    ["openai()", () => openai({ apiKey: "k", totalTimeoutMs: 1.5 })],
  ])("%s refuses a value that is not a positive integer", (prefix, make) => {
    expect(make).toThrow(ConfigurationError);
    expect(make).toThrow(`${prefix}: totalTimeoutMs must be a positive integer, received`);
  });

  it("is accepted beside the other limits", () => {
    expect(() =>
      anthropic({ apiKey: "k", timeoutMs: 1_000, idleTimeoutMs: 1_000, totalTimeoutMs: 5_000 }),
    ).not.toThrow();
  });
});
