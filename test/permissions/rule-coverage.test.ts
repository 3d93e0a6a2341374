/**
 * Issue 8, class 1: a rule applies to exactly the calls it names, or assembly fails. Path rules
 * naming Write, LS, Glob or Grep govern those tools' paths (deny > ask > allow); a rule naming no
 * tool the agent has is an assembly error naming the closest one; deny and ask patterns match a
 * file name in either Unicode normal form.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  type AgentOptions,
  createAgent,
  createBareAgent,
  defineAgent,
  type SDKResultMessage,
} from "skein";
import { type ScriptedTurn, scriptedModel } from "skein/testing";
import { describe, expect, it } from "vitest";
import { resultText, toolResultsOf } from "../support/results.ts";
import { useTempDirs } from "../support/temp.ts";

const tempDir = useTempDirs("skein-perm-");

type Call = { id: string; name: string; input: Record<string, unknown> };

async function runCalls(
  cwd: string,
  calls: Call[],
  options: Partial<AgentOptions> = {},
): Promise<SDKResultMessage> {
  const turns: ScriptedTurn[] = [{ toolCalls: calls }, { text: "done" }];
  return createAgent({ model: scriptedModel(turns), cwd, ...options }).run("go");
}

/** The tool_result text and error flag for each call id of the run. */
function outcomes(result: SDKResultMessage): Record<string, { text: string; isError: boolean }> {
  const byId: Record<string, { text: string; isError: boolean }> = {};
  for (const block of result.messages.flatMap((message) => toolResultsOf(message)))
    byId[block.tool_use_id] = { text: resultText(block), isError: block.is_error === true };
  return byId;
}

const write = (id: string, file_path: string, content = "x\n"): Call => ({
  id,
  name: "Write",
  input: { file_path, content },
});

describe("Write(...) rules govern Write", () => {
  it("deny: ['Write(.env)'] next to allow: ['Write'] refuses .env at any depth, writes the rest", async () => {
    const cwd = await tempDir();
    mkdirSync(path.join(cwd, "sub"));
    const result = await runCalls(
      cwd,
      [write("w1", ".env"), write("w2", "sub/.env"), write("w3", "notes.txt")],
      { permissions: { allow: ["Write"], deny: ["Write(.env)"] } },
    );
    const out = outcomes(result);
    expect(out.w1).toMatchObject({ isError: true, text: expect.stringContaining("Write(.env)") });
    expect(out.w2).toMatchObject({ isError: true, text: expect.stringContaining("denied") });
    expect(out.w3?.isError).toBe(false);
    expect(existsSync(path.join(cwd, ".env"))).toBe(false);
    expect(existsSync(path.join(cwd, "sub/.env"))).toBe(false);
    expect(readFileSync(path.join(cwd, "notes.txt"), "utf8")).toBe("x\n");
  });

  it("ask: ['Write(*.md)'] next to allow: ['Write'] asks for Markdown, not for the rest", async () => {
    const cwd = await tempDir();
    const asked: string[] = [];
    const result = await runCalls(cwd, [write("w1", "README.md"), write("w2", "a.txt")], {
      permissions: { allow: ["Write"], ask: ["Write(*.md)"] },
      approval: async (_name, input) => {
        asked.push((input as { file_path: string }).file_path);
        return false;
      },
    });
    expect(asked).toEqual(["README.md"]);
    const out = outcomes(result);
    expect(out.w1?.isError).toBe(true);
    expect(out.w2?.isError).toBe(false);
    expect(existsSync(path.join(cwd, "README.md"))).toBe(false);
  });

  it("an approval's updatedInput retargeted to a denied path is refused", async () => {
    const cwd = await tempDir();
    const result = await runCalls(cwd, [write("w1", "draft.txt")], {
      permissions: { deny: ["Write(.env)"] },
      approval: async () => ({
        behavior: "allow",
        updatedInput: { file_path: ".env", content: "KEY=stolen\n" },
      }),
    });
    expect(outcomes(result).w1).toMatchObject({ isError: true });
    expect(existsSync(path.join(cwd, ".env"))).toBe(false);
    expect(existsSync(path.join(cwd, "draft.txt"))).toBe(false);
  });

  it("a Write rule does not govern Edit; an Edit rule governs both", async () => {
    const cwd = await tempDir();
    writeFileSync(path.join(cwd, "config.ts"), "a = 1\n");
    const edit: Call = {
      id: "e1",
      name: "Edit",
      input: { file_path: "config.ts", old_string: "a = 1", new_string: "a = 2" },
    };
    const read: Call = { id: "r1", name: "Read", input: { file_path: "config.ts" } };
    const onlyWrite = await runCalls(cwd, [read, edit], {
      permissions: { allow: ["Edit"], deny: ["Write(config.ts)"] },
    });
    expect(outcomes(onlyWrite).e1?.isError).toBe(false);
    expect(readFileSync(path.join(cwd, "config.ts"), "utf8")).toBe("a = 2\n");

    const both = await runCalls(cwd, [write("w1", "config.ts", "a = 3\n")], {
      permissions: { allow: ["Write"], deny: ["Edit(config.ts)"] },
    });
    expect(outcomes(both).w1?.isError).toBe(true);
    expect(readFileSync(path.join(cwd, "config.ts"), "utf8")).toBe("a = 2\n");
  });
});

describe("LS(...), Glob(...) and Grep(...) rules govern their own tool", () => {
  async function tree(): Promise<string> {
    const cwd = await tempDir();
    mkdirSync(path.join(cwd, "private"));
    writeFileSync(path.join(cwd, "private/plan.txt"), "TOKEN-in-plan\n");
    writeFileSync(path.join(cwd, "server.key"), "TOKEN-in-key\n");
    writeFileSync(path.join(cwd, "readme.txt"), "TOKEN-in-readme\n");
    return cwd;
  }

  it("deny: ['Grep(private/**)'] refuses a Grep there and leaves its files out of a wider Grep; LS is not governed", async () => {
    const cwd = await tree();
    const result = await runCalls(
      cwd,
      [
        { id: "g1", name: "Grep", input: { pattern: "TOKEN", path: "private" } },
        { id: "g2", name: "Grep", input: { pattern: "TOKEN", output_mode: "content" } },
        { id: "l1", name: "LS", input: { path: path.join(cwd, "private") } },
      ],
      { permissions: { deny: ["Grep(private/**)", "Grep(private)"] } },
    );
    const out = outcomes(result);
    expect(out.g1?.isError).toBe(true);
    expect(out.g2?.text).toContain("TOKEN-in-readme");
    expect(out.g2?.text).not.toContain("TOKEN-in-plan");
    expect(out.l1?.text).toContain("plan.txt");
  });

  it("deny: ['LS(private)'] refuses LS of it; Glob is not governed", async () => {
    const cwd = await tree();
    const result = await runCalls(
      cwd,
      [
        { id: "l1", name: "LS", input: { path: path.join(cwd, "private") } },
        { id: "o1", name: "Glob", input: { pattern: "private/*" } },
      ],
      { permissions: { deny: ["LS(private)"] } },
    );
    const out = outcomes(result);
    expect(out.l1).toMatchObject({ isError: true, text: expect.stringContaining("LS(private)") });
    expect(out.o1?.text).toContain("plan.txt");
  });

  it("ask: ['Glob(*.key)'] hides keys from Glob's results, not from LS", async () => {
    const cwd = await tree();
    const result = await runCalls(
      cwd,
      [
        { id: "o1", name: "Glob", input: { pattern: "*" } },
        { id: "l1", name: "LS", input: { path: cwd } },
      ],
      { permissions: { ask: ["Glob(*.key)"] } },
    );
    const out = outcomes(result);
    expect(out.o1?.text).toContain("readme.txt");
    expect(out.o1?.text).not.toContain("server.key");
    expect(out.o1?.text).toContain("hidden by permission rules");
    expect(out.l1?.text).toContain("server.key");
  });
});

describe("a rule must name a tool the agent has", () => {
  const cwd = process.cwd();
  const assemble = (permissions: AgentOptions["permissions"], extra: Partial<AgentOptions> = {}) =>
    createAgent({ model: scriptedModel([]), cwd, permissions, ...extra });

  it.each([
    ["write(x)", "Write"],
    ["Reed(.env)", "Read"],
    ["bash(rm *)", "Bash"],
    ["GLob(*.ts)", "Glob"],
    ["Edti", "Edit"],
  ])("%s is an assembly error suggesting %s", (rule, closest) => {
    for (const behavior of ["allow", "ask", "deny"] as const) {
      expect(() => assemble({ [behavior]: [rule] })).toThrow(
        new RegExp(
          `permissions\\.${behavior}\\[0\\]: the rule "${rule.replace(/[()*.]/g, "\\$&")}" names the tool .* did you mean "${closest}"\\?`,
        ),
      );
    }
  });

  it("a rule far from every name lists the tools instead", () => {
    expect(() =>
      createBareAgent({
        model: scriptedModel([]),
        tools: [],
        permissions: { deny: ["WebFetch(example.com)"] },
      }),
    ).toThrow(/names the tool "WebFetch", which this agent does not have.*none/);
  });

  it("a Tool(pattern) entry of disallowedTools is checked the same way; bare unknown names are ignored", () => {
    expect(() => assemble(undefined, { disallowedTools: ["Reed(.env)"] })).toThrow(
      /disallowedTools\[0\]: the rule "Reed\(\.env\)".*did you mean "Read"\?/,
    );
    expect(() => assemble(undefined, { disallowedTools: ["read_file", "WebFetch"] })).not.toThrow();
  });

  it("wildcard names may match nothing yet", () => {
    expect(() => assemble({ deny: ["mcp__fs__*", "mcp__fs__*(x)"] })).not.toThrow();
  });

  it("createBareAgent has no built-ins to name; defineAgent accepts them for createAgent later", () => {
    const options = { model: scriptedModel([]), cwd, permissions: { deny: ["Read(.env)"] } };
    expect(() => createBareAgent(options)).toThrow(/"Read", which this agent does not have/);
    const definition = defineAgent(options);
    expect(() => createAgent(definition)).not.toThrow();
    expect(() => defineAgent({ ...options, permissions: { deny: ["Reed(.env)"] } })).toThrow(
      /did you mean "Read"/,
    );
  });
});

describe("Unicode normal forms", () => {
  const nfc = "caf\u00e9.env";
  const nfd = "cafe\u0301.env";

  it.each([
    ["an NFC rule", nfc, nfd],
    ["an NFD rule", nfd, nfc],
  ])(
    "%s covers the file named in the other form, for Read, Grep, Write and Bash",
    async (_label, ruleName, fileName) => {
      const cwd = await tempDir();
      writeFileSync(path.join(cwd, fileName), "SECRET-unicode\n");
      const result = await runCalls(
        cwd,
        [
          { id: "r1", name: "Read", input: { file_path: fileName } },
          { id: "g1", name: "Grep", input: { pattern: "SECRET", output_mode: "content" } },
          { id: "b1", name: "Bash", input: { command: `cat ${fileName}` } },
          write("w1", fileName, "overwritten\n"),
        ],
        {
          permissions: {
            allow: ["Bash", "Write"],
            deny: [`Read(${ruleName})`, `Edit(${ruleName})`],
          },
        },
      );
      const out = outcomes(result);
      expect(out.r1?.isError).toBe(true);
      expect(out.b1?.isError).toBe(true);
      expect(out.w1?.isError).toBe(true);
      expect(JSON.stringify(result)).not.toContain("SECRET-unicode");
      expect(readFileSync(path.join(cwd, fileName), "utf8")).toBe("SECRET-unicode\n");
    },
  );
});
