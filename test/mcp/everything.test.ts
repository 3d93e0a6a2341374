/**
 * The published "everything" server (@modelcontextprotocol/server-everything, SDK 1.x), over stdio
 * and over streamable HTTP on 127.0.0.1: images stay images, structured content reaches the app,
 * resources are named, progress becomes tool_update, and closing ends the HTTP session.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { createBareAgent } from "skein";
import { scriptedModel } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../support/promises.ts";
import { contentText, resultFor } from "../support/results.ts";
import { collect, EVERYTHING, ofType, useMcpServers } from "./helpers.ts";

const server = useMcpServers();
const everything = () =>
  server({ command: process.execPath, args: [EVERYTHING, "stdio"], stderr: "ignore" });

describe("the everything server over stdio", () => {
  it("maps images, structured content, resource links and embedded resources", async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "img", name: "mcp__ev__get-tiny-image", input: {} },
          { id: "st", name: "mcp__ev__get-structured-content", input: { location: "Chicago" } },
          { id: "links", name: "mcp__ev__get-resource-links", input: { count: 2 } },
          {
            id: "blob",
            name: "mcp__ev__get-resource-reference",
            input: { resourceType: "Blob", resourceId: 2 },
          },
          {
            id: "text",
            name: "mcp__ev__get-resource-reference",
            input: { resourceType: "Text", resourceId: 1 },
          },
        ],
      },
      { text: "done" },
    ]);
    const agent = createBareAgent({ model, mcpServers: { ev: everything() } });
    const events = await collect(agent.stream("go"));
    const result = ofType(events, "result")[0]!;

    const image = resultFor(result.messages, "img");
    expect(image.content).toEqual([
      { type: "text", text: "Here's the image you requested:" },
      {
        type: "image",
        source: { type: "base64", media_type: "image/png", data: expect.any(String) },
      },
      { type: "text", text: "The image above is the MCP logo." },
    ]);
    // The model's next request carries the image block as is.
    const sent = model.requests[1]!.messages.at(-1)!.content as { content?: unknown }[];
    expect(JSON.stringify(sent)).toContain('"media_type":"image/png"');

    const structured = ofType(events, "tool_end").find((event) => event.callId === "st")!;
    expect(structured.details).toEqual({
      structuredContent: {
        temperature: expect.any(Number),
        conditions: expect.any(String),
        humidity: expect.any(Number),
      },
    });
    const step = result.steps[0]!.toolCalls.find((call) => call.callId === "st")!;
    expect(step.result.details).toEqual(structured.details);
    // The model reads the server's own content, not the details.
    expect(contentText(resultFor(result.messages, "st").content)).toContain("temperature");

    const links = contentText(resultFor(result.messages, "links").content);
    expect(links).toMatch(/Resource link: .+ <demo:\/\/resource\/dynamic\/\w+\/1>/);
    expect(links).toMatch(/<demo:\/\/resource\/dynamic\/\w+\/2>/);

    const blob = contentText(resultFor(result.messages, "blob").content);
    expect(blob).toMatch(
      /\[resource demo:\/\/resource\/dynamic\/blob\/2 \(text\/plain, \d+ bytes of binary content\): not shown\]/,
    );
    expect(contentText(resultFor(result.messages, "text").content)).toContain("Resource 1");
  });

  it("turns progress notifications into tool_update events, in order", async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          {
            id: "p",
            name: "mcp__ev__trigger-long-running-operation",
            input: { duration: 0.06, steps: 3 },
          },
        ],
      },
      { text: "done" },
    ]);
    const agent = createBareAgent({ model, mcpServers: { ev: everything() } });
    const events = await collect(agent.stream("go"));
    const updates = ofType(events, "tool_update").map(
      (event) => event.update as { progress: number },
    );
    // The v2 client may drop the last notification when it arrives just before the response.
    expect(updates.length).toBeGreaterThanOrEqual(1);
    for (const [index, update] of updates.entries()) {
      expect(update).toMatchObject({ total: 3 });
      if (index > 0) expect(update.progress).toBeGreaterThan(updates[index - 1]!.progress);
    }
    const step = ofType(events, "result")[0]!.steps[0]!.toolCalls[0]!;
    expect(step.preliminaryResults).toEqual(updates);
    expect(step.isError).toBe(false);
  });

  it("carries annotations in metadata, and grants nothing from them", async () => {
    const tools = await everything().tools("ev");
    const echo = tools.find((tool) => tool.name === "mcp__ev__echo")!;
    expect(echo.metadata).toEqual({
      mcp: {
        server: "ev",
        tool: "echo",
        annotations: {
          readOnlyHint: true,
          destructiveHint: false,
          idempotentHint: true,
          openWorldHint: false,
        },
      },
    });
    // Annotations never grant anything: no security is invented from them.
    expect(echo.security).toBeUndefined();
    expect(echo.idempotent).toBeUndefined();
  });
});

describe("the everything server over streamable HTTP", () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill("SIGKILL");
    child = undefined;
  });

  async function startHttp(port?: number): Promise<{ url: string; output: () => string }> {
    port ??= await freePort();
    let output = "";
    child = spawn(process.execPath, [EVERYTHING, "streamableHttp"], {
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.on("data", (chunk) => (output += chunk));
    child.stderr!.on("data", (chunk) => (output += chunk));
    await waitFor(() => (output.includes(`listening on port ${port}`) ? true : undefined));
    return { url: `http://127.0.0.1:${port}/mcp`, output: () => output };
  }

  it("calls a tool through a session, and close() ends the session on the server", async () => {
    const http = await startHttp();
    const ev = server({ url: http.url, security: { network: "loopback" } });
    const model = scriptedModel([
      { toolCalls: [{ id: "e", name: "mcp__ev__echo", input: { message: "over http" } }] },
      { text: "done" },
    ]);
    const agent = createBareAgent({ model, preset: "hardened", mcpServers: { ev } });
    const result = await agent.run("go");
    expect(contentText(resultFor(result.messages, "e").content)).toBe("Echo: over http");
    expect(http.output()).toMatch(/Session initialized with ID/);
    await agent.close();
    await waitFor(() =>
      /Received session termination request/.test(http.output()) ? true : undefined,
    );
  });

  it("a session that fails during a call is an error result; the next call connects again", async () => {
    const first = await startHttp();
    const port = Number(new URL(first.url).port);
    const model = scriptedModel([
      { toolCalls: [{ id: "before", name: "mcp__ev__echo", input: { message: "one" } }] },
      { toolCalls: [{ id: "lost", name: "mcp__ev__echo", input: { message: "two" } }] },
      { toolCalls: [{ id: "after", name: "mcp__ev__echo", input: { message: "three" } }] },
      { text: "done" },
    ]);
    const agent = createBareAgent({
      model,
      mcpServers: { ev: server({ url: first.url }) },
      hooks: {
        // The server restarts between the first and second calls: the session it knew is gone.
        afterToolCall: async ({ callId }) => {
          if (callId !== "before") return;
          const old = child!;
          const gone = new Promise((resolve) => old.once("close", resolve));
          old.kill("SIGKILL");
          await gone;
          await startHttp(port);
        },
      },
    });
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");
    expect(contentText(resultFor(result.messages, "before").content)).toBe("Echo: one");
    const lost = resultFor(result.messages, "lost");
    expect(lost.is_error).toBe(true);
    expect(contentText(lost.content)).toMatch(
      /^Tool "mcp__ev__echo" failed: MCP server "ev": its HTTP session failed during the call \(.+\)\. Its tools stay available: the next call connects again\.$/,
    );
    expect(contentText(resultFor(result.messages, "after").content)).toBe("Echo: three");
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
