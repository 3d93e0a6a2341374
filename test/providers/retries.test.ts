/**
 * HTTP error answers (RELIABILITY P1-P4, P15, P16): what is retried, how long it waits, how the
 * retries show, and the typed error a run reports once it gives up.
 */
import { createBareAgent, RateLimitError } from "skein";
import type { MockTurn } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { closeMockServers } from "../support/servers.ts";
import {
  bodies,
  collect,
  FAST,
  ofType,
  PROTOCOLS,
  RETRY_SOON,
  serve,
  streamModel,
} from "./helpers.ts";

afterEach(closeMockServers);

describe.each(PROTOCOLS)("$name: retries", (protocol) => {
  const { make } = protocol;
  const rateLimitMessage =
    protocol.name === "anthropic"
      ? "429 rate_limit_error: Rate limit exceeded. Please retry later."
      : "429 requests: Rate limit reached for requests. Please try again later.";

  async function runOnce(turns: MockTurn[], maxRetries = 2) {
    const server = await serve(turns);
    const agent = createBareAgent({ model: make(server.url, { ...FAST, maxRetries }) });
    return { server, ...(await collect(agent)) };
  }

  it("P1: after maxRetries, the result's error names the request id of the last attempt and the attempt count", async () => {
    const { server, result } = await runOnce(
      [{ text: "never", status: 429, headers: { "retry-after-ms": "1" } }],
      2,
    );
    expect(server.requests).toHaveLength(3);
    expect(result.error).toEqual({
      name: "RateLimitError",
      status: 429,
      message: rateLimitMessage,
      requestId: expect.any(String),
      attempts: 3,
    });
    expect(result.error!.requestId).toMatch(/\S/);
  });

  it("P1: waits retry-after (seconds) on a 429, retries, and succeeds with one retry event", async () => {
    const { server, events, result } = await runOnce([
      { text: "made it", status: 429, headers: { "retry-after": "0.05" }, times: 1 },
    ]);
    expect(result).toMatchObject({ subtype: "success", result: "made it" });
    expect(server.requests.map((request) => request.attempt)).toEqual([1, 2]);
    expect(ofType(events, "retry")).toEqual([
      {
        type: "retry",
        attempt: 1,
        delayMs: 50,
        error: { name: "RateLimitError", message: rateLimitMessage, status: 429 },
      },
    ]);
    // The retry is announced before anything of the successful attempt.
    const types = events.map((event) => event.type);
    expect(types.indexOf("retry")).toBeLessThan(types.indexOf("text_delta"));
  });

  // A wait of 30 s would outlast the test's timeout.
  it("P1: retry-after-ms wins over retry-after", async () => {
    const { events, result } = await runOnce([
      {
        text: "ok",
        status: 429,
        headers: { "retry-after": "30", "retry-after-ms": "20" },
        times: 1,
      },
    ]);
    expect(result.subtype).toBe("success");
    expect(ofType(events, "retry").map((event) => event.delayMs)).toEqual([20]);
  });

  it("P1: after maxRetries the run fails with a RateLimitError, status 429", async () => {
    const { server, events, result } = await runOnce(
      [{ text: "never", status: 429, headers: { "retry-after-ms": "5" } }],
      2,
    );
    expect(server.requests).toHaveLength(3);
    expect(ofType(events, "retry").map((event) => [event.attempt, event.delayMs])).toEqual([
      [1, 5],
      [2, 5],
    ]);
    expect(result).toMatchObject({
      subtype: "error_during_execution",
      isError: true,
      numTurns: 1,
      error: { name: "RateLimitError", status: 429, message: rateLimitMessage },
    });
    expect(ofType(events, "text_delta")).toEqual([]);
  });

  it("P1: the thrown error carries the status, the request id and the attempt count", async () => {
    const server = await serve([{ status: 429, headers: RETRY_SOON }]);
    const error = await streamModel(make(server.url, { ...FAST, maxRetries: 2 })).catch(
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({
      name: "RateLimitError",
      status: 429,
      requestId: "req_mock_3",
      attempts: 3,
      message: rateLimitMessage,
    });
  });

  // An hour's wait would outlast the test's timeout.
  it("P2: a retry-after of an hour is not waited for; normal backoff applies", async () => {
    const { events, result } = await runOnce([
      { text: "ok", status: 429, headers: { "retry-after": "3600" }, times: 1 },
    ]);
    expect(result.subtype).toBe("success");
    const [retry] = ofType(events, "retry");
    // The first backoff step: 500 ms less up to 25 % jitter.
    expect(retry!.delayMs).toBeGreaterThanOrEqual(375);
    expect(retry!.delayMs).toBeLessThanOrEqual(500);
  });

  it("P2: an HTTP-date far in the future is capped the same way", async () => {
    const date = new Date(Date.now() + 3_600_000).toUTCString();
    const { events, result } = await runOnce([
      { text: "ok", status: 429, headers: { "retry-after": date }, times: 1 },
    ]);
    expect(result.subtype).toBe("success");
    expect(ofType(events, "retry")[0]!.delayMs).toBeLessThanOrEqual(500);
  });

  it("P3: retries 529 (overloaded) and 500, then succeeds", async () => {
    const server = await serve(({ attempt }) =>
      attempt === 1
        ? { status: 529, headers: RETRY_SOON }
        : attempt === 2
          ? { status: 500, headers: RETRY_SOON }
          : { text: "back" },
    );
    const { events, result } = await collect(createBareAgent({ model: make(server.url, FAST) }));
    expect(result.result).toBe("back");
    expect(server.requests).toHaveLength(3);
    expect(ofType(events, "retry").map((event) => [event.error.name, event.error.status])).toEqual([
      ["OverloadedError", 529],
      ["InternalServerError", 500],
    ]);
  });

  it.each([502, 503, 504])(
    "P3: retries a %i with an HTML body, whose text surfaces in the message",
    async (status) => {
      const { server, events, result } = await runOnce(
        [{ status, html: true, headers: RETRY_SOON }],
        1,
      );
      expect(server.requests).toHaveLength(2);
      expect(ofType(events, "retry")).toHaveLength(1);
      const title = {
        502: "Bad Gateway",
        503: "Service Temporarily Unavailable",
        504: "Gateway Time-out",
      }[status];
      expect(result.error).toMatchObject({
        name: "InternalServerError",
        status,
        message: `${status}: ${status} ${title} ${status} ${title} nginx`,
      });
    },
  );

  it.each([
    [400, "BadRequestError"],
    [401, "AuthenticationError"],
    [403, "PermissionDeniedError"],
    [404, "NotFoundError"],
    [413, "APIError"],
    [422, "UnprocessableEntityError"],
  ])("P4: does not retry a %i; reports %s with the provider's message", async (status, name) => {
    const message = `the provider says no (${status})`;
    const { server, events, result } = await runOnce([
      { status, error: { type: "invalid_request_error", message }, headers: RETRY_SOON },
    ]);
    expect(server.requests).toHaveLength(1);
    expect(ofType(events, "retry")).toEqual([]);
    expect(result).toMatchObject({ subtype: "error_during_execution", isError: true });
    expect(result.error).toMatchObject({
      name,
      status,
      message: `${status} invalid_request_error: ${message}`,
    });
  });

  it("P4: a 404 for an unknown model keeps the provider's own words", async () => {
    const server = await serve([{ status: 404 }]);
    const model = make(server.url, { ...FAST, model: "no-such-model" });
    const { result } = await collect(createBareAgent({ model }));
    expect(result.error).toMatchObject({
      name: "NotFoundError",
      status: 404,
      message:
        protocol.name === "anthropic"
          ? "404 not_found_error: model: no-such-model"
          : "404 invalid_request_error: The model `no-such-model` does not exist or you do not have access to it.",
    });
    // An error never poses as an answer: its words are in `error`, the result text is empty.
    expect(result.result).toBe("");
  });

  it("P4: x-should-retry: false on a 503 is not retried; x-should-retry: true on a 400 is", async () => {
    const refused = await runOnce([
      { status: 503, headers: { ...RETRY_SOON, "x-should-retry": "false" } },
    ]);
    expect(refused.server.requests).toHaveLength(1);
    expect(refused.result.error).toMatchObject({ name: "InternalServerError", status: 503 });

    const allowed = await runOnce([
      { text: "ok", status: 400, headers: { ...RETRY_SOON, "x-should-retry": "true" }, times: 1 },
    ]);
    expect(allowed.server.requests).toHaveLength(2);
    expect(allowed.result).toMatchObject({ subtype: "success", result: "ok" });
  });

  it.each([0, 2, 3])(
    "P15: a persistent 503 is tried exactly 1 + maxRetries times (maxRetries %i)",
    async (maxRetries) => {
      const { server, events, result } = await runOnce(
        [{ status: 503, headers: RETRY_SOON }],
        maxRetries,
      );
      expect(server.requests).toHaveLength(1 + maxRetries);
      expect(server.requests.map((request) => request.attempt)).toEqual(
        Array.from({ length: 1 + maxRetries }, (_, index) => index + 1),
      );
      expect(ofType(events, "retry").map((event) => event.attempt)).toEqual(
        Array.from({ length: maxRetries }, (_, index) => index + 1),
      );
      expect(result.error).toMatchObject({ name: "InternalServerError", status: 503 });
    },
  );

  it("P15: the default is 2 retries", async () => {
    const server = await serve([{ status: 503, headers: RETRY_SOON }]);
    await collect(createBareAgent({ model: make(server.url) }));
    expect(server.requests).toHaveLength(3);
  });

  it("P16: an endpoint that answers under another model name still works", async () => {
    const server = await serve([
      { model: "remapped-by-endpoint", toolCalls: [{ name: "nothing", input: {} }] },
      { model: "remapped-by-endpoint", text: "fine" },
    ]);
    const model = make(server.url, { ...FAST, model: "asked-for" });
    const { result } = await collect(createBareAgent({ model }));
    expect(result).toMatchObject({ subtype: "success", result: "fine", numTurns: 2 });
    expect(bodies(server).map((body) => body.model)).toEqual(["asked-for", "asked-for"]);
  });
});
