/**
 * What the permissions issue added to a tool's context and the run's stream: Write and Edit's
 * `recordSnapshot` as a `skein.snapshot` event, the reserved `skein.` event namespace, and the
 * path-rule spelling that names the whole workspace.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { type AgentEvent, createAgent, createBareAgent, type SDKResultMessage, tool } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { useTempDirs } from "../support/temp.ts";
import { expectErrorResult } from "./helpers.ts";

const workspace = useTempDirs("skein-perm-");

async function events(stream: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const seen: AgentEvent[] = [];
  for await (const event of stream) seen.push(event);
  return seen;
}

describe("recordSnapshot", () => {
  it("Write and Edit report each file's previous content as a skein.snapshot event", async () => {
    const cwd = await workspace();
    await writeFile(path.join(cwd, "a.txt"), "one\n");
    const agent = createAgent({
      cwd,
      approval: () => true,
      model: scriptedModel([
        { toolCalls: [{ id: "r", name: "Read", input: { file_path: "a.txt" } }] },
        {
          toolCalls: [
            {
              id: "e",
              name: "Edit",
              input: { file_path: "a.txt", old_string: "one", new_string: "two" },
            },
            { id: "w", name: "Write", input: { file_path: "b.txt", content: "new\n" } },
          ],
        },
        { text: "done" },
      ]),
    });
    const snapshots = (await events(agent.stream("edit"))).filter(
      (event) => event.type === "skein.snapshot",
    );
    expect(snapshots).toEqual([
      { type: "skein.snapshot", callId: "e", path: "a.txt", content: "one\n" },
      { type: "skein.snapshot", callId: "w", path: "b.txt", content: null },
    ]);
    expect(await readFile(path.join(cwd, "a.txt"), "utf8")).toBe("two\n");
  });

  it("a tool cannot send an event in skein's own namespace", async () => {
    const forger = tool("forger", "forges", z.object({}), async (_input, ctx) => {
      ctx.emit({ type: "skein.snapshot", path: "a.txt", content: "forged" });
      return "sent";
    });
    const agent = createBareAgent({
      tools: [forger],
      model: scriptedModel([
        { toolCalls: [{ id: "f", name: "forger", input: {} }] },
        { text: "ok" },
      ]),
    });
    const seen = await events(agent.stream("go"));
    expect(seen.some((event) => event.type === "skein.snapshot")).toBe(false);
    const result = seen.at(-1);
    if (result?.type !== "result") throw new Error("the stream must end with its result");
    expectErrorResult((result as SDKResultMessage).messages, "f", /skein's own|namespaced/);
  });
});

describe("path rules", () => {
  it('"Read(./)" covers the whole workspace', async () => {
    const cwd = await workspace();
    await writeFile(path.join(cwd, "a.txt"), "secret\n");
    const agent = createAgent({
      cwd,
      permissions: { deny: ["Read(./)"] },
      model: scriptedModel([
        { toolCalls: [{ id: "r", name: "Read", input: { file_path: "a.txt" } }] },
        { text: "done" },
      ]),
    });
    const result = await agent.run("read");
    expectErrorResult(result.messages, "r", /Read\(\.\/\)/);
    expect(JSON.stringify(result.messages)).not.toContain("secret");
  });
});

describe("assembly", () => {
  it("createAgent refuses a custom tool named like a built-in; createBareAgent takes it", () => {
    const read = tool("Read", "my own read", z.object({ file_path: z.string() }), async () => "x");
    expect(() => createAgent({ tools: [read], model: scriptedModel([]) })).toThrow(
      /two tools are named "Read" \(a name must be unique, built-in tools included\)/,
    );
    expect(() => createBareAgent({ tools: [read], model: scriptedModel([]) })).not.toThrow();
  });

  it("refuses a cwd that is not an existing directory, saying so", async () => {
    const cwd = await workspace();
    await writeFile(path.join(cwd, "file"), "");
    for (const bad of [path.join(cwd, "missing"), path.join(cwd, "file")]) {
      expect(() => createAgent({ cwd: bad, model: scriptedModel([]) })).toThrow(
        /cwd .* is not an existing directory/,
      );
    }
    expect(() => createAgent({ cwd: "", model: scriptedModel([]) })).toThrow(
      /cwd must be the path of a directory/,
    );
  });
});
