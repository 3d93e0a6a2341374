// Under the hardened preset a skill's scripts run in the sandbox: a skill folder outside the
// workspace is mounted read-only (even under the hidden /tmp or home); one inside the workspace is
// the workspace's, with its Read deny masks.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { createAgent } from "skein";
import { scriptedModel } from "skein/testing";
import { beforeEach, describe, expect, it } from "vitest";
import { probeSandbox } from "../../src/builtin/sandbox.ts";
import { useTempDirs } from "../support/temp.ts";
import { resultOf, skillMd, writeSkill } from "./helpers.ts";

// bubblewrap runs for real: without it these fail (not a skip).
const probe = await probeSandbox();
beforeEach(() => {
  if (!probe.available) throw new Error(`bubblewrap is required here: ${probe.reason}`);
});

const tempDir = useTempDirs("skein-skills-sandbox-");

describe("a skill's script under the hardened preset", () => {
  it("runs from a skill folder under the hidden /tmp, which stays read-only", async () => {
    const workspace = await tempDir();
    const skills = await tempDir();
    const dir = writeSkill(skills, "greeter", skillMd("greeter", "Greets."), {
      "scripts/greet.sh": 'echo "hello from the skill"\n',
    });
    writeFileSync(path.join(skills, "beside.txt"), "not the skill's");
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "run", name: "Bash", input: { command: `sh ${dir}/scripts/greet.sh` } },
          { id: "write", name: "Bash", input: { command: `echo x > ${dir}/planted.txt` } },
          { id: "beside", name: "Bash", input: { command: `ls ${skills}` } },
        ],
      },
      { text: "ok" },
    ]);
    const result = await createAgent({
      model,
      cwd: workspace,
      preset: "hardened",
      skills: { paths: [dir] },
      approval: async () => true,
    }).run("hi");
    expect(resultOf(result, "run")).toMatchObject({ isError: false });
    expect(resultOf(result, "run").text).toContain("hello from the skill");
    expect(resultOf(result, "write").isError).toBe(true);
    expect(resultOf(result, "write").text).toMatch(/Read-only file system/);
    // Only the skill's folder is mounted, not the folder around it.
    expect(resultOf(result, "beside").text).not.toContain("beside.txt");
  });

  it("masks a Read deny rule's file inside a skill folder that lies in the workspace", async () => {
    const workspace = await tempDir();
    const dir = writeSkill(path.join(workspace, "skills"), "kit", skillMd("kit", "Kit."), {
      "secret.env": "TOKEN=s3cret",
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "cat", name: "Bash", input: { command: `cat skills/kit/secret.env; echo end` } },
        ],
      },
      { text: "ok" },
    ]);
    const result = await createAgent({
      model,
      cwd: workspace,
      preset: "hardened",
      skills: { paths: [dir] },
      permissions: { deny: ["Read(**/*.env)"] },
      approval: async () => true,
    }).run("hi");
    expect(resultOf(result, "cat").text).not.toContain("s3cret");
  });
});
