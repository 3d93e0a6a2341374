import os from "node:os";
import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

/**
 * The heavy cases, in their own project (`npm run test:heavy`; `.ci/run` runs both): workspaces of
 * 100,000 files and files of a terabyte, kill -9 and racing processes, throwaway Postgres servers,
 * and the files that spend most of their time starting processes. `npm test` runs the rest.
 */
const HEAVY = [
  "test/attacks/scale.test.ts",
  "test/builtin/search-scale.test.ts",
  "test/sessions/kill9.test.ts",
  "test/sessions/kill9-reasoning.test.ts",
  "test/sessions/recovery.test.ts",
  "test/sessions/durability.test.ts",
  "test/sessions/stores.test.ts",
  "test/sessions/arguments.test.ts",
  "test/sessions/postgres.test.ts",
  "test/pgboss/**/*.test.ts",
  "test/examples-many-machines.test.ts",
  "test/cli/queue.test.ts",
  "test/cli/dev-browser.test.ts",
  "test/cli/dev-postgres.test.ts",
  "test/cli/dev-flags.test.ts",
  // Slow for what they start (node and bwrap processes, a packed package, MCP servers, a pty):
  // their cases stay in CI, out of the quick loop.
  "test/package/packed.test.ts",
  "test/package/strict-tsconfig.test.ts",
  "test/attacks/freeze.test.ts",
  "test/attacks/symlinks.test.ts",
  "test/permissions/bash-oracle.test.ts",
  "test/mcp/lifetime.test.ts",
  "test/mcp/faults.test.ts",
  "test/cli/mcp.test.ts",
  "test/cli/resume-paused.test.ts",
  "test/cli/terminal.test.ts",
  "test/cli/errors.test.ts",
  "test/cli/run.test.ts",
  "test/cli/demo.test.ts",
  "test/cli/steering.test.ts",
  "test/cli/skills.test.ts",
  "test/builtin/tree-kill.test.ts",
  // A real browser (Debian's chromium through playwright-core).
  "test/web/**/*.browser.test.ts",
  "test/web/browser-launch.test.ts",
];

/**
 * Files that replace modules with `vi.mock` need a fresh module graph of their own; every other
 * unit file shares its worker's (see `isolate` below).
 */
const MOCKING = [
  "test/docs.test.ts",
  "test/examples.test.ts",
  "test/run/partial-input-lazy.test.ts",
];

export default defineConfig({
  resolve: {
    // Tests import the public API by its package name, straight from the sources.
    alias: [
      { find: /^skein\/testing$/, replacement: src("testing/index.ts") },
      { find: /^skein\/sqlite$/, replacement: src("sessions/sqlite.ts") },
      { find: /^skein\/postgres$/, replacement: src("sessions/postgres.ts") },
      { find: /^skein\/mcp$/, replacement: src("mcp/index.ts") },
      { find: /^skein\/adapters$/, replacement: src("adapters/index.ts") },
      { find: /^skein\/pgboss$/, replacement: src("pgboss/index.ts") },
      { find: /^skein\/web$/, replacement: src("web/index.ts") },
      { find: /^skein$/, replacement: src("index.ts") },
    ],
  },
  test: {
    // The JSON report is what .ci/run counts (the heavy run names its own file on the command
    // line); the default reporter is for people.
    reporters: ["default", "json"],
    globalSetup: ["test/support/global-setup.ts"],
    outputFile: { json: ".vitest-report.json" },
    // A test waits on processes, sockets and timers: on a loaded machine that takes time, so
    // every test may take two minutes (a clean-clone CI beside other jobs saw multi-process tests
    // pass 60 s at load 30); tests bound what they wait for by events, not by time.
    testTimeout: 120_000,
    // Hooks too: removing a fixture of 100,000 files takes seconds on a busy machine.
    hookTimeout: 120_000,
    // Agents with a durable session store need a shared seal key (SKEIN_APPROVAL_SECRET or the
    // approvalSecret option), as a deployment sets it; tests of its absence unset it themselves.
    env: { SKEIN_APPROVAL_SECRET: "skein-test-suite-approval-secret" },
    // Vitest's default is one worker fewer than the cores: one on a two-core machine. Most files
    // wait on processes, sockets and timers more than they compute: twice the cores keeps both
    // busy (measured on two cores: 5m50 with 2 workers, 3m30 with 4, 4m07 with 6).
    maxWorkers: Math.max(2, 2 * os.availableParallelism()),
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...HEAVY, ...MOCKING],
          typecheck: { enabled: true, include: ["test/**/*.test-d.ts"] },
          // A worker imports skein's sources once for all its files instead of once per file:
          // importing was most of the suite's CPU (on two cores: 5m58 of CPU isolated, 2m50
          // shared). Tests keep their state in their own objects, temp dirs and processes.
          isolate: false,
        },
      },
      { extends: true, test: { name: "unit-mocking", include: MOCKING } },
      { extends: true, test: { name: "heavy", include: HEAVY } },
    ],
  },
});
