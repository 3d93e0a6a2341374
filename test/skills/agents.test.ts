// loadAgents: Claude-format agent files as definitions for agentTool, delegateTool and handoffs,
// narrowed like agents defined in code.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  agentTool,
  ConfigurationError,
  createAgent,
  createBareAgent,
  createMailbox,
  delegateTool,
  loadAgents,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { useTempDirs } from "../support/temp.ts";
import { resultOf } from "./helpers.ts";

const tempDir = useTempDirs("skein-agent-files-");

/** Writes `.claude/agents/<file>` files under a new workspace and returns it. */
async function agentsIn(files: Record<string, string>): Promise<string> {
  const workspace = await tempDir();
  const dir = path.join(workspace, ".claude", "agents");
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return workspace;
}

const REVIEWER = `---
name: code-reviewer
description: Reviews code for bugs. Use after a change.
tools: Read, Grep
model: inherit
color: blue
---
You are a careful reviewer. Report bugs only.
`;

describe("an agent file with tools: Read, Grep", () => {
  it("sees Read and Grep only, and cannot Write", async () => {
    const workspace = await agentsIn({ "code-reviewer.md": REVIEWER });
    const [reviewer] = loadAgents(".claude/agents", { cwd: workspace });
    // The file's model is inherit: the child runs on the parent's model, so one script serves
    // both, turn by turn (parent, child, child, parent).
    const shared = scriptedModel([
      { toolCalls: [{ id: "p", name: "code-reviewer", input: { prompt: "Review." } }] },
      {
        toolCalls: [
          { id: "w", name: "Write", input: { file_path: "planted.txt", content: "x" } },
          { id: "r", name: "Read", input: { file_path: ".claude/agents/code-reviewer.md" } },
        ],
      },
      { text: "no bugs" },
      { text: "reviewed" },
    ]);
    const asked: string[] = [];
    const result = await createAgent({
      model: shared,
      cwd: workspace,
      tools: [agentTool(reviewer!)],
      approval: async (name) => {
        asked.push(name);
        return true;
      },
    }).run("Review my change.");
    expect(result.subtype).toBe("success");
    const parentSpec = shared.requests[0]!.tools.find((spec) => spec.name === "code-reviewer");
    expect(parentSpec?.description).toBe("Reviews code for bugs. Use after a change.");
    const childRequest = shared.requests[1]!;
    expect(childRequest.system).toContain("You are a careful reviewer. Report bugs only.");
    expect(childRequest.tools.map((spec) => spec.name)).toEqual(["Read", "Grep"]);
    const childTurn = shared.requests[2]!.messages.at(-1)!;
    const texts = JSON.stringify(childTurn.content);
    expect(texts).toMatch(/Write/);
    expect(texts).toContain("You are a careful reviewer");
    expect(existsSync(path.join(workspace, "planted.txt"))).toBe(false);
    expect(asked).toEqual([]);
  });
});

describe("loadAgents", () => {
  it("tools absent: every built-in tool, never the parent's custom tools", async () => {
    const workspace = await agentsIn({
      "helper.md": "---\nname: helper\ndescription: Helps.\n---\nHelp.\n",
    });
    const [helper] = loadAgents(path.join(workspace, ".claude", "agents"), { cwd: workspace });
    const custom = tool("deploy", "Deploys.", z.object({}), () => "deployed");
    const model = scriptedModel([
      { toolCalls: [{ id: "p", name: "helper", input: { prompt: "Go." } }] },
      { text: "child" },
      { text: "parent" },
    ]);
    await createBareAgent({ model, cwd: workspace, tools: [custom, agentTool(helper!)] }).run("go");
    const names = model.requests[1]!.tools.map((spec) => spec.name);
    expect(names).toContain("Read");
    expect(names).toContain("Bash");
    expect(names).not.toContain("deploy");
  });

  it("model: inherit (or none) runs the child on the parent's model; a model id is its own", async () => {
    const workspace = await agentsIn({
      "a.md": "---\nname: inheritor\ndescription: Inherits.\n---\nA.\n",
      "b.md": "---\nname: pinned\ndescription: Pinned.\nmodel: claude-opus-4-1\n---\nB.\n",
    });
    const [inheritor, pinned] = loadAgents([".claude/agents"], { cwd: workspace });
    expect(inheritor!.model).toBeUndefined();
    expect(pinned!.model).toBe("claude-opus-4-1");
    const model = scriptedModel([
      { toolCalls: [{ id: "p", name: "inheritor", input: { prompt: "Go." } }] },
      { text: "from the child" },
      { text: "parent done" },
    ]);
    const result = await createBareAgent({
      model,
      cwd: workspace,
      tools: [agentTool(inheritor!)],
    }).run("go");
    expect(result.subtype).toBe("success");
    expect(resultOf(result, "p").text).toBe("from the child");
    expect(model.requests).toHaveLength(3);
  });

  it("works in delegateTool, and the parent's rules narrow it as any child", async () => {
    const workspace = await agentsIn({
      "reader.md": "---\nname: reader\ndescription: Reads.\ntools: Read\n---\nRead.\n",
    });
    writeFileSync(path.join(workspace, "secret.txt"), "s3cret");
    const agents = loadAgents(".claude/agents", { cwd: workspace });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "d", name: "delegate", input: { agent: "reader", prompt: "Read secret.txt" } },
        ],
      },
      { toolCalls: [{ id: "r", name: "Read", input: { file_path: "secret.txt" } }] },
      { text: "could not" },
      { text: "done" },
    ]);
    const result = await createBareAgent({
      model,
      cwd: workspace,
      tools: [delegateTool({ reader: agents[0]! })],
      permissions: { deny: ["Read(secret.txt)"] },
    }).run("go");
    expect(result.subtype).toBe("success");
    const childResult = JSON.stringify(model.requests[2]!.messages.at(-1)!.content);
    expect(childResult).toContain("Permission denied");
    expect(childResult).not.toContain("s3cret");
  });

  it("a handoff: the file's agent claims its task by its name, narrowed by the sender's rules", async () => {
    const workspace = await agentsIn({
      "reader.md": "---\nname: reader\ndescription: Reads.\ntools: Read, Write\n---\nRead.\n",
    });
    const [reader] = loadAgents(".claude/agents", { cwd: workspace });
    const mailbox = createMailbox();
    const sender = createBareAgent({
      model: scriptedModel([
        {
          toolCalls: [
            {
              id: "h",
              name: "delegate",
              input: { agent: "reader", prompt: "Write x.txt", mode: "handoff" },
            },
          ],
        },
        { text: "handed off" },
      ]),
      cwd: workspace,
      tools: [delegateTool({ reader: reader! }, { mailbox })],
      permissions: { deny: ["Write"] },
    });
    expect((await sender.run("go")).subtype).toBe("success");
    const model = scriptedModel([{ text: "done" }]);
    const receiver = createAgent({ ...reader!, model });
    const result = await receiver.runNext(mailbox);
    expect(result?.subtype).toBe("success");
    expect(model.requests[0]!.tools.map((spec) => spec.name)).toEqual(["Read"]);
  });

  it("agentTool options still apply, the file's description being the default", async () => {
    const workspace = await agentsIn({ "code-reviewer.md": REVIEWER });
    const [reviewer] = loadAgents(".claude/agents", { cwd: workspace });
    const renamed = agentTool(reviewer!, { name: "review", description: "Custom." });
    expect(renamed.name).toBe("review");
    expect(renamed.description).toBe("Custom.");
    expect(agentTool(reviewer!, { maxTurns: 2 }).description).toBe(
      "Reviews code for bugs. Use after a change.",
    );
  });
});

describe("loadAgents errors name the file and the line", () => {
  async function loadError(text: string): Promise<string> {
    const workspace = await agentsIn({ "bad.md": text });
    try {
      loadAgents(".claude/agents", { cwd: workspace });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      const message = (error as Error).message;
      expect(message).toContain(path.join(workspace, ".claude", "agents", "bad.md"));
      return message;
    }
    throw new Error("no error");
  }

  it("a tool name that names nothing: the closest one", async () => {
    const message = await loadError("---\nname: a\ndescription: d\ntools: Read, Wirte\n---\n");
    expect(message).toMatch(/bad\.md:4: "tools" names the tool "Wirte".*did you mean "Write"\?/);
    expect(await loadError("---\nname: a\ndescription: d\ntools: WebFetch\n---\n")).toMatch(
      /"WebFetch", which no agent loaded from a file has/,
    );
  });

  it("no name, no description, a bad name, a model alias, bad YAML", async () => {
    expect(await loadError("---\ndescription: d\n---\n")).toMatch(/no "name"/);
    expect(await loadError("---\nname: a\n---\n")).toMatch(/no "description"/);
    expect(await loadError("---\nname: a b\ndescription: d\n---\n")).toMatch(
      /bad\.md:2: "name" must be/,
    );
    expect(await loadError("---\nname: a\ndescription: d\nmodel: sonnet\n---\n")).toMatch(
      /bad\.md:4: "model: sonnet" is an alias/,
    );
    expect(await loadError("---\nname: a\ndescription: d: e\n---\n")).toMatch(
      /bad\.md:3: invalid YAML/,
    );
  });

  it("two files with one name, a missing path, an empty folder", async () => {
    const workspace = await agentsIn({
      "one.md": "---\nname: same\ndescription: d\n---\n",
      "two.md": "---\nname: same\ndescription: d\n---\n",
    });
    expect(() => loadAgents(".claude/agents", { cwd: workspace })).toThrow(
      /two\.md: the agent name "same" is taken by .*one\.md/,
    );
    expect(() => loadAgents("missing", { cwd: workspace })).toThrow(/does not exist/);
    mkdirSync(path.join(workspace, "empty"));
    expect(() => loadAgents("empty", { cwd: workspace })).toThrow(/holds no agent file/);
    expect(() => loadAgents([], { cwd: workspace })).toThrow(ConfigurationError);
  });
});
