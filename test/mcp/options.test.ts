/**
 * mcpServer() and serveMcp() options, and the agent's mcpServers option: every mistake throws at
 * once, naming the fix (design/mcp.md "Bad input"). Nothing here starts a process.
 */
import { ConfigurationError, createAgent, createBareAgent, defineAgent, query, tool } from "skein";
import { McpServer, mcpServer, serveMcp } from "skein/mcp";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const STDIO = { command: "node", args: ["server.js"] };

function thrown(build: () => unknown): Error {
  try {
    build();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a throw");
}

describe("mcpServer() options", () => {
  it("accepts .mcp.json entries as they are, with the transport inferred", () => {
    expect(mcpServer({ command: "npx", args: ["-y", "pkg"], env: { A: "1" } })).toBeInstanceOf(
      McpServer,
    );
    expect(mcpServer({ type: "stdio", command: "npx" })).toBeInstanceOf(McpServer);
    expect(
      mcpServer({ type: "http", url: "http://127.0.0.1:3001/mcp", headers: { a: "b" } }),
    ).toBeInstanceOf(McpServer);
    expect(mcpServer({ url: new URL("https://example.com/mcp") })).toBeInstanceOf(McpServer);
  });

  it("connects nothing and keeps the declared security", () => {
    const server = mcpServer({ ...STDIO, security: { network: "none" } });
    expect(server.security).toEqual({ network: "none" });
    expect(server.changed).toBe(false);
  });

  it('refuses "sse", naming streamable HTTP or stdio instead', () => {
    const error = thrown(() => mcpServer({ type: "sse", url: "http://127.0.0.1/sse" } as never));
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error.message).toMatch(/^mcpServer\(\): the "sse" transport/);
    expect(error.message).toContain('type "http"');
    expect(error.message).toContain("command");
  });

  it("refuses both command and url, and neither", () => {
    expect(thrown(() => mcpServer({ command: "x", url: "http://a" } as never)).message).toBe(
      "mcpServer(): give either command (a server started over stdio) or url (a streamable HTTP server), not both.",
    );
    const neither = thrown(() => mcpServer({} as never));
    expect(neither.message).toMatch(/^mcpServer\(\): give command to start a server over stdio/);
    expect(neither.message).toContain("url");
  });

  it("refuses a type that contradicts command or url, and keys of the other transport", () => {
    expect(thrown(() => mcpServer({ type: "http", command: "x" } as never)).message).toContain(
      'type "http" needs url',
    );
    expect(thrown(() => mcpServer({ type: "stdio", url: "http://a" } as never)).message).toContain(
      'type "stdio" needs command',
    );
    expect(thrown(() => mcpServer({ command: "x", headers: {} } as never)).message).toBe(
      "mcpServer(): headers applies to an HTTP server (url), but this one is started with command.",
    );
    expect(thrown(() => mcpServer({ url: "http://a", args: [] } as never)).message).toContain(
      "args applies to a server started over stdio",
    );
    expect(
      thrown(() => mcpServer({ type: "websocket", url: "ws://a" } as never)).message,
    ).toContain('type must be one of "stdio", "http"');
  });

  it("rejects unknown options with the strict message", () => {
    expect(thrown(() => mcpServer({ ...STDIO, disabled: true } as never)).message).toBe(
      'mcpServer(): unknown option "disabled". Check for a typo, or upgrade the SDK if this option was added in a newer version.',
    );
  });

  it("checks each value", () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ command: "" }, /command must be a non-empty string/],
      [{ command: "x", args: "a b" }, /args must be an array of strings/],
      [{ command: "x", args: [1] }, /args must be an array of strings/],
      [{ command: "x", env: { A: 1 } }, /env must map names to string values/],
      [{ command: "x", cwd: 3 }, /cwd must be a directory path/],
      [{ command: "x", stderr: "pipe" }, /stderr must be one of "inherit", "ignore"/],
      [{ url: "ftp://a" }, /url must be an http:\/\/ or https:\/\/ address/],
      [{ url: "not a url" }, /url must be an http:\/\/ or https:\/\/ address/],
      [{ url: "http://a", headers: ["x"] }, /headers must map names to string values/],
      [{ command: "x", timeoutMs: 0 }, /timeoutMs must be a positive number/],
      [{ command: "x", timeoutMs: "5" }, /timeoutMs must be a positive number/],
      [{ command: "x", security: {} }, /security: "network" is required/],
      [{ command: "x", security: { network: "lan" } }, /security: network must be one of/],
      [
        { command: "x", security: { network: "none", disk: "no" } },
        /security: unknown option "disk"/,
      ],
    ];
    for (const [options, message] of cases) {
      const error = thrown(() => mcpServer(options as never));
      expect(error, JSON.stringify(options)).toBeInstanceOf(ConfigurationError);
      expect(error.message, JSON.stringify(options)).toMatch(/^mcpServer\(\)/);
      expect(error.message, JSON.stringify(options)).toMatch(message);
    }
    expect(thrown(() => mcpServer(undefined as never)).message).toMatch(
      /^mcpServer\(\): options must be an object/,
    );
  });

  it("tools(name) refuses a name the agent could not use", async () => {
    const server = mcpServer(STDIO);
    await expect(server.tools("my server")).rejects.toThrow(/must be 1-40 letters/);
  });
});

describe("the mcpServers agent option", () => {
  const model = scriptedModel([]);

  it("refuses a plain .mcp.json object where a handle is expected, naming mcpServer()", () => {
    for (const build of [
      () => createBareAgent({ model, mcpServers: { fs: { command: "npx" } as never } }),
      () => createAgent({ model, mcpServers: { fs: { command: "npx" } as never } }),
      () => defineAgent({ model, mcpServers: { fs: { command: "npx" } as never } }),
      () => query({ prompt: "hi", model, mcpServers: { fs: { command: "npx" } as never } }),
    ]) {
      const error = thrown(build);
      expect(error).toBeInstanceOf(ConfigurationError);
      expect(error.message).toContain("mcpServers.fs");
      expect(error.message).toContain('mcpServer() from "skein/mcp"');
    }
  });

  it("refuses a server name with odd characters", () => {
    const error = thrown(() =>
      createBareAgent({ model, mcpServers: { "my.server": mcpServer(STDIO) } }),
    );
    expect(error.message).toContain('the MCP server name "my.server" must be 1-40 letters');
    expect(() =>
      createBareAgent({ model, mcpServers: { [`s${"x".repeat(40)}`]: mcpServer(STDIO) } }),
    ).toThrow(/must be 1-40/);
  });

  it("the hardened preset demands security per server, naming the rule", () => {
    const error = thrown(() =>
      createBareAgent({ model, preset: "hardened", mcpServers: { fs: mcpServer(STDIO) } }),
    );
    expect(error.message).toMatch(/^AgentOptions: the hardened preset refuses the MCP server "fs"/);
    expect(error.message).toContain("Rule:");
    expect(() =>
      createBareAgent({
        model,
        preset: "hardened",
        mcpServers: { fs: mcpServer({ ...STDIO, security: { network: "unrestricted" } }) },
      }),
    ).toThrow(/its security.network is "unrestricted"/);
    expect(() =>
      createBareAgent({
        model,
        preset: "hardened",
        mcpServers: { fs: mcpServer({ ...STDIO, security: { network: "loopback" } }) },
      }),
    ).not.toThrow();
  });
});

describe("serveMcp() options", () => {
  const echo = tool("echo", "Echo", z.object({ text: z.string() }), ({ text }) => text);

  it("rejects mistakes before serving anything", async () => {
    await expect(serveMcp({ tools: [echo], bogus: 1 } as never)).rejects.toThrow(
      'serveMcp(): unknown option "bogus". Check for a typo, or upgrade the SDK if this option was added in a newer version.',
    );
    await expect(serveMcp({} as never)).rejects.toThrow(/^serveMcp\(\): tools must be an array/);
    await expect(serveMcp({ tools: [{ name: "x" }] } as never)).rejects.toThrow(
      /serveMcp\(\): tools\[0\] is an object, not a tool/,
    );
    await expect(serveMcp({ tools: [echo, echo] })).rejects.toThrow(/two tools are named "echo"/);
    await expect(serveMcp({ tools: [echo], name: "" })).rejects.toThrow(
      /name must be a non-empty string/,
    );
    await expect(serveMcp({ tools: [echo], transport: {} as never })).rejects.toThrow(
      /transport must be an MCP SDK server transport/,
    );
  });
});
