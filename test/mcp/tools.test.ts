/**
 * How a server's tools become skein tools, with our fixtures: names, schemas, pagination, the
 * list fetched once per connection and again after list_changed, results mapped without loss,
 * readOnlyHint overlap, and a paused MCP call resumed by a fresh agent.
 */
import { createBareAgent } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { contentText, resultFor } from "../support/results.ts";
import { useTempDirs } from "../support/temp.ts";
import { collect, ofType, rawFixture, readLog, sdkFixture, useMcpServers } from "./helpers.ts";

const server = useMcpServers();
const tempDir = useTempDirs("skein-mcp-tools-");
const logFile = async () => `${await tempDir()}/log.jsonl`;

describe("the tool list", () => {
  it("follows nextCursor across pages", async () => {
    const tools = await server(rawFixture("paged")).tools("pg");
    expect(tools.map((tool) => tool.name)).toEqual([
      "mcp__pg__first",
      "mcp__pg__second",
      "mcp__pg__third",
    ]);
  });

  it("normalises odd names, leaves out what no model API takes, and keeps uncompilable schemas", async () => {
    const odd = server(rawFixture("odd"));
    const tools = await odd.tools("odd");
    expect(tools.map((tool) => tool.name)).toEqual([
      "mcp__odd__dotted_name_with_spaces",
      "mcp__odd__no_type",
      "mcp__odd__uncompilable",
      "mcp__odd__fine",
    ]);
    // Unprefixed, the long name fits in 64 characters (60); prefixed, it would not (70).
    expect((await odd.tools()).map((tool) => tool.name)).toContain(`long_${"x".repeat(55)}`);
    expect(tools[0]!.metadata).toEqual({ mcp: { server: "odd", tool: "dotted.name with spaces" } });
    expect(tools[1]!.inputSchema).toEqual({
      type: "object",
      properties: { n: { type: "number" } },
    });

    const model = scriptedModel([
      {
        toolCalls: [
          { id: "dot", name: "mcp__odd__dotted_name_with_spaces", input: {} },
          { id: "unc", name: "mcp__odd__uncompilable", input: { n: "not checked here" } },
          { id: "fine", name: "mcp__odd__fine", input: { n: "5" } },
          { id: "bad", name: "mcp__odd__fine", input: { n: "five" } },
        ],
      },
      { text: "done" },
    ]);
    const result = await createBareAgent({ model, mcpServers: { odd } }).run("go");
    // The server gets its own tool name back.
    expect(contentText(resultFor(result.messages, "dot").content)).toBe(
      "called dotted.name with spaces with {}",
    );
    // A schema skein cannot compile leaves the checking to the server.
    expect(contentText(resultFor(result.messages, "unc").content)).toBe(
      'called uncompilable with {"n":"not checked here"}',
    );
    expect(contentText(resultFor(result.messages, "fine").content)).toBe(
      'called fine with {"n":5}',
    );
    expect(contentText(resultFor(result.messages, "bad").content)).toMatch(
      /^Invalid input for tool "mcp__odd__fine":\n- n: expected number; received string "five"/,
    );
  });

  it("is fetched once per connection, across runs", async () => {
    const log = await logFile();
    const fx = server(sdkFixture(log));
    const model = scriptedModel([{ text: "one" }, { text: "two" }, { text: "three" }]);
    const agent = createBareAgent({ model, mcpServers: { fx } });
    await agent.run("one");
    await agent.run("two");
    await agent.run("three");
    expect(readLog(log).filter((entry) => entry.event === "list")).toHaveLength(1);
    expect(model.requests[2]!.tools.map((spec) => spec.name)).toContain("mcp__fx__echo");
  });

  it("is fetched again after list_changed, before the next model request", async () => {
    const log = await logFile();
    const fx = server(sdkFixture(log));
    const model = scriptedModel([
      { toolCalls: [{ id: "g", name: "mcp__fx__grow", input: {} }] },
      { toolCalls: [{ id: "n", name: "mcp__fx__grown", input: {} }] },
      { text: "done" },
    ]);
    const result = await createBareAgent({ model, mcpServers: { fx } }).run("go");
    expect(model.requests[0]!.tools.map((spec) => spec.name)).not.toContain("mcp__fx__grown");
    expect(model.requests[1]!.tools.map((spec) => spec.name)).toContain("mcp__fx__grown");
    expect(contentText(resultFor(result.messages, "n").content)).toBe("I am new");
    expect(readLog(log).filter((entry) => entry.event === "list")).toHaveLength(2);
    expect(fx.changed).toBe(false);
  });
});

describe("results", () => {
  it("maps every kind of content in order, noting what cannot be sent", async () => {
    const log = await logFile();
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "m", name: "mcp__fx__mixed", input: {} },
          { id: "s", name: "mcp__fx__structured", input: {} },
          { id: "f", name: "mcp__fx__fail", input: {} },
        ],
      },
      { text: "done" },
    ]);
    const events = await collect(
      createBareAgent({ model, mcpServers: { fx: server(sdkFixture(log)) } }).stream("go"),
    );
    const result = ofType(events, "result")[0]!;
    expect(resultFor(result.messages, "m").content).toEqual([
      { type: "text", text: "first" },
      {
        type: "image",
        source: { type: "base64", media_type: "image/png", data: expect.any(String) },
      },
      {
        type: "text",
        text: "[audio (audio/wav, 3 bytes) returned by the tool: not shown, audio cannot be sent to the model]",
      },
      { type: "text", text: "embedded text" },
      {
        type: "text",
        text: "[resource file:///data.bin (application/octet-stream, 4 bytes of binary content): not shown]",
      },
      { type: "text", text: "Resource link: linked.md <file:///linked.md> (text/markdown)" },
      { type: "text", text: "last" },
    ]);
    // Structured content only: the model reads its JSON; the app gets it on details.
    expect(resultFor(result.messages, "s").content).toBe('{"total":42,"items":["a","b"]}');
    const structuredEnd = ofType(events, "tool_end").find((event) => event.callId === "s")!;
    expect(structuredEnd.details).toEqual({ structuredContent: { total: 42, items: ["a", "b"] } });

    const failed = resultFor(result.messages, "f");
    expect(failed.is_error).toBe(true);
    expect(contentText(failed.content)).toBe("it went wrong");
    expect(ofType(events, "tool_end").find((event) => event.callId === "f")!.isError).toBe(true);
  });

  it("an image past the 5 MiB Read keeps to becomes a note saying what it was and why it is not shown", async () => {
    const cap = 5 * 1024 * 1024;
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "at", name: "mcp__fx__image", input: { bytes: cap } },
          { id: "past", name: "mcp__fx__image", input: { bytes: cap + 1 } },
        ],
      },
      { text: "done" },
    ]);
    const events = await collect(
      createBareAgent({ model, mcpServers: { fx: server(sdkFixture(await logFile())) } }).stream(
        "go",
      ),
    );
    const result = ofType(events, "result")[0]!;
    const kept = resultFor(result.messages, "at").content;
    expect(kept).toEqual([
      {
        type: "image",
        source: { type: "base64", media_type: "image/png", data: expect.any(String) },
      },
    ]);
    const image = Array.isArray(kept) ? kept[0] : undefined;
    const data = image?.type === "image" && image.source.type === "base64" ? image.source.data : "";
    expect(Buffer.from(data, "base64")).toHaveLength(cap);
    const note = [
      {
        type: "text",
        text: "[image (image/png, 5242881 bytes) returned by the tool: not shown, images are sent to the model up to 5 MiB (5242880 bytes)]",
      },
    ];
    expect(resultFor(result.messages, "past").content).toEqual(note);
    // The app sees the same note: the image is not kept anywhere.
    const end = ofType(events, "tool_end").find((event) => event.callId === "past")!;
    expect(end.result.content).toEqual(note);
    expect(end.isError).toBe(false);
  }, 120_000);

  it("progress with a message becomes tool_update { progress, total, message }", async () => {
    const log = await logFile();
    const model = scriptedModel([
      { toolCalls: [{ id: "p", name: "mcp__fx__progress", input: { steps: 3 } }] },
      { text: "done" },
    ]);
    const events = await collect(
      createBareAgent({ model, mcpServers: { fx: server(sdkFixture(log)) } }).stream("go"),
    );
    const updates = ofType(events, "tool_update").map((event) => event.update);
    // All three, though they arrive just ahead of the response: skein routes progress itself
    // (the v2 client's own onprogress would drop those; the everything test asks for one or more).
    expect(updates).toEqual(
      [1, 2, 3].map((n) => ({ progress: n, total: 3, message: `step ${n}` })),
    );
  });
});

describe("scheduling and pausing", () => {
  it('readOnlyHint calls overlap in mode "safe"', async () => {
    const log = await logFile();
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "a", name: "mcp__fx__barrier", input: {} },
          { id: "b", name: "mcp__fx__barrier", input: {} },
        ],
      },
      { text: "done" },
    ]);
    // The fixture answers a barrier call only once two are in flight: run one at a time, they would time out.
    const result = await createBareAgent({
      model,
      mcpServers: { fx: server(sdkFixture(log, { timeoutMs: 10_000 })) },
    }).run("go");
    expect(contentText(resultFor(result.messages, "a").content)).toBe("together");
    expect(contentText(resultFor(result.messages, "b").content)).toBe("together");
  });

  it("a paused MCP call is resumed by a fresh agent, which connects before checking it", async () => {
    const log = await logFile();
    const options = () => ({
      model: scriptedModel([
        { toolCalls: [{ id: "e", name: "mcp__fx__echo", input: { text: "approved" } }] },
        { text: "done" },
      ]),
      mcpServers: { fx: server(sdkFixture(log)) },
      permissions: { ask: ["mcp__fx__echo"] },
      approvalSecret: "mcp-test-secret-0123456789",
    });
    const paused = await createBareAgent(options()).run("go");
    expect(paused.subtype).toBe("paused");
    expect(paused.pending).toEqual([
      expect.objectContaining({ id: "e", name: "mcp__fx__echo", reason: "approval" }),
    ]);
    const second = options();
    second.model = scriptedModel([{ text: "resumed and done" }]);
    const resumed = await createBareAgent(second).resume(paused.state!, { approvals: { e: true } });
    expect(resumed.subtype).toBe("success");
    expect(contentText(resultFor(resumed.messages, "e").content)).toBe("approved");
    expect(readLog(log).filter((entry) => entry.event === "start")).toHaveLength(2);
  });
});
