import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { type AgentOptions, createAgent, createBareAgent } from "skein";
import { scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { expectValidTranscript, resultFor, resultText } from "../support/results.ts";
import { useTempDirs } from "../support/temp.ts";
import { countingTool } from "../support/tools.ts";
import { expectErrorResult, expectOkResult, failureReason, offeredTools } from "./helpers.ts";

const tempDir = useTempDirs("skein-perm-");

/** A createAgent over a temp workspace whose model makes the given Bash calls, then ends. */
async function bashRun(commands: string[], options: Partial<AgentOptions> = {}) {
  const cwd = await tempDir();
  const model = scriptedModel([
    {
      toolCalls: commands.map((command, index) => ({
        id: `b${index + 1}`,
        name: "Bash",
        input: { command },
      })),
    },
    { text: "done" },
  ]);
  const agent = createAgent({ model, cwd, ...options });
  return { cwd, model, agent, file: (name: string) => path.join(cwd, name) };
}

describe("built-in defaults", () => {
  it("Bash asks by default: the run pauses and the command has not run", async () => {
    const { agent, file } = await bashRun(["touch marker"]);
    const result = await agent.run("go");
    expect(result.subtype).toBe("paused");
    expect(result.pending).toEqual([
      {
        id: "b1",
        name: "Bash",
        input: { command: "touch marker" },
        reason: "approval",
        approvalReason: expect.stringMatching(/\S/),
      },
    ]);
    expect(existsSync(file("marker"))).toBe(false);
  });

  it("an approved Bash call runs on resume", async () => {
    const { agent, file } = await bashRun(["touch marker"]);
    const paused = await agent.run("go");
    const resumed = await agent.resume(paused.state!, { approvals: { b1: true } });
    expect(resumed.subtype).toBe("success");
    expect(existsSync(file("marker"))).toBe(true);
  });

  it("Write asks by default; Read is allowed", async () => {
    const cwd = await tempDir();
    await writeFile(path.join(cwd, "notes.txt"), "hello\n");
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "r1", name: "Read", input: { file_path: "notes.txt" } },
          { id: "w1", name: "Write", input: { file_path: "new.txt", content: "x" } },
        ],
      },
      { text: "done" },
    ]);
    const result = await createAgent({ model, cwd }).run("go");
    expect(result.subtype).toBe("paused");
    expect(result.pending?.map((call) => call.id)).toEqual(["w1"]);
    const read = result.steps[0]!.toolCalls.find((call) => call.callId === "r1");
    expect(read?.isError).toBe(false);
    expect(existsSync(path.join(cwd, "new.txt"))).toBe(false);
  });
});

describe("allowedTools and disallowedTools decide what the model sees, and grant nothing", () => {
  it('bare disallowedTools: ["Bash"] removes Bash from the tool list; a call anyway is an error', async () => {
    const { agent, model, file } = await bashRun(["touch marker"], { disallowedTools: ["Bash"] });
    const result = await agent.run("go");
    expect(offeredTools(model)).not.toContain("Bash");
    expect(offeredTools(model)).toContain("Read");
    expect(result.subtype).toBe("success");
    expectErrorResult(result.messages, "b1", /Bash/);
    expect(existsSync(file("marker"))).toBe(false);
  });

  it("a bare name in permissions.deny hides the tool too", async () => {
    const { agent, model, file } = await bashRun(["touch marker"], {
      permissions: { deny: ["Bash"], allow: ["Bash"] },
    });
    const result = await agent.run("go");
    expect(offeredTools(model)).not.toContain("Bash");
    expectErrorResult(result.messages, "b1");
    expect(existsSync(file("marker"))).toBe(false);
  });

  it('allowedTools: ["Bash"] alone grants nothing: Bash still asks', async () => {
    const { agent, model, file } = await bashRun(["touch marker"], { allowedTools: ["Bash"] });
    const result = await agent.run("go");
    expect(offeredTools(model)).toEqual(["Bash"]);
    expect(result.subtype).toBe("paused");
    expect(result.pending?.map((call) => call.id)).toEqual(["b1"]);
    expect(existsSync(file("marker"))).toBe(false);
  });

  it("a tool left out of allowedTools is hidden, and a call to it is an error", async () => {
    const { agent, model, file } = await bashRun(["touch marker"], { allowedTools: ["Read"] });
    const result = await agent.run("go");
    expect(offeredTools(model)).toEqual(["Read"]);
    expectErrorResult(result.messages, "b1");
    expect(existsSync(file("marker"))).toBe(false);
  });

  it("unknown names in allowedTools and disallowedTools are ignored", async () => {
    const note = countingTool("note");
    const model = scriptedModel([
      { toolCalls: [{ id: "n1", name: "note", input: { target: "x" } }] },
      { text: "done" },
    ]);
    const result = await createBareAgent({
      model,
      tools: [note.tool],
      allowedTools: ["note", "read_file", "mcp__missing__*"],
      disallowedTools: ["write_file"],
    }).run("go");
    expect(offeredTools(model)).toEqual(["note"]);
    expectOkResult(result.messages, "n1");
    expect(note.runs).toEqual(["x"]);
  });

  it('disallowedTools: ["Bash(rm *)"] is a deny rule: Bash stays visible, rm is denied', async () => {
    const { agent, model, cwd, file } = await bashRun(["rm -rf x"], {
      disallowedTools: ["Bash(rm *)"],
    });
    await writeFile(path.join(cwd, "x"), "keep me");
    const result = await agent.run("go");
    expect(offeredTools(model)).toContain("Bash");
    expect(result.subtype).toBe("success");
    expectErrorResult(result.messages, "b1", /denied/i);
    expect(failureReason(result, "b1")).toBe("denied");
    expect(existsSync(file("x"))).toBe(true);
  });
});

describe("Bash rules", () => {
  it("deny Bash(aws *) beats allow Bash(aws s3 ls)", async () => {
    const { agent } = await bashRun(["aws s3 ls"], {
      permissions: { deny: ["Bash(aws *)"], allow: ["Bash(aws s3 ls)"] },
    });
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");
    expectErrorResult(result.messages, "b1", /denied/i);
    expect(failureReason(result, "b1")).toBe("denied");
  });

  it("deny Bash(touch *) beats allow Bash(touch marker): the file is not created", async () => {
    const { agent, file } = await bashRun(["touch marker"], {
      permissions: { deny: ["Bash(touch *)"], allow: ["Bash(touch marker)"] },
    });
    const result = await agent.run("go");
    expectErrorResult(result.messages, "b1", /denied/i);
    expect(existsSync(file("marker"))).toBe(false);
  });

  it("ask beats allow for Bash", async () => {
    const { agent, file } = await bashRun(["touch marker"], {
      permissions: { ask: ["Bash(touch *)"], allow: ["Bash(touch *)", "Bash"] },
    });
    const result = await agent.run("go");
    expect(result.subtype).toBe("paused");
    expect(existsSync(file("marker"))).toBe(false);
  });

  it("an allow rule lets a matching command run without asking", async () => {
    const { agent, file } = await bashRun(["touch marker"], {
      permissions: { allow: ["Bash(touch marker)"] },
    });
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");
    expect(existsSync(file("marker"))).toBe(true);
  });

  it("deny Bash(rm *) matches through wrappers, assignments and paths", async () => {
    const commands = [
      "rm -rf x",
      "timeout 5 rm -rf x",
      "env rm -rf x",
      "nice rm -rf x",
      "nice -n 5 rm -rf x",
      "sudo rm -rf x",
      "FOO=1 rm -rf x",
      "/bin/rm -rf x",
      "echo x | xargs rm -rf",
      "true && rm -rf x",
      "ls; rm -rf x",
      "echo $(rm -rf x)",
    ];
    const { agent, cwd, file } = await bashRun(commands, {
      permissions: { deny: ["Bash(rm *)"], allow: ["Bash"] },
    });
    await writeFile(path.join(cwd, "x"), "keep me");
    const result = await agent.run("go");
    expect(result.subtype).toBe("success");
    commands.forEach((command, index) => {
      const block = resultFor(result.messages, `b${index + 1}`);
      expect(block.is_error, `${command}: ${resultText(block)}`).toBe(true);
      expect(failureReason(result, `b${index + 1}`), command).toBe("denied");
    });
    expect(existsSync(file("x"))).toBe(true);
    expectValidTranscript(result.messages);
  });
});

describe("pattern rules on built-ins", () => {
  it("a pattern rule for a built-in with nothing to match (BashOutput) is an assembly error", async () => {
    const cwd = await tempDir();
    expect(() =>
      createAgent({ model: scriptedModel([]), cwd, permissions: { deny: ["BashOutput(x)"] } }),
    ).toThrow(/BashOutput/);
  });
});

describe("Read deny rules govern LS, Glob and Grep", () => {
  it("a Read-denied file is hidden from LS, Glob and Grep and cannot be read", async () => {
    const cwd = await tempDir();
    const { mkdir } = await import("node:fs/promises");
    await mkdir(path.join(cwd, "config"));
    await writeFile(path.join(cwd, ".env"), "API_KEY=secret-value\n");
    await writeFile(path.join(cwd, "config", "prod.env"), "API_KEY=other-secret\n");
    await writeFile(path.join(cwd, "readme.txt"), "API_KEY is documented here\n");
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "ls", name: "LS", input: { path: "." } },
          { id: "lsc", name: "LS", input: { path: "config" } },
          { id: "glob", name: "Glob", input: { pattern: "**/*" } },
          { id: "globenv", name: "Glob", input: { pattern: "**/*.env" } },
          { id: "grep", name: "Grep", input: { pattern: "API_KEY", output_mode: "content" } },
          { id: "read", name: "Read", input: { file_path: ".env" } },
          { id: "readc", name: "Read", input: { file_path: "config/PROD.ENV" } },
          { id: "cat", name: "Bash", input: { command: "cat .env" } },
        ],
      },
      { text: "done" },
    ]);
    const result = await createAgent({
      model,
      cwd,
      permissions: { deny: ["Read(**/*.env)", "Read(.env)"], allow: ["Bash"] },
    }).run("go");
    expect(result.subtype).toBe("success");
    const text = (id: string) => resultText(resultFor(result.messages, id));
    for (const id of ["ls", "lsc", "glob", "globenv", "grep"]) {
      expect(text(id), id).not.toMatch(/secret/);
      expect(text(id), id).not.toMatch(/\.env\b/i);
    }
    expect(text("ls")).toContain("readme.txt");
    expect(text("grep")).toContain("readme.txt");
    expectErrorResult(result.messages, "read", /denied/i);
    expectErrorResult(result.messages, "cat", /denied/i);
    expect(text("read")).not.toContain("secret");
    expect(text("readc")).not.toContain("secret");
    expect(text("cat")).not.toContain("secret");
  });
});
