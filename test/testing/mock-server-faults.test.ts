import { connect } from "node:net";
import { type MockProtocol, type MockTurn, mockServer } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { deferred, sleep, waitFor } from "../support/promises.ts";
import { closeMockServers, openMockServer } from "../support/servers.ts";
import { bodyFor, call, json, payloads, rawPost, readSse, readWithin } from "./mock-helpers.ts";

afterEach(closeMockServers);

function serve(...turns: MockTurn[]) {
  return openMockServer({ script: turns });
}

const protocols: MockProtocol[] = ["anthropic", "openai"];
const turn: MockTurn = {
  text: "one two three",
  toolCalls: [{ name: "read", input: { path: "a.ts" } }],
};

describe("mockServer faults: HTTP status (P1-P4, P15)", () => {
  it.each(protocols)(
    "answers status with the %s error shape, streaming or not",
    async (protocol) => {
      const server = await serve({
        status: 429,
        headers: { "retry-after": "2", "retry-after-ms": "1500" },
      });
      for (const stream of [false, true]) {
        const response = await call(server.url, protocol, { stream });
        expect(response.status).toBe(429);
        expect(response.headers.get("content-type")).toBe("application/json");
        expect(response.headers.get("retry-after")).toBe("2");
        expect(response.headers.get("retry-after-ms")).toBe("1500");
        const body = await json(response);
        if (protocol === "anthropic") {
          expect(response.headers.get("request-id")).toMatch(/^req_mock_/);
          expect(body).toEqual({
            type: "error",
            error: { type: "rate_limit_error", message: expect.any(String) },
            request_id: response.headers.get("request-id"),
          });
        } else {
          expect(response.headers.get("x-request-id")).toMatch(/^req_mock_/);
          expect(body).toEqual({
            error: {
              message: expect.any(String),
              type: "requests",
              param: null,
              code: "rate_limit_exceeded",
            },
          });
        }
      }
    },
  );

  it("maps statuses to Anthropic error types, 529 to overloaded_error", async () => {
    const expected: Record<number, string> = {
      400: "invalid_request_error",
      401: "authentication_error",
      403: "permission_error",
      404: "not_found_error",
      413: "request_too_large",
      422: "invalid_request_error",
      500: "api_error",
      503: "api_error",
      529: "overloaded_error",
    };
    for (const [status, type] of Object.entries(expected)) {
      const server = await serve({ status: Number(status) });
      const response = await call(server.url, "anthropic");
      expect(response.status).toBe(Number(status));
      expect((await json(response)).error.type).toBe(type);
    }
  });

  it("names the unknown model in a 404, in each protocol's words", async () => {
    const server = await serve({ status: 404 });
    const anthropic = await call(server.url, "anthropic", { model: "claude-nope" });
    expect((await json(anthropic)).error).toEqual({
      type: "not_found_error",
      message: "model: claude-nope",
    });
    const openai = await call(server.url, "openai", { model: "gpt-nope" });
    expect((await json(openai)).error).toEqual({
      message: "The model `gpt-nope` does not exist or you do not have access to it.",
      type: "invalid_request_error",
      param: null,
      code: "model_not_found",
    });
  });

  it("takes the error's type, message and code from the turn", async () => {
    const server = await serve({
      status: 400,
      error: {
        type: "invalid_request_error",
        message: "prompt is too long",
        code: "context_length_exceeded",
      },
      headers: { "x-should-retry": "true" },
    });
    const response = await call(server.url, "openai");
    expect(response.headers.get("x-should-retry")).toBe("true");
    expect((await json(response)).error).toEqual({
      message: "prompt is too long",
      type: "invalid_request_error",
      param: null,
      code: "context_length_exceeded",
    });
  });

  it("answers an HTML error page for html: true, and any raw body as is (P3)", async () => {
    const server = await serve(
      { status: 502, html: true },
      { rawBody: "upstream says no", contentType: "text/plain", status: 503 },
    );
    const html = await call(server.url, "anthropic", { stream: true });
    expect(html.status).toBe(502);
    expect(html.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(await html.text()).toContain("<title>502 Bad Gateway</title>");
    const raw = await call(server.url, "openai", { assistantTurns: 1 });
    expect(raw.status).toBe(503);
    expect(raw.headers.get("content-type")).toBe("text/plain");
    expect(await raw.text()).toBe("upstream says no");
  });

  it("applies a fault to the first `times` requests for its turn only, then plays the turn", async () => {
    const server = await serve(
      { text: "first" },
      { text: "second", status: 429, headers: { "retry-after": "1" }, times: 2 },
    );
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const response = await call(server.url, "anthropic", { assistantTurns: 1 });
      statuses.push(response.status);
      if (attempt === 2) {
        expect(response.headers.get("retry-after")).toBeNull();
        expect((await json(response)).content).toEqual([{ type: "text", text: "second" }]);
      } else await response.body?.cancel();
    }
    expect(statuses).toEqual([429, 429, 200]);
    // Turn 0 has attempts of its own.
    expect((await call(server.url, "anthropic")).status).toBe(200);
    expect(server.requests.map((r) => [r.turn, r.attempt])).toEqual([
      [1, 1],
      [1, 2],
      [1, 3],
      [0, 1],
    ]);
  });

  it("keeps a fault without `times` on every attempt (a persistent 503, P15)", async () => {
    const server = await serve({ status: 503 });
    for (let attempt = 0; attempt < 4; attempt += 1) {
      const response = await call(server.url, "openai", { stream: true });
      expect(response.status).toBe(503);
      await response.body?.cancel();
    }
    expect(server.requests.map((r) => r.attempt)).toEqual([1, 2, 3, 4]);
  });
});

describe("mockServer faults: connections (P5, P8, P9, P14)", () => {
  it("hang: accepts the request and never sends headers", async () => {
    const server = await serve({ hang: true });
    const abort = new AbortController();
    const settled = { done: false };
    const pending = call(server.url, "anthropic", { stream: true, signal: abort.signal }).finally(
      () => {
        settled.done = true;
      },
    );
    // Bound by events, not a timer: the request arrived, and a while later nothing has answered it.
    await waitFor(() => (server.requests.length === 1 ? true : undefined));
    await sleep(150);
    expect(settled.done).toBe(false);
    abort.abort();
    await expect(pending).rejects.toThrow(/aborted/i);
    expect(server.requests).toHaveLength(1);
  });

  it("dropConnection: resets the connection before any headers", async () => {
    const server = await serve({ dropConnection: true, times: 1 }, { text: "later" });
    const error = await call(server.url, "openai").catch((caught: Error) => caught);
    expect(error).toBeInstanceOf(TypeError);
    expect(String((error as Error & { cause?: { code?: string } }).cause?.code)).toMatch(
      /ECONNRESET|UND_ERR_SOCKET/,
    );
    expect((await call(server.url, "openai")).status).toBe(200);
  });

  it("delayMs: sends the headers late", async () => {
    const server = await serve({ text: "slow", delayMs: 120 });
    const started = Date.now();
    const response = await call(server.url, "anthropic");
    expect(Date.now() - started).toBeGreaterThanOrEqual(110);
    expect(response.status).toBe(200);
  });

  it.each(protocols)(
    "cutAfter: %s stream sends N events, then the connection is reset",
    async (protocol) => {
      const server = await serve({ ...turn, cutAfter: 4 });
      const response = await call(server.url, protocol, { stream: true });
      expect(response.status).toBe(200);
      const { events, error } = await readSse(response);
      expect(events).toHaveLength(4);
      expect(error).toBeInstanceOf(TypeError);
      expect(String((error as Error & { cause?: { code?: string } }).cause?.code)).toMatch(
        /ECONNRESET|UND_ERR_SOCKET/,
      );
    },
  );

  it("cutAfter on a non-streamed answer: half of the JSON body, then a reset", async () => {
    const server = await serve({ ...turn, cutAfter: 0 });
    const response = await call(server.url, "anthropic");
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
  });

  it("cutAfter: the reset reaches a tool_use block already started (P8)", async () => {
    const server = await serve({
      toolCalls: [{ name: "write", input: { path: "x", content: "y" } }],
      cutAfter: 5,
    });
    const { events, error } = await readSse(await call(server.url, "anthropic", { stream: true }));
    expect(payloads(events).map((d) => d.type)).toEqual([
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
    ]);
    expect(error).toBeDefined();
  });

  it("stallAfter: headers and N events arrive, then nothing, until the server closes", async () => {
    const server = await serve({ text: "never finished", stallAfter: 0 });
    const response = await call(server.url, "openai", { stream: true });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    expect(await readWithin(reader, 200)).toBe("timeout");
    await server.close();
    await expect(reader.read()).rejects.toThrow();
  });

  it("stops writing when the client aborts mid-stream", async () => {
    const server = await serve({ text: "a b c d e f g h", gapMs: 30 }, { text: "next" });
    const controller = new AbortController();
    const response = await call(server.url, "anthropic", {
      stream: true,
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    await expect(reader.read()).rejects.toThrow();
    // The server goes on serving.
    expect((await call(server.url, "anthropic", { assistantTurns: 1 })).status).toBe(200);
  });
});

describe("mockServer faults: stream content (P6, P7, P10-P13)", () => {
  it("errorEvent 0: the first Anthropic event is an overloaded error, then the stream ends (P6)", async () => {
    const server = await serve({ ...turn, errorEvent: 0 });
    const { events, error } = await readSse(await call(server.url, "anthropic", { stream: true }));
    expect(error).toBeUndefined();
    expect(events).toEqual([
      {
        event: "error",
        data: JSON.stringify({
          type: "error",
          error: { type: "overloaded_error", message: "Overloaded" },
        }),
      },
    ]);
  });

  it("errorEvent mid-stream, after text deltas (P7), in both protocols", async () => {
    const server = await serve({ ...turn, errorEvent: { after: 5, message: "busy" } });
    const anthropic = payloads(
      (await readSse(await call(server.url, "anthropic", { stream: true }))).events,
    );
    expect(anthropic.map((d) => d.type)).toEqual([
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "error",
    ]);
    expect(anthropic.at(-1).error).toEqual({ type: "overloaded_error", message: "busy" });
    const openai = payloads(
      (await readSse(await call(server.url, "openai", { stream: true }))).events,
    );
    expect(openai).toHaveLength(6);
    expect(openai.at(-1)).toEqual({
      error: { message: "busy", type: "server_error", param: null, code: null },
    });
  });

  it.each(protocols)(
    "malformed: a %s data line of invalid JSON, then the rest of the stream (P11)",
    async (protocol) => {
      const server = await serve({ text: "hi there", malformed: 2 });
      const { events } = await readSse(await call(server.url, protocol, { stream: true }));
      expect(() => JSON.parse(events[2]!.data)).toThrow(SyntaxError);
      if (protocol === "anthropic") expect(events[2]!.event).toBe("content_block_delta");
      const rest = [...events.slice(0, 2), ...events.slice(3)];
      expect(payloads(rest).at(-1)).toEqual(
        protocol === "anthropic" ? { type: "message_stop" } : "[DONE]",
      );
    },
  );

  it("malformed with given data sends it as is", async () => {
    const server = await serve({ text: "hi", malformed: { after: 1, data: "{oops" } });
    const { events } = await readSse(await call(server.url, "openai", { stream: true }));
    expect(events[1]!.data).toBe("{oops");
  });

  it.each(protocols)(
    "endAfter -1: a clean %s EOF without the final event (P12)",
    async (protocol) => {
      const server = await serve({ text: "cut short", endAfter: -1 });
      const { events, error } = await readSse(await call(server.url, protocol, { stream: true }));
      expect(error).toBeUndefined();
      const data = payloads(events);
      if (protocol === "anthropic") {
        expect(data.at(-1).type).toBe("message_delta");
        expect(data.some((d) => d.type === "message_stop")).toBe(false);
      } else {
        expect(data.at(-1).choices[0].finish_reason).toBe("stop");
        expect(data).not.toContain("[DONE]");
      }
    },
  );

  it("endAfter can also end before any finish_reason", async () => {
    const server = await serve({ text: "one two", endAfter: 2 });
    const data = payloads(
      (await readSse(await call(server.url, "openai", { stream: true }))).events,
    );
    expect(data).toHaveLength(2);
    expect(data.every((chunk) => chunk.choices[0].finish_reason === null)).toBe(true);
  });

  it("gapMs: waits between events (slow chunks)", async () => {
    const server = await serve({ text: "a b c", gapMs: 40 });
    // Measured from the request: the server's five gaps bound this from below, however the
    // client's reads happen to bunch the chunks on a loaded machine.
    const sent = performance.now();
    const response = await call(server.url, "openai", { stream: true });
    const text = await response.text();
    const elapsed = performance.now() - sent;
    // role, three words, finish, [DONE]: six events, five gaps.
    expect(text.split("\n\n").filter(Boolean)).toHaveLength(6);
    expect(elapsed).toBeGreaterThanOrEqual(5 * 40 - 5);
  });

  it("keepAlive during a stall: only comments, never counted as events (P10)", async () => {
    const server = await serve({ text: "hello", stallAfter: 1, keepAlive: 20 });
    const response = await call(server.url, "anthropic", { stream: true });
    const threeComments = deferred();
    const parsed = readSse(response, ({ comments }) => {
      if (comments.length >= 3) threeComments.resolve();
    });
    await threeComments.promise;
    await server.close();
    const { events, comments } = await parsed;
    expect(payloads(events).map((d) => d.type)).toEqual(["message_start"]);
    expect(comments.length).toBeGreaterThanOrEqual(3);
    expect(comments.every((comment) => comment.trim() === "keep-alive")).toBe(true);
  });

  it("keepAlive as Anthropic ping events during gaps", async () => {
    const server = await serve({
      text: "a b",
      gapMs: 100,
      keepAlive: { everyMs: 30, kind: "ping" },
    });
    const data = payloads(
      (await readSse(await call(server.url, "anthropic", { stream: true }))).events,
    );
    const types = data.map((d) => d.type);
    expect(types.filter((type) => type === "ping").length).toBeGreaterThan(3);
    expect(types.filter((type) => type !== "ping")).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
  });

  it("a max_tokens stop cuts the last tool call's JSON input short (P13)", async () => {
    const script: MockTurn = {
      toolCalls: [
        { name: "read", input: { path: "a.ts" } },
        { name: "write", input: { path: "a.ts", content: "a long file body" } },
      ],
      stopReason: "max_tokens",
    };
    const server = await serve(script);
    const anthropic = payloads(
      (await readSse(await call(server.url, "anthropic", { stream: true }))).events,
    );
    const inputOf = (index: number) =>
      anthropic
        .filter((d) => d.type === "content_block_delta" && d.index === index)
        .map((d) => d.delta.partial_json)
        .join("");
    expect(JSON.parse(inputOf(0))).toEqual({ path: "a.ts" });
    expect(() => JSON.parse(inputOf(1))).toThrow(SyntaxError);
    expect(inputOf(1).startsWith('{"path":"a.ts","con')).toBe(true);
    expect(anthropic.find((d) => d.type === "message_delta").delta.stop_reason).toBe("max_tokens");

    const openai = payloads(
      (await readSse(await call(server.url, "openai", { stream: true }))).events,
    );
    const args = openai
      .slice(0, -1)
      .flatMap((chunk) => chunk.choices[0]?.delta.tool_calls ?? [])
      .filter((t: any) => t.index === 1)
      .map((t: any) => t.function.arguments)
      .join("");
    expect(() => JSON.parse(args)).toThrow(SyntaxError);
    expect(openai.at(-2).choices[0].finish_reason).toBe("length");

    // Not streamed: OpenAI sends the cut string; Anthropic leaves the unparseable block out.
    const whole = await json(call(server.url, "openai"));
    expect(() => JSON.parse(whole.choices[0].message.tool_calls[1].function.arguments)).toThrow();
    const message = await json(call(server.url, "anthropic"));
    expect(message.content.map((block: any) => block.name)).toEqual(["read"]);
    expect(message.stop_reason).toBe("max_tokens");
  });

  it("chunkBytes: splits events and multi-byte characters across chunks (P11)", async () => {
    const text = "é 🙂 東";
    const server = await serve({ text, chunkBytes: 1 });
    const { chunks } = await rawPost(
      server.url,
      "anthropic",
      bodyFor("anthropic", { stream: true }),
    );
    expect(chunks.length).toBeGreaterThan(100);
    expect(chunks.every((chunk) => chunk.length === 1)).toBe(true);
    const whole = Buffer.concat(chunks).toString("utf8");
    // Decoding chunk by chunk without a streaming decoder garbles the characters.
    expect(chunks.map((chunk) => chunk.toString("utf8")).join("")).not.toBe(whole);
    const deltas = whole
      .split("\n")
      .filter((line) => line.startsWith("data: "))
      .map((line) => JSON.parse(line.slice(6)))
      .filter((d) => d.type === "content_block_delta");
    expect(deltas.map((d) => d.delta.text).join("")).toBe(text);
  });

  it("chunkBytes with fetch: the stream still parses", async () => {
    const server = await serve({ ...turn, chunkBytes: 7 });
    const { events, error } = await readSse(
      await call(server.url, "openai", { stream: true, includeUsage: true }),
    );
    expect(error).toBeUndefined();
    expect(payloads(events).at(-1)).toBe("[DONE]");
  });

  it("crlf: every SSE line ends with CRLF, and the stream still parses (P11)", async () => {
    const server = await serve({ text: "hi", crlf: true });
    const { chunks } = await rawPost(
      server.url,
      "anthropic",
      bodyFor("anthropic", { stream: true }),
    );
    const raw = Buffer.concat(chunks).toString("utf8");
    expect(raw).toContain("event: message_start\r\ndata: {");
    expect(raw.replace(/\r\n/g, "")).not.toContain("\n");
    const { events } = await readSse(await call(server.url, "anthropic", { stream: true }));
    expect(payloads(events).at(-1)).toEqual({ type: "message_stop" });
  });
});

describe("mockServer: close()", () => {
  // Left to end by themselves, the hanging and stalled connections never would: a close() that
  // waited for them fails by the test's timeout.
  it("ends hanging, stalled and idle keep-alive connections at once, and is idempotent", async () => {
    const server = await mockServer({
      script: ({ index, body }) =>
        index === 0 ? { hang: true } : body.stream ? { text: "x", stallAfter: 2 } : { text: "x" },
    });
    const hanging = call(server.url, "anthropic").catch((error: Error) => error);
    const stalled = await call(server.url, "openai", { stream: true, assistantTurns: 1 });
    const idle = await call(server.url, "anthropic", { assistantTurns: 1 });
    expect(await json(idle)).toMatchObject({ content: [{ text: "x" }] });
    // A raw socket that sent nothing at all.
    const socket = connect(Number(new URL(server.url).port), "127.0.0.1");
    await new Promise((resolve) => socket.once("connect", resolve));
    const socketClosed = new Promise((resolve) => socket.once("close", resolve));
    await Promise.all([server.close(), server.close()]);
    expect(await hanging).toBeInstanceOf(Error);
    await expect(stalled.text()).rejects.toThrow();
    await socketClosed;
    await expect(call(server.url, "anthropic")).rejects.toThrow(/fetch failed/);
  });
});
