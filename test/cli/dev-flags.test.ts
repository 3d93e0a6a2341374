/**
 * `skein dev` takes the options of `skein` that make its agent (--agents, --skills, --mcp-server,
 * --max-turns, --api...): a run `skein --agents ./agents` paused on a call to one of those agents
 * is approved from the inspector and the call runs the agent file's agent. Without the flag the
 * inspector's agent has no such tool, and the call fails. Bad folders and server names are
 * errors at start.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { agentTool, anthropic, createAgent, loadAgents } from "skein";
import { sqliteStore } from "skein/sqlite";
import { type MockServer, mockServer } from "skein/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIVENESS_MS } from "../support/liveness.ts";
import { runCli, startCli } from "./helpers.ts";

const SECRET = "dev-flags-test-secret-0123456789abc";
const CHILD_PROMPT = "You review what you are given, in one sentence.";

let cwd: string;
let server: MockServer;

function write(file: string, text: string, mode?: number): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, text, mode === undefined ? undefined : { mode });
}

beforeAll(async () => {
  cwd = await realpath(await mkdtemp(path.join(os.tmpdir(), "skein-dev-flags-")));
  write(path.join(cwd, ".skein", "approval-secret"), `${SECRET}\n`, 0o600);
  write(
    path.join(cwd, "agents", "reviewer.md"),
    `---\nname: reviewer\ndescription: Reviews a change.\n---\n${CHILD_PROMPT}\n`,
  );
  server = await mockServer({
    script: ({ body }) => {
      // The reviewer's own run, then the parent's turns: a call to the reviewer, then the answer.
      if (JSON.stringify(body.system ?? "").includes(CHILD_PROMPT)) return { text: "Looks fine." };
      const results = JSON.stringify(body.messages).includes("tool_result");
      return results
        ? { text: "Reviewed." }
        : { toolCalls: [{ id: "r1", name: "reviewer", input: { prompt: "review the change" } }] };
    },
  });
  // Two sessions paused on the reviewer call, as `skein --agents agents` with an ask rule pauses.
  const store = sqliteStore({ path: path.join(cwd, ".skein", "sessions.db") });
  const agent = createAgent({
    model: anthropic({ baseURL: server.url, apiKey: "test-key" }),
    tools: loadAgents(["agents"], { cwd }).map((definition) => agentTool(definition)),
    permissions: { ask: ["reviewer"] },
    sessionStore: store,
    approvalSecret: SECRET,
    cwd,
  });
  for (const id of ["with-flag", "without-flag"])
    expect((await agent.run("review it", { sessionId: id })).subtype).toBe("paused");
  await agent.close();
  await store.close();
}, LIVENESS_MS);

afterAll(async () => {
  await server?.close();
  await rm(cwd, { recursive: true, force: true });
});

/**
 * Starts `skein dev <args>` and approves the session's call r1: resolves the refusal, or the
 * run's call once the session is idle again.
 */
async function approveWith(args: string[], sessionId: string) {
  const dev = startCli(["dev", ...args], {
    cwd,
    env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "test-key" },
  });
  try {
    await dev.waitFor("stdout", "\n");
    const url = new URL(/skein dev: (\S+)/.exec(dev.stdout)![1]!);
    const headers = { "x-skein-token": url.searchParams.get("token")!, origin: url.origin };
    const answer = await fetch(new URL(`/api/sessions/${sessionId}/approve`, url.origin), {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ decisions: { r1: "allow" } }),
    });
    if (answer.status !== 202) return { refused: answer.status, said: await answer.text() };
    let shown: any;
    await expect
      .poll(
        async () => {
          const response = await fetch(new URL(`/api/sessions/${sessionId}`, url.origin), {
            headers,
          });
          shown = await response.json();
          return shown.status;
        },
        { timeout: LIVENESS_MS, interval: 100 },
      )
      .toBe("idle");
    return { call: shown.runs[0].turns[0].calls[0] };
  } finally {
    dev.child.kill("SIGINT");
    await dev.exited;
  }
}

describe("skein dev with the options of skein", () => {
  it(
    "--agents: the approved call runs the agent file's agent, and its answer is the call's result",
    async () => {
      const { call, said } = await approveWith(["--agents", "agents"], "with-flag");
      expect(said).toBeUndefined();
      expect(call).toMatchObject({ id: "r1", name: "reviewer", status: "done" });
      expect(JSON.stringify(call)).toContain("Looks fine.");
      expect(
        server.requests.some((request) =>
          JSON.stringify(request.body.system ?? "").includes(CHILD_PROMPT),
        ),
      ).toBe(true);
    },
    LIVENESS_MS * 2,
  );

  it(
    "without --agents the inspector's agent has no such tool: the approval is refused, saying so, and nothing runs",
    async () => {
      const before = server.requests.length;
      const { refused, said } = await approveWith([], "without-flag");
      expect(refused).toBe(409);
      expect(said).toContain('the tool \\"reviewer\\", which this agent does not have');
      expect(server.requests.length).toBe(before);
      const store = sqliteStore({ path: path.join(cwd, ".skein", "sessions.db") });
      const log = (await store.read("without-flag")).map((row) => JSON.parse(row.data));
      await store.close();
      expect(log.at(-1).type).toBe("paused");
    },
    LIVENESS_MS * 2,
  );

  it(
    "a missing --agents folder, --user-skills without the folder, or an unknown --mcp-server is an error at start",
    async () => {
      const home = await realpath(await mkdtemp(path.join(os.tmpdir(), "skein-dev-home-")));
      try {
        for (const [args, said] of [
          [["--agents", "no-such-dir"], "no-such-dir"],
          [["--user-skills"], "--user-skills reads"],
          [["--mcp-server", "files"], "--mcp-server files: there is no .mcp.json"],
          [["--max-turns", "0"], "--max-turns"],
        ] as const) {
          const result = await runCli(["dev", ...args], { cwd, env: { HOME: home } });
          expect(result.code, result.stderr).not.toBe(0);
          expect(result.stderr).toContain(said);
          expect(result.stdout).not.toContain("skein dev: http");
        }
      } finally {
        await rm(home, { recursive: true, force: true });
      }
    },
    LIVENESS_MS * 2,
  );
});
