/**
 * The published filesystem server (@modelcontextprotocol/server-filesystem, SDK 1.x) over stdio,
 * inside an agent: its tools are ordinary skein tools under mcp__fs__ names, seen by the model,
 * rules, approvals, hooks and events, with skein's validation and coercion in front.
 */
import { readFile, writeFile } from "node:fs/promises";
import { createBareAgent, query } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { expectGone, pidsWithCmdline } from "../support/processes.ts";
import { callText, contentText, resultFor } from "../support/results.ts";
import { useTempDirs } from "../support/temp.ts";
import { collect, FILESYSTEM, ofType, useMcpServers } from "./helpers.ts";

const server = useMcpServers();
const tempDir = useTempDirs("skein-mcp-fs-");

async function workspace() {
  const dir = await tempDir();
  await writeFile(`${dir}/notes.txt`, "line one\nline two\nline three\n");
  const fs = server({
    command: process.execPath,
    args: [FILESYSTEM, dir],
    stderr: "ignore",
    security: { network: "none", filesystem: "workspace" },
  });
  return { dir, fs };
}

describe("the filesystem server in an agent", () => {
  it("offers mcp__fs__ tools with the server's schemas and reads a file through one", async () => {
    const { dir, fs } = await workspace();
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "r", name: "mcp__fs__read_text_file", input: { path: `${dir}/notes.txt` } },
        ],
      },
      { text: "read it" },
    ]);
    const agent = createBareAgent({ model, mcpServers: { fs } });
    const result = await agent.run("read notes.txt");
    expect(result.subtype).toBe("success");
    expect(contentText(resultFor(result.messages, "r").content)).toContain("line two");

    const offered = model.requests[0]!.tools;
    const read = offered.find((spec) => spec.name === "mcp__fs__read_text_file");
    expect(read?.description).toMatch(/read/i);
    expect(read?.input_schema).toMatchObject({ type: "object", properties: { path: {} } });
    expect(read?.input_schema).not.toHaveProperty("$schema");
    expect(offered.map((spec) => spec.name)).toContain("mcp__fs__write_file");
    // Nothing but name, description and schema reaches the model.
    expect(Object.keys(read!).sort()).toEqual(["description", "input_schema", "name"]);
    await agent.close();
  });

  it("coerces input as for any tool, and answers invalid input without calling the server", async () => {
    const { dir, fs } = await workspace();
    const model = scriptedModel([
      {
        toolCalls: [
          {
            id: "head",
            name: "mcp__fs__read_text_file",
            input: { path: `${dir}/notes.txt`, head: "1" },
          },
          { id: "bad", name: "mcp__fs__read_text_file", input: { head: 2 } },
        ],
      },
      { text: "done" },
    ]);
    const agent = createBareAgent({ model, mcpServers: { fs } });
    const result = await agent.run("go");
    const head = result.steps[0]!.toolCalls.find((call) => call.callId === "head")!;
    expect(head.input).toEqual({ path: `${dir}/notes.txt`, head: 1 });
    expect(callText(head)).toBe("line one");
    const bad = resultFor(result.messages, "bad");
    expect(bad.is_error).toBe(true);
    expect(contentText(bad.content)).toBe(
      'Invalid input for tool "mcp__fs__read_text_file":\n- path: required field is missing\nFix these fields and call the tool again.',
    );
  });

  it("disallowedTools hides a tool from the model, and a call to it is refused", async () => {
    const { dir, fs } = await workspace();
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "w", name: "mcp__fs__write_file", input: { path: `${dir}/x.txt`, content: "x" } },
        ],
      },
      { text: "done" },
    ]);
    const agent = createBareAgent({
      model,
      mcpServers: { fs },
      disallowedTools: ["mcp__fs__write_file"],
    });
    const result = await agent.run("go");
    expect(model.requests[0]!.tools.map((spec) => spec.name)).not.toContain("mcp__fs__write_file");
    expect(resultFor(result.messages, "w").is_error).toBe(true);
    await expect(readFile(`${dir}/x.txt`)).rejects.toThrow();
  });

  it("permission rules, the approval handler and hooks see the full name", async () => {
    const { dir, fs } = await workspace();
    const model = scriptedModel([
      {
        toolCalls: [
          {
            id: "w",
            name: "mcp__fs__write_file",
            input: { path: `${dir}/new.txt`, content: "hi" },
          },
          { id: "l", name: "mcp__fs__list_directory", input: { path: dir } },
          { id: "m", name: "mcp__fs__create_directory", input: { path: `${dir}/sub` } },
        ],
      },
      { text: "done" },
    ]);
    const asked: string[] = [];
    const hooked: string[] = [];
    const agent = createBareAgent({
      model,
      mcpServers: { fs },
      permissions: { ask: ["mcp__fs__write_file"], deny: ["mcp__fs__create_directory"] },
      approval: (name) => {
        asked.push(name);
        return true;
      },
      hooks: {
        beforeToolCall: ({ name }) => {
          hooked.push(name);
        },
      },
    });
    const events = await collect(agent.stream("go"));
    const result = ofType(events, "result")[0]!;
    expect(asked).toEqual(["mcp__fs__write_file"]);
    expect(hooked).toEqual(
      expect.arrayContaining(["mcp__fs__write_file", "mcp__fs__list_directory"]),
    );
    expect(await readFile(`${dir}/new.txt`, "utf8")).toBe("hi");
    expect(contentText(resultFor(result.messages, "l").content)).toContain("notes.txt");
    const denied = resultFor(result.messages, "m");
    expect(denied.is_error).toBe(true);
    const ends = ofType(events, "tool_end").map((event) => event.name);
    expect(ends).toEqual([
      "mcp__fs__write_file",
      "mcp__fs__list_directory",
      "mcp__fs__create_directory",
    ]);
    const start = ofType(events, "tool_start").find((event) => event.callId === "l")!;
    expect(start.name).toBe("mcp__fs__list_directory");
  });

  it('the batch policy sees MCP calls as kind "tool"', async () => {
    const { dir, fs } = await workspace();
    const seen: unknown[] = [];
    const model = scriptedModel([
      { toolCalls: [{ id: "l", name: "mcp__fs__list_directory", input: { path: dir } }] },
      { text: "done" },
    ]);
    const agent = createBareAgent({
      model,
      mcpServers: { fs },
      toolBatchPolicy: {
        validate: ({ toolCalls }) => {
          seen.push(...toolCalls.map(({ name, kind }) => ({ name, kind })));
          return { allowed: true };
        },
      },
    });
    await agent.run("go");
    expect(seen).toEqual([{ name: "mcp__fs__list_directory", kind: "tool" }]);
  });

  it("tools() without an agent gives the server's own names, with metadata", async () => {
    const { fs } = await workspace();
    const tools = await fs.tools();
    const read = tools.find((tool) => tool.name === "read_text_file")!;
    expect(read.metadata).toEqual({
      mcp: { tool: "read_text_file", annotations: expect.objectContaining({ readOnlyHint: true }) },
    });
    expect(read.security).toEqual({ network: "none", filesystem: "workspace" });
    expect(read.timeoutMs).toBe(60_000);
    const named = await fs.tools("fs");
    expect(named.find((tool) => tool.name === "mcp__fs__read_text_file")?.metadata).toEqual({
      mcp: { server: "fs", tool: "read_text_file", annotations: expect.any(Object) },
    });
  });

  it("agent.close() ends the server's process; a later run starts it again", async () => {
    const { dir, fs } = await workspace();
    const model = scriptedModel([
      { toolCalls: [{ id: "a", name: "mcp__fs__list_directory", input: { path: dir } }] },
      { text: "one" },
      { toolCalls: [{ id: "b", name: "mcp__fs__list_directory", input: { path: dir } }] },
      { text: "two" },
    ]);
    const agent = createBareAgent({ model, mcpServers: { fs } });
    await agent.run("first");
    const pids = pidsWithCmdline(dir);
    expect(pids).toHaveLength(1);
    await agent.close();
    await agent.close();
    await expectGone(pids);
    const again = await agent.run("second");
    expect(contentText(resultFor(again.messages, "b").content)).toContain("notes.txt");
    const restarted = pidsWithCmdline(dir);
    expect(restarted).toHaveLength(1);
    expect(restarted[0]).not.toBe(pids[0]);
    await agent[Symbol.asyncDispose]();
    await expectGone(restarted);
  });

  it("query() closes its servers when its stream ends", async () => {
    const { dir, fs } = await workspace();
    const model = scriptedModel([
      { toolCalls: [{ id: "a", name: "mcp__fs__list_directory", input: { path: dir } }] },
      { text: "done" },
    ]);
    let pids: number[] = [];
    for await (const event of query({ prompt: "go", model, mcpServers: { fs } }))
      if (event.type === "tool_end") pids = pidsWithCmdline(dir);
    expect(pids).toHaveLength(1);
    await expectGone(pids);
  });
});
