/**
 * The provider review's fixes, part 1: the transport (stalled and huge error bodies, the stop
 * event ending the read, non-SSE answers, redirects) and the stream decoders (hostile indexes,
 * repeated tool names, tool input that is not a JSON object). Each test failed before the fix.
 */
import { createBareAgent } from "skein";
import { afterEach, describe, expect, it } from "vitest";
import { closeMockServers, closeRawServers, rawServer } from "../support/servers.ts";
import { collect, echoTool, FAST, PROTOCOLS, serve, streamModel } from "./helpers.ts";
import {
  anthropicReply,
  anthropicText,
  anthropicTool,
  DONE,
  firstTurn,
  openaiCalls,
  openaiText,
  writeSse,
} from "./raw-server.ts";

afterEach(async () => {
  await Promise.all([closeMockServers(), closeRawServers()]);
});

/** A full text reply of each protocol, ending with its stop event. */
const textReply = {
  anthropic: anthropicReply(anthropicText(0, "all done")),
  openai: openaiText("all done"),
};

/** The path each protocol posts to, below the mock server's url. */
const callPath = { anthropic: "/v1/messages", openai: "/v1/chat/completions" };

describe.each(PROTOCOLS)("$name: review fixes, transport", (protocol) => {
  const { make, name } = protocol;

  // The body stalls for ever: only the idle watchdog can end the run (else the test's timeout does).
  it("an error status whose body stalls ends within idleTimeoutMs with a typed error", async () => {
    const server = await serve([{ status: 500, stallAfter: 0 }]);
    const agent = createBareAgent({
      model: make(server.url, { ...FAST, idleTimeoutMs: 150, maxRetries: 0 }),
    });
    const { result } = await collect(agent);
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error).toMatchObject({
      name: "InternalServerError",
      status: 500,
      attempts: 1,
    });
    expect(server.requests).toHaveLength(1);
  });

  it("a 1 MB error body is capped: the error's message stays short", async () => {
    const huge = JSON.stringify({ error: { type: "api_error", message: "x".repeat(1 << 20) } });
    const server = await serve([{ status: 500, rawBody: huge, contentType: "application/json" }]);
    const agent = createBareAgent({ model: make(server.url, { ...FAST, maxRetries: 0 }) });
    const { result } = await collect(agent);
    expect(result.error).toMatchObject({ name: "InternalServerError", status: 500 });
    expect(result.error!.message.length).toBeLessThan(1_000);
  });

  it("the stop event ends the turn though the server keeps the connection open", async () => {
    const server = await rawServer((_request, response) =>
      writeSse(response, textReply[name], false),
    );
    const model = make(server.url, { ...FAST, idleTimeoutMs: 300, maxRetries: 0 });
    // The model's own stream ends at the stop event (the engine may stop reading at the message).
    const events = await streamModel(model);
    expect(events.at(-1)).toMatchObject({ type: "message", stopReason: "end_turn" });
    const { result } = await collect(createBareAgent({ model }));
    expect(result.error).toBeUndefined();
    expect(result).toMatchObject({ subtype: "success", result: "all done" });
    expect(server.requests).toHaveLength(2);
  });

  it("a 200 answer with content-type application/json is a ProtocolError, not retried", async () => {
    const server = await serve([
      {
        rawBody: JSON.stringify({ id: "x", choices: [], content: [] }),
        contentType: "application/json",
      },
    ]);
    const agent = createBareAgent({ model: make(server.url, { ...FAST, maxRetries: 2 }) });
    const { result } = await collect(agent);
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("ProtocolError");
    expect(server.requests).toHaveLength(1);
  });

  it("a cross-origin redirect is refused: nothing, and no key, reaches the other server", async () => {
    const other = await serve([{ text: "stolen" }]);
    const redirecting = await rawServer((_request, response) => {
      response.writeHead(307, { location: `${other.url}${callPath[name]}` });
      response.end();
    });
    const agent = createBareAgent({
      model: make(redirecting.url, { ...FAST, apiKey: "secret-key", maxRetries: 0 }),
    });
    const { result } = await collect(agent);
    expect(other.requests).toHaveLength(0);
    expect(JSON.stringify(other.requests)).not.toContain("secret-key");
    expect(redirecting.requests).toHaveLength(1);
    expect(result.subtype).toBe("error_during_execution");
    expect(result.result).not.toBe("stolen");
  });

  // An index of 4,294,967,294 taken as an array length would not end (or not end well): the
  // test's timeout catches a hang.
  it("a hostile index fails fast with a ProtocolError", async () => {
    const hostile =
      name === "anthropic"
        ? anthropicReply(anthropicTool(4294967294, "c1", "echo", '{"text":"a"}'), "tool_use")
        : openaiCalls(
            [
              {
                index: 50_000_000,
                id: "c1",
                function: { name: "echo", arguments: '{"text":"a"}' },
              },
            ],
            "tool_calls",
          ) + DONE;
    const server = await rawServer((_request, response) => writeSse(response, hostile));
    const seen: string[] = [];
    const agent = createBareAgent({
      model: make(server.url, { ...FAST, maxRetries: 2 }),
      tools: [echoTool(seen)],
    });
    const { result } = await collect(agent);
    expect(result.error?.name).toBe("ProtocolError");
    expect(server.requests).toHaveLength(1);
    expect(seen).toEqual([]);
  });
});

describe("openai: review fixes, decoding", () => {
  const make = PROTOCOLS[1]!.make;

  it("a tool name repeated in every chunk is the name, not the name repeated", async () => {
    const call = (fields: Record<string, unknown>, args: string) => ({
      index: 0,
      ...fields,
      function: { name: "echo", arguments: args },
    });
    const server = await rawServer((request, response) => {
      if (!firstTurn(request)) return writeSse(response, openaiText("done"));
      writeSse(
        response,
        openaiCalls([call({ id: "c1", type: "function" }, "")]) +
          openaiCalls([call({}, '{"text":')]) +
          openaiCalls([call({}, '"hi"}')], "tool_calls") +
          DONE,
      );
    });
    const seen: string[] = [];
    const agent = createBareAgent({ model: make(server.url, FAST), tools: [echoTool(seen)] });
    const { result } = await collect(agent);
    expect(seen).toEqual(["hi"]);
    expect(result).toMatchObject({ subtype: "success", result: "done" });
    const assistant = server.requests[1]!.body.messages.find(
      (message: { role: string }) => message.role === "assistant",
    );
    expect(assistant.tool_calls.map((wire: any) => wire.function.name)).toEqual(["echo"]);
  });

  it('arguments "[1,2]" are answered as incomplete (not a JSON object), never run, sent back as {}', async () => {
    const server = await rawServer((request, response) => {
      if (!firstTurn(request)) return writeSse(response, openaiText("done"));
      writeSse(
        response,
        openaiCalls(
          [
            {
              index: 0,
              id: "c1",
              type: "function",
              function: { name: "echo", arguments: "[1,2]" },
            },
          ],
          "tool_calls",
        ) + DONE,
      );
    });
    const seen: string[] = [];
    const agent = createBareAgent({ model: make(server.url, FAST), tools: [echoTool(seen)] });
    await collect(agent);
    expect(seen).toEqual([]);
    const messages = server.requests[1]!.body.messages as any[];
    const assistant = messages.find((message) => message.role === "assistant");
    expect(assistant.tool_calls.map((wire: any) => wire.function.arguments)).toEqual(["{}"]);
    const answer = messages.find((message) => message.role === "tool");
    expect(answer).toMatchObject({ tool_call_id: "c1" });
    expect(answer.content).toMatch(/not a JSON object/);
  });
});

describe("anthropic: review fixes, decoding", () => {
  const make = PROTOCOLS[0]!.make;

  it("tool input that is an array or a string is answered as incomplete, never run, sent back as {}", async () => {
    const server = await rawServer((request, response) => {
      if (!firstTurn(request)) return writeSse(response, textReply.anthropic);
      writeSse(
        response,
        anthropicReply(
          [...anthropicTool(0, "c1", "echo", "[1,2]"), ...anthropicTool(1, "c2", "echo", '"hi"')],
          "tool_use",
        ),
      );
    });
    const seen: string[] = [];
    const agent = createBareAgent({ model: make(server.url, FAST), tools: [echoTool(seen)] });
    const { result } = await collect(agent);
    expect(result.subtype).toBe("success");
    expect(seen).toEqual([]);
    const [, assistant, answers] = server.requests[1]!.body.messages;
    expect(
      assistant.content.filter((block: any) => block.type === "tool_use").map((b: any) => b.input),
    ).toEqual([{}, {}]);
    expect(
      answers.content.map((block: any) => [block.tool_use_id, block.is_error, block.content]),
    ).toEqual([
      ["c1", true, expect.stringMatching(/not a JSON object/)],
      ["c2", true, expect.stringMatching(/not a JSON object/)],
    ]);
  });
});
