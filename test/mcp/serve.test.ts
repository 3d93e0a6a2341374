/**
 * serveMcp(): skein tools checked with the official MCP client (v2): the list, validation and
 * coercion, error results with the texts an agent's model reads, progress, cancellation, content
 * blocks; over an in-memory pair and over stdio (the default transport), and back into an agent.
 */
import { fileURLToPath } from "node:url";
import { Client, InMemoryTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { createBareAgent, defineTool, type ToolDefinition, tool } from "skein";
import { mcpServer, serveMcp } from "skein/mcp";
import { scriptedModel } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { deferred } from "../support/promises.ts";
import { contentText, resultFor } from "../support/results.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

async function connected(tools: ToolDefinition[]): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const served = await serveMcp({ tools, transport: serverSide });
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  cleanups.push(async () => {
    await client.close();
    await served.close();
  });
  return client;
}

const add = tool(
  "add",
  "Adds two numbers.",
  z.object({ a: z.number(), b: z.number() }),
  ({ a, b }) => String(a + b),
);
const boom = tool("boom", "Throws.", z.object({}), () => {
  throw new Error("kaboom");
});
const external = defineTool({ id: "external", description: "The app answers.", execute: false });

describe("serveMcp() with the official client", () => {
  it("lists each tool's name, description and JSON Schema; execute: false tools are left out", async () => {
    const client = await connected([add, boom, external]);
    const { tools } = await client.listTools();
    expect(tools.map((served) => served.name)).toEqual(["add", "boom"]);
    expect(tools[0]).toMatchObject({
      name: "add",
      description: "Adds two numbers.",
      inputSchema: add.inputSchema,
    });
    expect(client.getServerVersion()).toMatchObject({ name: "skein" });
  });

  it("validates and coerces input as an agent does", async () => {
    const client = await connected([add]);
    expect(await client.callTool({ name: "add", arguments: { a: "2", b: 3 } })).toEqual({
      content: [{ type: "text", text: "5" }],
    });
  });

  it("invalid input, a throw and an unknown tool answer isError with the texts a model would read", async () => {
    const client = await connected([add, boom]);
    const invalid = await client.callTool({ name: "add", arguments: { a: "two" } });
    const thrown = await client.callTool({ name: "boom", arguments: {} });
    const unknown = await client.callTool({ name: "nope", arguments: {} });
    // Arguments that are not an object break the protocol itself: the MCP SDK answers -32602.
    await expect(
      client.callTool({ name: "add", arguments: [1, 2] as never }),
    ).rejects.toMatchObject({ code: -32602 });

    // The same calls inside an agent, for the texts its model reads.
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "i", name: "add", input: { a: "two" } },
          { id: "t", name: "boom", input: {} },
          { id: "u", name: "nope", input: {} },
        ],
      },
      { text: "done" },
    ]);
    const run = await createBareAgent({ model, tools: [add, boom] }).run("go");
    for (const [served, id] of [
      [invalid, "i"],
      [thrown, "t"],
      [unknown, "u"],
    ] as const) {
      expect(served).toEqual({
        content: [{ type: "text", text: contentText(resultFor(run.messages, id).content) }],
        isError: true,
      });
    }
    expect(contentText(invalid.content)).toMatch(
      /^Invalid input for tool "add":\n- a: expected number/,
    );
    expect(contentText(thrown.content)).toBe('Tool "boom" failed: kaboom');
  });

  it("a timeout is an error result naming the tool and the time; the tool's signal is aborted", async () => {
    const sawAbort = deferred<unknown>();
    const slow = tool(
      "slow",
      "Waits for its signal.",
      z.object({}),
      (_input, ctx) =>
        new Promise<string>((resolve) =>
          ctx.signal.addEventListener("abort", () => {
            sawAbort.resolve(ctx.signal.reason);
            resolve("late");
          }),
        ),
      { timeoutMs: 30 },
    );
    const client = await connected([slow]);
    const result = await client.callTool({ name: "slow", arguments: {} });
    expect(result).toEqual({
      content: [
        {
          type: "text",
          text: 'Tool "slow" timed out after 30 ms and was stopped. Try a smaller request, or another approach.',
        },
      ],
      isError: true,
    });
    expect(((await sawAbort.promise) as Error).name).toBe("ToolTimeoutError");
  });

  it("yields and ctx.update send notifications/progress: 1, 2, 3, with the update as message when it is a string", async () => {
    const stepper = tool(
      "stepper",
      "Reports progress.",
      z.object({}),
      async function* (_input, ctx) {
        yield "first";
        ctx.update({ percent: 50 });
        yield "third";
        return "stepped";
      },
    );
    const client = await connected([stepper]);
    const seen: { progress: number; message?: string }[] = [];
    const result = await client.callTool(
      { name: "stepper", arguments: {} },
      { onprogress: (progress) => seen.push(progress) },
    );
    expect(result.content).toEqual([{ type: "text", text: "stepped" }]);
    // The official client may drop a notification that arrives just before the response.
    expect(seen.length).toBeGreaterThanOrEqual(1);
    const expected = [
      { progress: 1, message: "first" },
      { progress: 2 },
      { progress: 3, message: "third" },
    ];
    for (const progress of seen) expect(progress).toEqual(expected[progress.progress - 1]);
    expect(seen.map((progress) => progress.progress)).toEqual(
      [...seen.map((progress) => progress.progress)].sort(),
    );
  });

  it("a client's notifications/cancelled aborts ctx.signal", async () => {
    const started = deferred();
    const aborted = deferred();
    const waiting = tool("waiting", "Waits.", z.object({}), (_input, ctx) => {
      started.resolve();
      return new Promise<string>((resolve) =>
        ctx.signal.addEventListener("abort", () => {
          aborted.resolve();
          resolve("stopped");
        }),
      );
    });
    const client = await connected([waiting]);
    const controller = new AbortController();
    const call = client.callTool({ name: "waiting", arguments: {} }, { signal: controller.signal });
    await started.promise;
    controller.abort();
    await expect(call).rejects.toThrow();
    await aborted.promise;
  });

  it("maps text and image blocks back to MCP content; details are not sent", async () => {
    const picture = tool("picture", "An image.", z.object({}), () => ({
      content: [
        { type: "text" as const, text: "here" },
        {
          type: "image" as const,
          source: { type: "base64" as const, media_type: "image/png", data: "AAAA" },
        },
        {
          type: "image" as const,
          source: { type: "url" as const, url: "https://example.com/a.png" },
        },
      ],
      details: { secret: "for the app only" },
    }));
    const client = await connected([picture]);
    expect(await client.callTool({ name: "picture", arguments: {} })).toEqual({
      content: [
        { type: "text", text: "here" },
        { type: "image", data: "AAAA", mimeType: "image/png" },
        { type: "text", text: "Image: https://example.com/a.png" },
      ],
    });
  });
});

describe("serveMcp() over stdio", () => {
  const fixture = fileURLToPath(new URL("./fixtures/serve-stdio.ts", import.meta.url));
  const command = { command: process.execPath, args: ["--import", "tsx", fixture] };

  it("serves on process.stdin/stdout by default, to the official client", async () => {
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(new StdioClientTransport({ ...command, stderr: "ignore" }));
    cleanups.push(() => client.close());
    expect(client.getServerVersion()).toMatchObject({ name: "skein-fixture", version: "9.9.9" });
    expect((await client.listTools()).tools.map((served) => served.name)).toEqual([
      "add",
      "whoami",
    ]);
    expect(await client.callTool({ name: "add", arguments: { a: 40, b: "2" } })).toEqual({
      content: [{ type: "text", text: "42" }],
    });
  });

  it("a skein agent uses skein tools served by serveMcp()", async () => {
    const served = mcpServer({ ...command, stderr: "ignore" });
    cleanups.push(() => served.close());
    const model = scriptedModel([
      { toolCalls: [{ id: "a", name: "mcp__sk__add", input: { a: 1, b: 2 } }] },
      { text: "done" },
    ]);
    const result = await createBareAgent({ model, mcpServers: { sk: served } }).run("go");
    expect(contentText(resultFor(result.messages, "a").content)).toBe("3");
  });
});
