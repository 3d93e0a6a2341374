/**
 * Servers that fail: crash mid-call, hang, refuse to initialise, cannot be started or reached,
 * answer garbage. Each gives error results or an mcp_server_error event, never a crashed run;
 * a dead server is restarted once by the next call; abort and timeout reach the server as
 * notifications/cancelled.
 */
import { rm, writeFile } from "node:fs/promises";
import { AbortError, createBareAgent } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { rejectionOf, waitFor } from "../support/promises.ts";
import { contentText, resultFor } from "../support/results.ts";
import { useTempDirs } from "../support/temp.ts";
import { collect, ofType, rawFixture, readLog, sdkFixture, useMcpServers } from "./helpers.ts";

const server = useMcpServers();
const tempDir = useTempDirs("skein-mcp-faults-");
const logFile = async () => `${await tempDir()}/log.jsonl`;

describe("a server that dies", () => {
  it("a crash mid-call is an error result for every call in flight; the next call restarts it once", async () => {
    const log = await logFile();
    const fx = server(sdkFixture(log));
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "w", name: "mcp__fx__wait", input: {} },
          { id: "c", name: "mcp__fx__crash", input: {} },
        ],
      },
      { toolCalls: [{ id: "p", name: "mcp__fx__pid", input: {} }] },
      { text: "recovered" },
    ]);
    const agent = createBareAgent({ model, mcpServers: { fx }, toolConcurrency: { mode: "all" } });
    // Both calls must be at the server before it dies.
    const events = await collect(agent.stream("go"));
    const result = ofType(events, "result")[0]!;
    expect(result.subtype).toBe("success");
    expect(result.result).toBe("recovered");
    for (const id of ["w", "c"]) {
      const block = resultFor(result.messages, id);
      expect(block.is_error).toBe(true);
      expect(contentText(block.content)).toMatch(
        /^Tool "mcp__fx__(wait|crash)" failed: MCP server "fx" stopped answering during the call \(.+\)\. Its tools stay available: the next call starts it again\.$/,
      );
    }
    const starts = readLog(log).filter((entry) => entry.event === "start");
    expect(starts).toHaveLength(2);
    expect(contentText(resultFor(result.messages, "p").content)).toBe(String(starts[1]!.pid));
    // The tools stayed listed: the model's second request still offers them.
    expect(model.requests[1]!.tools.map((spec) => spec.name)).toContain("mcp__fx__pid");
  });

  it("an answer past the stdio transport's read buffer: the error result says why, the next call restarts it", async () => {
    const log = await logFile();
    const model = scriptedModel([
      { toolCalls: [{ id: "big", name: "mcp__fx__image", input: { bytes: 8 * 1024 * 1024 } }] },
      { toolCalls: [{ id: "e", name: "mcp__fx__echo", input: { text: "back" } }] },
      { text: "done" },
    ]);
    const result = await createBareAgent({
      model,
      mcpServers: { fx: server(sdkFixture(log)) },
    }).run("go");
    const block = resultFor(result.messages, "big");
    expect(block.is_error).toBe(true);
    expect(contentText(block.content)).toMatch(
      /^Tool "mcp__fx__image" failed: MCP server "fx" stopped answering during the call \(.+; the transport reported: .*exceeded maximum size.*\)\. Its tools stay available/,
    );
    expect(contentText(resultFor(result.messages, "e").content)).toBe("back");
  }, 120_000);

  it("when the restart fails, that call is an error result; a later call tries again", async () => {
    const log = await logFile();
    const marker = `${log}.refuse`;
    const fx = server(
      sdkFixture(log, { env: { MCP_FIXTURE_LOG: log, MCP_FIXTURE_REFUSE: marker } }),
    );
    const model = scriptedModel([
      { toolCalls: [{ id: "c", name: "mcp__fx__crash", input: {} }] },
      { toolCalls: [{ id: "again", name: "mcp__fx__echo", input: { text: "x" } }] },
      { toolCalls: [{ id: "later", name: "mcp__fx__echo", input: { text: "back" } }] },
      { text: "done" },
    ]);
    const agent = createBareAgent({
      model,
      mcpServers: { fx },
      hooks: {
        afterToolCall: async ({ callId }) => {
          if (callId === "c") await writeFile(marker, "");
          if (callId === "again") await rm(marker);
        },
      },
    });
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");
    const again = resultFor(result.messages, "again");
    expect(again.is_error).toBe(true);
    expect(contentText(again.content)).toMatch(
      /MCP server "fx" is not running and could not be restarted: MCP server "fx" .*could not be connected/,
    );
    expect(contentText(resultFor(result.messages, "later").content)).toBe("back");
  });

  it("a hanging call times out as an error result naming the tool and the time, and the server is told", async () => {
    const log = await logFile();
    const fx = server(rawFixture("hang", { env: { MCP_FIXTURE_LOG: log }, timeoutMs: 1_500 }));
    const model = scriptedModel([
      { toolCalls: [{ id: "h", name: "mcp__fx__answer", input: {} }] },
      { text: "moved on" },
    ]);
    const result = await createBareAgent({ model, mcpServers: { fx } }).run("go");
    expect(result.result).toBe("moved on");
    const block = resultFor(result.messages, "h");
    expect(block.is_error).toBe(true);
    expect(contentText(block.content)).toBe(
      'Tool "mcp__fx__answer" timed out after 1500 ms and was stopped. Try a smaller request, or another approach.',
    );
    const call = readLog(log).find((entry) => entry.event === "call")!;
    await waitFor(() =>
      readLog(log).some(
        (entry) => entry.event === "cancelled" && entry.requestId === call.requestId,
      )
        ? true
        : undefined,
    );
  });

  it("a wedged server: after a call times out, the next call finds it deaf to a ping and restarts it", async () => {
    const log = await logFile();
    const fx = server(rawFixture("wedge", { env: { MCP_FIXTURE_LOG: log }, timeoutMs: 4_000 }));
    const model = scriptedModel([
      { toolCalls: [{ id: "f", name: "mcp__fx__freeze", input: {} }] },
      { toolCalls: [{ id: "a", name: "mcp__fx__answer", input: {} }] },
      { text: "moved on" },
    ]);
    const result = await createBareAgent({ model, mcpServers: { fx } }).run("go");
    expect(result.result).toBe("moved on");
    expect(resultFor(result.messages, "f").is_error).toBe(true);
    const answer = resultFor(result.messages, "a");
    expect(answer.is_error, contentText(answer.content)).toBe(false);
    expect(contentText(answer.content)).toBe("called answer with {}");
    // Two processes: the wedged one took the first call, a fresh one the second.
    const calls = readLog(log).filter((entry) => entry.event === "call");
    expect(calls.map((entry) => entry.name)).toEqual(["freeze", "answer"]);
    expect(calls[0]!.pid).not.toBe(calls[1]!.pid);
  });

  it("a server that answers pings keeps its connection after a call timed out", async () => {
    const log = await logFile();
    const fx = server(rawFixture("hang", { env: { MCP_FIXTURE_LOG: log }, timeoutMs: 1_000 }));
    const model = scriptedModel([
      { toolCalls: [{ id: "h1", name: "mcp__fx__answer", input: {} }] },
      { toolCalls: [{ id: "h2", name: "mcp__fx__answer", input: {} }] },
      { text: "moved on" },
    ]);
    await createBareAgent({ model, mcpServers: { fx } }).run("go");
    const calls = readLog(log).filter((entry) => entry.event === "call");
    expect(calls).toHaveLength(2);
    expect(calls[0]!.pid).toBe(calls[1]!.pid);
  });

  it("aborting the run sends notifications/cancelled for the call in flight", async () => {
    const log = await logFile();
    const fx = server(sdkFixture(log));
    const model = scriptedModel([{ toolCalls: [{ id: "w", name: "mcp__fx__wait", input: {} }] }]);
    const controller = new AbortController();
    const agent = createBareAgent({ model, mcpServers: { fx } });
    const run = agent.run("go", { signal: controller.signal });
    const call = await waitFor(() => readLog(log).find((entry) => entry.event === "call"));
    controller.abort();
    const error = await rejectionOf(run);
    expect(error).toBeInstanceOf(AbortError);
    expect(contentText(resultFor((error as AbortError).messages, "w").content)).toMatch(
      /cancelled/,
    );
    await waitFor(() =>
      readLog(log).some(
        (entry) => entry.event === "cancelled" && entry.requestId === call.requestId,
      )
        ? true
        : undefined,
    );
  });
});

describe("a server that cannot be used", () => {
  async function runWith(options: Parameters<typeof server>[0]) {
    const bad = server(options);
    const model = scriptedModel([{ text: "went on" }, { text: "again" }]);
    const agent = createBareAgent({ model, mcpServers: { bad } });
    const first = await collect(agent.stream("one"));
    const second = await collect(agent.stream("two"));
    return { model, first, second };
  }

  it("refusing to initialise: an mcp_server_error event, the run goes on without its tools, the next run tries again", async () => {
    const { model, first, second } = await runWith(rawFixture("refuse"));
    const [event] = ofType(first, "mcp_server_error");
    expect(event).toEqual({
      type: "mcp_server_error",
      server: "bad",
      error: {
        name: "McpServerError",
        message: expect.stringContaining("this server refuses to start today"),
      },
    });
    expect(event!.error.message).toMatch(
      /^MCP server "bad" \(started with ".+"\) could not be connected: /,
    );
    expect(ofType(first, "result")[0]!.result).toBe("went on");
    expect(model.requests[0]!.tools).toEqual([]);
    expect(ofType(second, "mcp_server_error")).toHaveLength(1);
  });

  it("a command that does not exist", async () => {
    const { first } = await runWith({ command: "skein-no-such-mcp-server-command" });
    expect(ofType(first, "mcp_server_error")[0]!.error.message).toBe(
      'MCP server "bad" could not be started: the command "skein-no-such-mcp-server-command" was not found (check it is installed and on PATH).',
    );
  });

  it("a server that never answers initialize, bounded by timeoutMs", async () => {
    const { first } = await runWith(rawFixture("silent", { timeoutMs: 300 }));
    expect(ofType(first, "mcp_server_error")[0]!.error.message).toMatch(
      /^MCP server "bad" \(started with ".+"\) did not connect and list its tools within 300 ms \(timeoutMs\)\.$/,
    );
  });

  it("an HTTP server nobody listens at", async () => {
    const { first } = await runWith({ url: "http://127.0.0.1:9/mcp" });
    expect(ofType(first, "mcp_server_error")[0]!.error.message).toMatch(
      /^MCP server "bad" \(at http:\/\/127\.0\.0\.1:9\/mcp\) could not be connected: /,
    );
  });

  it("a tools/list answer that is not a tool list", async () => {
    const { first } = await runWith(rawFixture("garbage-list"));
    expect(ofType(first, "mcp_server_error")[0]!.error.message).toMatch(
      /^MCP server "bad" .*could not be connected: .*tools/,
    );
  });

  it("one failing server does not keep the others' tools from the run", async () => {
    const log = await logFile();
    const model = scriptedModel([
      { toolCalls: [{ id: "e", name: "mcp__good__echo", input: { text: "fine" } }] },
      { text: "done" },
    ]);
    const agent = createBareAgent({
      model,
      mcpServers: { bad: server(rawFixture("refuse")), good: server(sdkFixture(log)) },
    });
    const events = await collect(agent.stream("go"));
    expect(ofType(events, "mcp_server_error").map((event) => event.server)).toEqual(["bad"]);
    expect(contentText(resultFor(ofType(events, "result")[0]!.messages, "e").content)).toBe("fine");
  });
});

describe("result.mcpServers", () => {
  it("run() says which servers failed and why, as the events did, and which connected", async () => {
    const log = await logFile();
    const model = scriptedModel([{ text: "went on" }, { text: "again" }]);
    const mcpServers = {
      good: server(sdkFixture(log)),
      refuses: server(rawFixture("refuse")),
      missing: server({ command: "skein-no-such-mcp-server-command" }),
    };
    const agent = createBareAgent({ model, mcpServers });
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");
    expect(result.mcpServers).toEqual([
      { server: "good", status: "connected" },
      {
        server: "refuses",
        status: "failed",
        error: { name: "McpServerError", message: expect.stringMatching(/refuses to start today/) },
      },
      {
        server: "missing",
        status: "failed",
        error: {
          name: "McpServerError",
          message:
            'MCP server "missing" could not be started: the command "skein-no-such-mcp-server-command" was not found (check it is installed and on PATH).',
        },
      },
    ]);
    // The stream's result says the same as its events.
    const events = await collect(agent.stream("again"));
    const streamed = ofType(events, "result")[0]!.mcpServers!;
    expect(streamed.map(({ server, status }) => [server, status])).toEqual([
      ["good", "connected"],
      ["refuses", "failed"],
      ["missing", "failed"],
    ]);
    for (const event of ofType(events, "mcp_server_error"))
      expect(streamed.find((entry) => entry.server === event.server)?.error).toEqual(event.error);
  });

  it("an agent without MCP servers has no mcpServers in its result", async () => {
    const result = await createBareAgent({ model: scriptedModel([{ text: "hi" }]) }).run("go");
    expect(result).not.toHaveProperty("mcpServers");
  });
});

describe("a server that answers garbage", () => {
  it("a tools/call answer that is not a tool result is an error result naming the server", async () => {
    const model = scriptedModel([
      { toolCalls: [{ id: "g", name: "mcp__fx__answer", input: {} }] },
      { text: "done" },
    ]);
    const result = await createBareAgent({
      model,
      mcpServers: { fx: server(rawFixture("garbage-call")) },
    }).run("go");
    const block = resultFor(result.messages, "g");
    expect(block.is_error).toBe(true);
    expect(contentText(block.content)).toMatch(
      /^Tool "mcp__fx__answer" failed: MCP server "fx" answered the call with something that is not a tool result: /,
    );
  });

  it("lines on stdout that are not JSON-RPC (a banner, a log line) are skipped", async () => {
    const model = scriptedModel([
      { toolCalls: [{ id: "b", name: "mcp__fx__answer", input: { n: 1 } }] },
      { text: "done" },
    ]);
    const result = await createBareAgent({
      model,
      mcpServers: { fx: server(rawFixture("banner")) },
    }).run("go");
    expect(contentText(resultFor(result.messages, "b").content)).toBe('called answer with {"n":1}');
  });

  it("a JSON-RPC error answer is an error result naming the server", async () => {
    const log = await logFile();
    const model = scriptedModel([
      { toolCalls: [{ id: "t", name: "mcp__fx__throw", input: {} }] },
      { text: "done" },
    ]);
    const result = await createBareAgent({
      model,
      mcpServers: { fx: server(sdkFixture(log)) },
    }).run("go");
    const block = resultFor(result.messages, "t");
    expect(block.is_error).toBe(true);
    expect(contentText(block.content)).toMatch(
      /^Tool "mcp__fx__throw" failed: MCP server "fx" answered with an error: .*thrown on purpose/,
    );
  });
});
