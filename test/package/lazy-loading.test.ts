/**
 * What `import("skein")` loads, in a fresh process, from the built package (dist/, one bundle per
 * entry, as users run it): the dependencies and Node built-ins that only some tools or features
 * use are loaded by their first use, never by the import (issue 10, section 5: the import costs
 * every process that uses skein, also those whose agents never run Bash, Grep or Glob).
 *
 * A module hook reports each ES module the process loads, `require.cache` holds the CommonJS ones
 * (ajv and ignore are required), and `process.moduleLoadList` names the built-ins, however they
 * were loaded.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";

/** Loaded by the first JSON Schema, Edit, Glob, Grep, path rule or session store that needs them. */
const LAZY_PACKAGES = [
  "ajv",
  "ajv-formats",
  "diff",
  "tinyglobby",
  "@vscode/ripgrep",
  "ignore",
  "better-sqlite3",
  "pg",
  "pg-boss",
  "zod",
  "zod-to-json-schema",
  // Loaded only when an agent has a tracer.
  "@opentelemetry/api",
  // Only skein/mcp imports the MCP SDK.
  "@modelcontextprotocol/client",
  "@modelcontextprotocol/server",
  // The command line's own.
  "commander",
  "picocolors",
  "yocto-spinner",
];
/** Loaded by the first Bash, Grep, sandbox probe or bounded match. */
const LAZY_BUILTINS = ["child_process", "worker_threads", "vm", "string_decoder"];

/** Imports `entries` in a fresh node and reports what that loaded. */
async function loadedBy(entries: string[]) {
  const hook = `import { writeSync } from "node:fs";
export async function load(url, context, next) {
  writeSync(2, "skein-test-loaded " + url + "\\n");
  return next(url, context);
}`;
  const script = `
import { createRequire, register } from "node:module";
register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});
const before = new Set(process.moduleLoadList);
for (const entry of ${JSON.stringify(entries.map((entry) => pathToFileURL(join(ROOT, entry)).href))}) await import(entry);
const builtins = process.moduleLoadList
  .filter((name) => !before.has(name) && name.startsWith("NativeModule "))
  .map((name) => name.slice("NativeModule ".length));
console.log(JSON.stringify({ builtins, required: Object.keys(createRequire(import.meta.url).cache) }));
`;
  const { stdout, stderr } = await promisify(execFile)(
    process.execPath,
    ["--input-type=module", "-e", script],
    { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: "" } },
  );
  const { builtins, required } = JSON.parse(stdout) as { builtins: string[]; required: string[] };
  const imported = stderr
    .split("\n")
    .filter((line) => line.startsWith("skein-test-loaded "))
    .map((line) => line.slice("skein-test-loaded ".length));
  const files = [...imported.filter((url) => url.startsWith("file:")), ...required];
  const packages = new Set(
    files.flatMap((file) => {
      const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
      return match ? [match[1]!] : [];
    }),
  );
  return { imported, packages, builtins };
}

describe('import("skein") loads what a run does not use only when it is needed', () => {
  beforeAll(ensureBuilt, 180_000);

  it("the main entry: no lazily loaded package, no child processes, workers or vm", async () => {
    const { imported, packages, builtins } = await loadedBy(["dist/index.js"]);
    // The hook saw the import (the report is not empty for want of a working hook).
    expect(imported).toContain(pathToFileURL(join(ROOT, "dist/index.js")).href);
    expect([...packages]).toContain("eventsource-parser");
    for (const name of LAZY_PACKAGES) expect([...packages], name).not.toContain(name);
    for (const name of LAZY_BUILTINS) expect(builtins, name).not.toContain(name);
    expect(imported, "imported as ES modules").not.toContain("node:child_process");
  });

  it("skein/sqlite, skein/postgres, skein/pgboss and skein/web load their drivers with first use, not at import", async () => {
    const { packages, builtins } = await loadedBy([
      "dist/sessions/sqlite.js",
      "dist/sessions/postgres.js",
      "dist/pgboss/index.js",
      "dist/web/index.js",
    ]);
    for (const name of LAZY_PACKAGES) expect([...packages], name).not.toContain(name);
    for (const name of LAZY_BUILTINS) expect(builtins, name).not.toContain(name);
  });
});
