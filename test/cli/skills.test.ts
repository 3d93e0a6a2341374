/**
 * The `skein` command's --skills, --user-skills and --agents: only what the user names loads; a
 * skills folder in the workspace (a cloned repository's) loads nothing by itself.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type MockServer, mockServer } from "skein/testing";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "./helpers.ts";

let server: MockServer | undefined;
const made: string[] = [];
afterEach(async () => {
  await server?.close();
  server = undefined;
  await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tempDir(): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), "skein-cli-skills-")));
  made.push(dir);
  return dir;
}

function writeFile(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

const skill = (name: string, description: string) =>
  `---\nname: ${name}\ndescription: ${description}\n---\nThe body of ${name}.\n`;

/** Runs `skein <args> hi` in `cwd` against a mock server; returns the first request's body. */
async function firstRequest(args: string[], cwd: string, env: Record<string, string> = {}) {
  server = await mockServer({ script: [{ text: "ok" }] });
  const result = await runCli([...args, "hi"], {
    cwd,
    env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key", ...env },
  });
  return { result, body: server.requests[0]?.body };
}

describe("skein --skills / --user-skills / --agents", () => {
  it("--skills lists the named folder's skills; the workspace's .claude/skills loads nothing by itself", async () => {
    const cwd = await tempDir();
    writeFile(path.join(cwd, ".claude/skills/planted/SKILL.md"), skill("planted", "Planted."));
    writeFile(path.join(cwd, "team-skills/notes/SKILL.md"), skill("notes", "Takes notes."));

    const plain = await firstRequest([], cwd);
    expect(plain.result.code).toBe(0);
    expect(JSON.stringify(plain.body.system)).not.toContain("planted");
    expect(plain.body.tools.map((tool: { name: string }) => tool.name)).not.toContain("Skill");

    const named = await firstRequest(["--skills", "team-skills"], cwd);
    expect(named.result.code).toBe(0);
    const system = JSON.stringify(named.body.system);
    expect(system).toContain("- notes: Takes notes.");
    expect(system).not.toContain("planted");
    expect(named.body.tools.map((tool: { name: string }) => tool.name)).toContain("Skill");
  });

  it("--user-skills reads ~/.skein/skills, and only with the flag", async () => {
    const cwd = await tempDir();
    const home = await tempDir();
    writeFile(path.join(home, ".skein/skills/mine/SKILL.md"), skill("mine", "My own."));
    const without = await firstRequest([], cwd, { HOME: home });
    expect(JSON.stringify(without.body.system)).not.toContain("- mine: My own.");
    const withFlag = await firstRequest(["--user-skills"], cwd, { HOME: home });
    expect(withFlag.result.code).toBe(0);
    expect(JSON.stringify(withFlag.body.system)).toContain("- mine: My own.");

    const empty = await tempDir();
    const missing = await firstRequest(["--user-skills"], cwd, { HOME: empty });
    expect(missing.result.code).toBe(1);
    expect(missing.result.stderr).toContain("--user-skills reads");
    expect(missing.body).toBeUndefined();
  });

  it("--agents makes each agent file a tool named and described by its file; a bad file is an error naming it", async () => {
    const cwd = await tempDir();
    writeFile(
      path.join(cwd, "agents/reviewer.md"),
      "---\nname: reviewer\ndescription: Reviews code.\ntools: Read, Grep\n---\nReview.\n",
    );
    const ok = await firstRequest(["--agents", "agents"], cwd);
    expect(ok.result.code).toBe(0);
    const tool = ok.body.tools.find((spec: { name: string }) => spec.name === "reviewer");
    expect(tool?.description).toBe("Reviews code.");

    writeFile(path.join(cwd, "bad/x.md"), "---\nname: x\ndescription: d\ntools: Wirte\n---\n");
    const bad = await firstRequest(["--agents", "bad"], cwd);
    expect(bad.result.code).toBe(1);
    expect(bad.result.stderr).toMatch(/x\.md:4: "tools" names the tool "Wirte".*"Write"/);
    expect(bad.body).toBeUndefined();
  });
});
