/**
 * The strictest settings a user's project may have: `exactOptionalPropertyTypes`,
 * `noUncheckedIndexedAccess`, `noPropertyAccessFromIndexSignature`. Options the environment may
 * leave unset (`apiKey: process.env["KEY"]`) compile, as do the adapters given the other SDKs' own
 * tools. Against the built declarations, as a user's compiler reads them.
 */
import { execFile } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";
import { useTempDir } from "../support/temp.ts";

const run = promisify(execFile);

const PROGRAM = `import { tool as agentsTool } from "@openai/agents-core";
import { tool as aiTool } from "ai";
import { anthropic, createAgent, createBareAgent, defineAgent, openai, query } from "skein";
import { fromAiSdkTools, fromOpenAIAgentsTools } from "skein/adapters";
import { mcpServer } from "skein/mcp";
import { createWorker, enqueueRun, resumeRun } from "skein/pgboss";
import { postgresStore } from "skein/postgres";
import { sqliteStore } from "skein/sqlite";
import { mockServer } from "skein/testing";
import { chatHandler, toNodeHandler } from "skein/web";
import { z } from "zod";

const env = process.env;
const agent = createAgent({
  model: env["MODEL"] ?? "claude-sonnet-4-6",
  apiKey: env["KEY"],
  baseURL: env["BASE_URL"],
  systemPrompt: env["SYSTEM"],
  approvalSecret: env["SECRET"],
  cwd: env["WORKSPACE"],
  maxTurns: undefined,
  sessionStore: sqliteStore({ path: env["DB"] ?? "sessions.db" }),
});
const models = [
  anthropic({ apiKey: env["KEY"], baseURL: env["BASE_URL"], model: env["MODEL"] }),
  openai({ apiKey: env["KEY"], baseURL: env["BASE_URL"], maxRetries: undefined }),
];
const weather = aiTool({
  description: "The weather in a city.",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => \`Sunny in \${city}.\`,
});
const lookup = agentsTool({
  name: "lookup",
  description: "Looks a key up.",
  parameters: z.object({ key: z.string() }),
  execute: async ({ key }) => key,
});
const tools = [...fromAiSdkTools({ weather }), ...fromOpenAIAgentsTools([lookup])];
const bare = createBareAgent({ model: models[0]!, tools, modelName: env["MODEL_NAME"] });
const definition = defineAgent({ model: models[1]!, approvalSecret: env["SECRET"] });
const events = query({ prompt: "hi", model: models[0]!, sessionId: env["SESSION"] });
const server = mcpServer({ command: "node", args: ["server.js"], cwd: env["WORKSPACE"] });
const store = postgresStore({ connectionString: env["DATABASE_URL"] ?? "postgres:///app" });
async function queue(boss: Parameters<typeof createWorker>[0]) {
  await createWorker(boss, { sessionStore: store, agents: { definition }, approvalSecret: env["SECRET"] });
  await enqueueRun(boss, { agent: "definition", prompt: "go", sessionStore: store, sessionId: env["SESSION"] });
  await resumeRun(boss, "s", { agent: "definition", approvals: { c1: true }, approvalSecret: env["SECRET"] });
}
const mock = mockServer({ script: [{ text: "hi" }] });
const chat = toNodeHandler(
  chatHandler({
    agent,
    sessionStore: store,
    approvalSecret: env["SECRET"],
    authorize: (request) => request.headers.get("x-user") !== null,
  }),
);
export { agent, bare, chat, events, mock, queue, server };
`;

describe("a user's project under the strictest compiler settings", () => {
  const project = useTempDir("skein-strict-");
  beforeAll(ensureBuilt, 180_000);

  it("compiles options the environment may leave unset, and the adapters with both SDKs' tools", async () => {
    const link = (name: string, target = join(ROOT, "node_modules", name)) => {
      const path = join(project, "node_modules", name);
      mkdirSync(dirname(path), { recursive: true });
      symlinkSync(target, path, "dir");
    };
    link("skein", ROOT);
    for (const name of ["ai", "@openai/agents-core", "zod", "@types", "typescript"]) link(name);
    writeFileSync(join(project, "package.json"), JSON.stringify({ type: "module" }));
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          noPropertyAccessFromIndexSignature: true,
          noImplicitOverride: true,
          verbatimModuleSyntax: true,
          // The other SDKs' own declarations do not compile under exactOptionalPropertyTypes
          // (ai's Tool type refuses itself): a project with these settings skips library checks.
          skipLibCheck: true,
          types: ["node"],
          noEmit: true,
        },
        include: ["main.ts"],
      }),
    );
    writeFileSync(join(project, "main.ts"), PROGRAM);
    const compiled = await run(
      process.execPath,
      [join(project, "node_modules/typescript/bin/tsc"), "-p", project],
      { cwd: project },
    ).then(
      () => "",
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(compiled).toBe("");
  }, 120_000);
});
