/**
 * `skein worker`, `skein enqueue` and `skein sessions --database-url` given bad input: each says
 * what was wrong and how to fix it, in one line on stderr (no stack), exit 1, before it connects
 * to anything it need not. (Runs against a real database: queue.test.ts, in the heavy project.)
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pc from "picocolors";
import { type MockServer, mockServer } from "skein/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli as runProgram } from "../../src/cli/program.ts";
import type { Terminal } from "../../src/cli/terminal.ts";
import { closedPort } from "../support/servers.ts";
import { type CliResult, lines, runCli } from "./helpers.ts";

/** A directory of agents modules, the command's working directory. */
let cwd: string;
/** A database URL nothing listens on: reaching it would fail with ECONNREFUSED. */
let nowhere: string;
/** Preloaded with NODE_OPTIONS: pg-boss and pg cannot be required, as where they are not installed. */
let hidePeers: string;

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), "skein-cli-queue-"));
  const modules: Record<string, string> = {
    "throws.mjs": 'throw new Error("the module broke while loading");\n',
    "nothing.mjs": "export const port = 8080;\nexport function helper() {}\n",
    "empty-module.mjs": "",
    "not-agents.mjs": "export default { echo: 42 };\n",
    "no-agent.mjs": "export const agents = {};\n",
    "list.mjs": "export default [{ model: {} }];\n",
    "fine.mjs": "export const agents = { echo: { model: {} } };\n",
    "peers.mjs": "export default { echo: { model: {} } };\n",
  };
  for (const [name, text] of Object.entries(modules)) writeFileSync(join(cwd, name), text);
  nowhere = `postgres://postgres:s3cret@127.0.0.1:${await closedPort()}/app`;
  const hider = join(cwd, "hide-peers.cjs");
  writeFileSync(
    hider,
    `const Module = require("node:module");
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === "pg-boss" || request === "pg") {
    const error = new Error("Cannot find module '" + request + "'");
    error.code = "MODULE_NOT_FOUND";
    throw error;
  }
  return resolve.call(this, request, ...rest);
};
`,
  );
  hidePeers = `--require=${hider}`;
  const previous = process.cwd();
  process.chdir(cwd);
  return () => process.chdir(previous);
});

/**
 * The program function in this process, its output captured, `env` over process.env for the call
 * (DATABASE_URL unset unless given). Paths of agents modules are relative to this process's
 * working directory: the tests give them absolute, or as `module()` names them.
 */
async function skein(
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<Pick<CliResult, "code" | "stdout" | "stderr">> {
  let stdout = "";
  let stderr = "";
  const terminal: Terminal = {
    stdout: {
      write(text) {
        stdout += text;
        return true;
      },
    },
    stderr: {
      write(text) {
        stderr += text;
        return true;
      },
    },
    interactive: false,
    colors: pc.createColors(false),
  };
  const saved = { DATABASE_URL: undefined, ...env };
  const before = Object.fromEntries(Object.keys(saved).map((name) => [name, process.env[name]]));
  const apply = (values: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  apply(saved);
  try {
    const code = await runProgram(args, terminal);
    return { code, stdout, stderr };
  } finally {
    apply(before);
  }
}

/** Exit 1, nothing on stdout, and exactly this one line on stderr. */
async function expectError(
  result: Promise<Pick<CliResult, "code" | "stdout" | "stderr">>,
  line: string | RegExp,
): Promise<string> {
  const { code, stdout, stderr } = await result;
  expect(stdout).toBe("");
  expect(lines(stderr), stderr).toHaveLength(1);
  if (typeof line === "string") expect(stderr).toBe(`${line}\n`);
  else expect(stderr).toMatch(line);
  expect(code).toBe(1);
  return stderr;
}

describe("skein worker: bad input", () => {
  it("no database: the flag and the variable to use", async () => {
    await expectError(
      skein(["worker", "--agents", "./fine.mjs"]),
      "skein: skein worker needs the Postgres database of the queue and the sessions: pass --database-url postgres://user:password@localhost:5432/database or set DATABASE_URL.",
    );
  });

  it("a URL that is not one, or not Postgres's; from the flag or DATABASE_URL, never echoed", async () => {
    const stderr = await expectError(
      skein(["worker", "--database-url", "postgres//me:s3cret@db", "--agents", "./fine.mjs"]),
      "skein: --database-url is not a URL; give a Postgres URL, such as postgres://user:password@localhost:5432/database.",
    );
    expect(stderr).not.toContain("s3cret");
    await expectError(
      skein(["worker", "--agents", "./fine.mjs"], { DATABASE_URL: "mysql://me:s3cret@db/app" }),
      "skein: DATABASE_URL is a mysql: URL; give a Postgres URL (postgres:// or postgresql://), such as postgres://user:password@localhost:5432/database.",
    );
  });

  it.each(["0", "-2", "1.5", "two", "1e3", ""])(
    "--concurrency %j: a whole number, 1 or more",
    async (value) => {
      await expectError(
        skein([
          "worker",
          "--database-url",
          nowhere,
          "--agents",
          "./fine.mjs",
          "--concurrency",
          value,
        ]),
        `error: option '--concurrency <n>' argument '${value}' is invalid. it must be a whole number of runs, 1 or more.`,
      );
    },
  );

  it("--agents is required", async () => {
    await expectError(
      skein(["worker", "--database-url", nowhere]),
      "error: required option '--agents <module>' not specified",
    );
  });

  it("an agents module that does not exist, or is a directory", async () => {
    await expectError(
      skein(["worker", "--database-url", nowhere, "--agents", "./agents.js"]),
      `skein: --agents ./agents.js: no such file (${join(cwd, "agents.js")}); give the path of the module that exports the worker's agents, such as --agents ./agents.js.`,
    );
    await expectError(
      skein(["worker", "--database-url", nowhere, "--agents", "."]),
      `skein: --agents . is a directory (${cwd}); give the module's file, such as ./agents.js.`,
    );
  });

  it("an agents module that fails to load: its error", async () => {
    await expectError(
      skein(["worker", "--database-url", nowhere, "--agents", "./throws.mjs"]),
      "skein: --agents ./throws.mjs could not be loaded: Error: the module broke while loading",
    );
  });

  it("an agents module that exports nothing usable: what it exports, and what it should", async () => {
    const shape =
      'export as default or as "agents" an object of agents by name ({ researcher: defineAgent({ ... }) }), or a function ({ boss, sessionStore }) => such an object.';
    await expectError(
      skein(["worker", "--database-url", nowhere, "--agents", "./nothing.mjs"]),
      `skein: --agents ./nothing.mjs exports no agents (it exports helper, port); ${shape}`,
    );
    await expectError(
      skein(["worker", "--database-url", nowhere, "--agents", "./empty-module.mjs"]),
      `skein: --agents ./empty-module.mjs exports no agents (it exports nothing); ${shape}`,
    );
    await expectError(
      skein(["worker", "--database-url", nowhere, "--agents", "./list.mjs"]),
      "skein: --agents ./list.mjs: its default export must be an object of agents by name ({ researcher: defineAgent({ ... }) }), or a function ({ boss, sessionStore }) => such an object; it is an array.",
    );
    await expectError(
      skein(["worker", "--database-url", nowhere, "--agents", "./not-agents.mjs"]),
      'skein: --agents ./not-agents.mjs: its default export: "echo" is 42, not an agent; give defineAgent({ ... }) or createAgent(...).',
    );
    await expectError(
      skein(["worker", "--database-url", nowhere, "--agents", "./no-agent.mjs"]),
      "skein: --agents ./no-agent.mjs: its `agents` export names no agent; name at least one for the worker to serve.",
    );
  });

  it("a database nobody answers at: where it looked (password masked) and what to check", async () => {
    const stderr = await expectError(
      skein(["worker", "--database-url", nowhere, "--agents", "./fine.mjs"]),
      /^skein: could not use the database at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/app: .*ECONNREFUSED.*\. Check --database-url \(or DATABASE_URL\) and that the server is running\.\n$/,
    );
    expect(stderr).not.toContain("s3cret");
  });

  it("no SKEIN_APPROVAL_SECRET: what to set, before any connection", async () => {
    const stderr = await expectError(
      skein(["worker", "--database-url", nowhere, "--agents", "./fine.mjs"], {
        SKEIN_APPROVAL_SECRET: undefined,
      }),
      /^skein: skein worker: needs an approvalSecret option or the SKEIN_APPROVAL_SECRET environment variable: .*Every worker and every process that enqueues or resumes runs must share it\.\n$/,
    );
    expect(stderr).not.toContain("ECONNREFUSED");
    await expectError(
      skein(["enqueue", "--database-url", nowhere, "--agent", "echo", "hello"], {
        SKEIN_APPROVAL_SECRET: undefined,
      }),
      /^skein: skein enqueue: needs an approvalSecret option or the SKEIN_APPROVAL_SECRET environment variable/,
    );
    await expectError(
      skein(["worker", "--database-url", nowhere, "--agents", "./fine.mjs"], {
        SKEIN_APPROVAL_SECRET: "short",
      }),
      /^skein: SKEIN_APPROVAL_SECRET must be a random string of at least 16 characters/,
    );
  });

  it("without pg-boss and pg installed: the packages to install", async () => {
    await expectError(
      runCli(["worker", "--database-url", nowhere, "--agents", "./peers.mjs"], {
        cwd,
        env: { NODE_OPTIONS: hidePeers },
      }),
      /^skein: skein worker: skein\/pgboss needs pg-boss@\^10\.4 and pg@\^8: npm install pg-boss@\^10\.4 pg@\^8$/m,
    );
  });
});

describe("skein enqueue: bad input", () => {
  it("no database", async () => {
    await expectError(
      skein(["enqueue", "--agent", "echo", "hello"]),
      "skein: skein enqueue needs the Postgres database of the queue and the sessions: pass --database-url postgres://user:password@localhost:5432/database or set DATABASE_URL.",
    );
  });

  it("--agent is required, and must be an agent's name", async () => {
    await expectError(
      skein(["enqueue", "--database-url", nowhere, "hello"]),
      "error: required option '--agent <name>' not specified",
    );
    await expectError(
      skein(["enqueue", "--database-url", nowhere, "--agent", "the writer", "hello"]),
      'skein: --agent "the writer" is not an agent\'s name: 1-100 characters from A-Z, a-z, 0-9, "_", "." and "-", as the worker\'s agents module names it.',
    );
  });

  it("a bad --session id, an empty prompt", async () => {
    await expectError(
      skein(["enqueue", "--database-url", nowhere, "--agent", "echo", "--session", "a/b", "hi"]),
      'skein: --session "a/b" is not a session id: 1-128 characters from A-Z, a-z, 0-9, ".", "_", ":" and "-".',
    );
    await expectError(
      skein(["enqueue", "--database-url", nowhere, "--agent", "echo", "  "]),
      'skein: the prompt is empty; pass one, such as skein enqueue --agent echo "summarise the notes"',
    );
  });

  it("a database nobody answers at", async () => {
    await expectError(
      skein(["enqueue", "--agent", "echo", "hello"], { DATABASE_URL: nowhere }),
      /^skein: could not use the database at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/app: .*ECONNREFUSED/,
    );
  });
});

describe("skein sessions", () => {
  let model: MockServer;
  beforeAll(async () => {
    model = await mockServer({ script: [{ text: "Hi." }] });
  });
  afterAll(() => model?.close());

  it("--database-url: a bad URL, or a database nobody answers at", async () => {
    await expectError(
      skein(["sessions", "--database-url", "not a url"]),
      "skein: --database-url is not a URL; give a Postgres URL, such as postgres://user:password@localhost:5432/database.",
    );
    const stderr = await expectError(
      skein(["sessions", "--database-url", nowhere]),
      /^skein: could not use the database at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/app: .*ECONNREFUSED.*\. Check --database-url and that the server is running\.\n$/,
    );
    expect(stderr).not.toContain("s3cret");
  });

  it("without --database-url lists the workspace's sessions as before, whatever DATABASE_URL says", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "skein-cli-sessions-"));
    const run = await runCli(["say hi"], {
      cwd: workspace,
      env: { ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: "test-key" },
    });
    expect(run.code).toBe(0);
    const sessionId = /^session (\S+)$/m.exec(run.stderr)?.[1];
    expect(sessionId).toBeDefined();
    const env = { DATABASE_URL: nowhere };
    const listed = await runCli(["sessions"], { cwd: workspace, env });
    expect(listed).toMatchObject({ code: 0, stderr: "" });
    expect(lines(listed.stdout)).toEqual([
      expect.stringMatching(new RegExp(`^${sessionId}  \\d{4}-\\S+Z  idle  say hi$`)),
    ]);
    const json = await runCli(["sessions", "--json"], { cwd: workspace, env });
    const [row] = lines(json.stdout).map((line) => JSON.parse(line));
    expect(row).toMatchObject({ sessionId, status: "idle" });
    expect(row).not.toHaveProperty("run");
  });
});
