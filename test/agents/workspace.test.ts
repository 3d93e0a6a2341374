// Workspaces nest and the hardened preset reaches every agent (design/agents.md, "Permissions",
// "Handoffs never widen permissions; workspaces nest"). Real files in temp directories.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  agentTool,
  ConfigurationError,
  createAgent,
  createBareAgent,
  delegateTool,
  type SandboxPolicy,
  tool,
} from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { resultFor, resultText } from "../support/results.ts";
import { useTempDirs } from "../support/temp.ts";

const tempDir = useTempDirs("skein-agents-");

function configError(build: () => unknown): ConfigurationError {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return error as ConfigurationError;
  }
  throw new Error("expected a ConfigurationError, but nothing was thrown");
}

/** root/{public.txt, sub/{secret.txt, open.txt}} */
async function workspace() {
  const root = await tempDir();
  await mkdir(join(root, "sub"));
  await writeFile(join(root, "public.txt"), "public words");
  await writeFile(join(root, "sub", "secret.txt"), "SECRET-CONTENT");
  await writeFile(join(root, "sub", "open.txt"), "open words");
  return root;
}

describe("a child's cwd must lie inside the parent's workspace", () => {
  it("outside: a ConfigurationError at the parent's assembly, naming both paths", async () => {
    const parentRoot = await tempDir();
    const elsewhere = await tempDir();
    const child = createAgent({ id: "child", model: scriptedModel([]), cwd: elsewhere });
    const error = configError(() =>
      createBareAgent({
        model: scriptedModel([]),
        cwd: parentRoot,
        tools: [agentTool(child, { description: "Works elsewhere" })],
      }),
    );
    expect(error.message).toContain(parentRoot);
    expect(error.message).toContain(elsewhere);
  });

  it("a delegate target (a handoff target too) outside the workspace is refused the same way", async () => {
    const parentRoot = await tempDir();
    const elsewhere = await tempDir();
    const child = createAgent({ id: "child", model: scriptedModel([]), cwd: elsewhere });
    const error = configError(() =>
      createBareAgent({
        model: scriptedModel([]),
        cwd: parentRoot,
        tools: [delegateTool({ writer: child })],
      }),
    );
    expect(error.message).toContain(parentRoot);
    expect(error.message).toContain(elsewhere);
  });

  it("the parent's own directory's parent is outside too", async () => {
    const root = await workspace();
    const child = createAgent({ id: "child", model: scriptedModel([]), cwd: root });
    expect(() =>
      createBareAgent({
        model: scriptedModel([]),
        cwd: join(root, "sub"),
        tools: [agentTool(child, { description: "Works above" })],
      }),
    ).toThrow(ConfigurationError);
  });

  it("the same directory and a subdirectory are accepted", async () => {
    const root = await workspace();
    for (const cwd of [root, join(root, "sub")]) {
      const child = createAgent({ id: "child", model: scriptedModel([]), cwd });
      expect(() =>
        createBareAgent({
          model: scriptedModel([]),
          cwd: root,
          tools: [agentTool(child, { description: "Works inside" })],
        }),
      ).not.toThrow();
    }
  });
});

describe("the parent judges a child's paths from its own root", () => {
  /** parent (cwd root, deny Read(sub/secret.txt)) --p1--> child (createAgent, cwd root/sub). */
  async function fromSub(calls: { id: string; name: string; input: unknown }[]) {
    const root = await workspace();
    const childModel = scriptedModel([{ toolCalls: calls }, { text: "child done" }]);
    const child = createAgent({
      id: "reader",
      model: childModel,
      cwd: join(root, "sub"),
      permissions: { allow: ["Bash"] },
    });
    const parent = createBareAgent({
      model: scriptedModel([
        { toolCalls: [{ id: "p1", name: "reader", input: { prompt: "read it" } }] },
        { text: "parent done" },
      ]),
      cwd: root,
      permissions: { allow: ["Bash"], deny: ["Read(sub/secret.txt)"] },
      tools: [agentTool(child, { description: "Reads" })],
    });
    const result = await parent.run("go");
    expect(result.subtype).toBe("success");
    const block = (id: string) => resultFor(childModel.requests[1]!.messages, id);
    return { block, childModel, result };
  }

  it('a parent deny "Read(sub/secret.txt)" stops the child\'s Read("secret.txt") in sub/', async () => {
    const { block, childModel, result } = await fromSub([
      { id: "r1", name: "Read", input: { file_path: "secret.txt" } },
    ]);
    expect(block("r1").is_error).toBe(true);
    expect(JSON.stringify(childModel.requests)).not.toContain("SECRET-CONTENT");
    expect(JSON.stringify(result)).not.toContain("SECRET-CONTENT");
  });

  it("the child's other files in sub/ are read as usual", async () => {
    const { block } = await fromSub([{ id: "r1", name: "Read", input: { file_path: "open.txt" } }]);
    expect(block("r1").is_error ?? false).toBe(false);
    expect(resultText(block("r1"))).toContain("open words");
  });

  const grep = {
    id: "g1",
    name: "Grep",
    input: { pattern: "SECRET|open", output_mode: "content" },
  };

  it("(at top level, the same deny leaves the file out of a Grep's results)", async () => {
    const root = await workspace();
    const model = scriptedModel([{ toolCalls: [grep] }, { text: "done" }]);
    await createAgent({ model, cwd: root, permissions: { deny: ["Read(sub/secret.txt)"] } }).run(
      "go",
    );
    const text = resultText(resultFor(model.requests[1]!.messages, "g1"));
    expect(text).toContain("open words");
    expect(text).not.toContain("SECRET-CONTENT");
  });

  it("the child's Grep over sub/ leaves the parent-denied file out too", async () => {
    const { block } = await fromSub([grep]);
    const text = resultText(block("g1"));
    expect(text).toContain("open words");
    expect(text).not.toContain("SECRET-CONTENT");
  });

  it("the child's Glob over sub/ leaves the parent-denied file out (as at top level)", async () => {
    const glob = { id: "o1", name: "Glob", input: { pattern: "*.txt" } };
    const root = await workspace();
    const top = scriptedModel([
      { toolCalls: [{ ...glob, input: { pattern: "sub/*.txt" } }] },
      { text: "done" },
    ]);
    await createAgent({
      model: top,
      cwd: root,
      permissions: { deny: ["Read(sub/secret.txt)"] },
    }).run("go");
    const topText = resultText(resultFor(top.requests[1]!.messages, "o1"));
    expect(topText).toContain("open.txt");
    expect(topText).not.toContain("secret.txt");
    const { block } = await fromSub([glob]);
    expect(resultText(block("o1"))).toContain("open.txt");
    expect(resultText(block("o1"))).not.toContain("secret.txt");
  });

  it("the child's Bash reading the denied file is refused; reading another file is not", async () => {
    const { block, childModel } = await fromSub([
      { id: "b1", name: "Bash", input: { command: "cat secret.txt" } },
      { id: "b2", name: "Bash", input: { command: "cat open.txt" } },
    ]);
    expect(block("b1").is_error).toBe(true);
    expect(resultText(block("b1"))).toMatch(/secret\.txt.*deny/);
    expect(JSON.stringify(childModel.requests)).not.toContain("SECRET-CONTENT");
    expect(block("b2").is_error ?? false).toBe(false);
    expect(resultText(block("b2"))).toContain("open words");
  });
});

const secure = { security: { network: "none" as const } };

describe("the hardened preset", () => {
  it("refuses an agent tool without security at the parent's assembly; accepts one with it", () => {
    const child = createBareAgent({ id: "child", model: scriptedModel([]) });
    const error = configError(() =>
      createBareAgent({
        model: scriptedModel([]),
        preset: "hardened",
        tools: [agentTool(child, { description: "Works" })],
      }),
    );
    expect(error.message).toContain('"child"');
    expect(error.message).toMatch(/security/);
    expect(() =>
      createBareAgent({
        model: scriptedModel([]),
        preset: "hardened",
        tools: [agentTool(child, { description: "Works", ...secure })],
      }),
    ).not.toThrow();
  });

  it("refuses a reachable child's custom tool without security, naming it (two levels down too)", () => {
    const fetchPage = tool("fetch_page", "Fetches", z.object({}), async () => "page");
    const grandchild = createBareAgent({
      id: "grandchild",
      model: scriptedModel([]),
      tools: [fetchPage],
    });
    const child = createBareAgent({
      id: "child",
      model: scriptedModel([]),
      tools: [agentTool(grandchild, { description: "G", ...secure })],
    });
    // The child alone (not hardened) is fine.
    expect(child).toBeDefined();
    const error = configError(() =>
      createBareAgent({
        model: scriptedModel([]),
        preset: "hardened",
        tools: [agentTool(child, { description: "C", ...secure })],
      }),
    );
    expect(error.message).toContain('"fetch_page"');
  });

  it("a delegate target's tools are checked too", () => {
    const fetchPage = tool("fetch_page", "Fetches", z.object({}), async () => "page");
    const writer = createBareAgent({ id: "writer", model: scriptedModel([]), tools: [fetchPage] });
    const error = configError(() =>
      createBareAgent({
        model: scriptedModel([]),
        preset: "hardened",
        tools: [delegateTool({ writer }, secure)],
      }),
    );
    expect(error.message).toContain('"fetch_page"');
  });

  it("a child runs sandboxed when an ancestor is hardened (its tools see ctx.sandbox)", async () => {
    const root = await tempDir();
    const seen: (SandboxPolicy | undefined)[] = [];
    const probe = tool(
      "probe",
      "Reports its sandbox",
      z.object({}),
      async (_input, ctx) => {
        seen.push(ctx.sandbox);
        return "ok";
      },
      secure,
    );
    const child = createAgent({
      id: "child",
      cwd: root,
      model: scriptedModel(() => ({ toolCalls: [{ id: "x1", name: "probe", input: {} }] })),
      maxTurns: 1,
      tools: [probe],
    });
    const parentFor = (hardened: boolean) =>
      createBareAgent({
        model: scriptedModel([
          { toolCalls: [{ id: "p1", name: "child", input: { prompt: "probe" } }] },
          { text: "done" },
        ]),
        cwd: root,
        tools: [agentTool(child, { description: "C", ...secure })],
        ...(hardened ? { preset: "hardened" as const } : {}),
      });
    await parentFor(false).run("go");
    await parentFor(true).run("go");
    expect(seen).toHaveLength(2);
    expect(seen[0]).toBeUndefined();
    expect(seen[1]).toMatchObject({ network: "none" });
  });
});
