/**
 * The packed package in a new TypeScript project, as a user meets it: `npm pack`, unpacked into
 * the project's node_modules/skein, its dependencies beside it (linked from this repository's
 * node_modules: no network). The project compiles under strict NodeNext settings with the
 * package's own declarations checked (no skipLibCheck), and the compiled program runs an agent
 * whose built-in tools load what they load lazily (Glob's worker, Grep's ripgrep, Bash's child
 * process, Edit's diff), a mock server from skein/testing and the `skein` command.
 */
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";
import { useTempDir } from "../support/temp.ts";

const run = promisify(execFile);

const PROGRAM = `import { createAgent, tool } from "skein";
import { mockServer, scriptedModel } from "skein/testing";
import { sqliteStore } from "skein/sqlite";
import { toUIMessageStreamResponse } from "skein/web";
import { z } from "zod";

const weather = tool("get_weather", "The weather in a city.", z.object({ city: z.string() }), async ({ city }) => \`Sunny in \${city}.\`);
const agent = createAgent({
  cwd: "workspace",
  tools: [weather],
  permissions: { allow: ["Bash", "Edit"] },
  model: scriptedModel([
    {
      toolCalls: [
        { name: "Glob", input: { pattern: "**/*.txt" } },
        { name: "Grep", input: { pattern: "hello" } },
        { name: "Bash", input: { command: "echo from bash" } },
        { name: "get_weather", input: { city: "Oslo" } },
        { name: "Read", input: { file_path: "a.txt" } },
      ],
    },
    { toolCalls: [{ name: "Edit", input: { file_path: "a.txt", old_string: "world", new_string: "there" } }] },
    { text: "done" },
  ]),
});
const results: string[] = [];
for await (const event of agent.stream("go")) {
  if (event.type === "tool_end") results.push(\`\${event.name}: \${event.isError ? "error " : ""}\${event.result.content}\`);
  if (event.type === "result") results.push(\`result: \${event.subtype}\`);
}
const server = await mockServer({ script: [{ text: "hi" }] });
results.push(\`mock server: \${server.url.startsWith("http://127.0.0.1:")}\`);
await server.close();
results.push(\`sqliteStore: \${typeof sqliteStore}\`);
const chat = toUIMessageStreamResponse(createAgent({ model: scriptedModel([{ text: "web" }]) }).stream("hi"));
results.push(\`skein/web: \${(await chat.text()).includes('"delta":"web"')}\`);
console.log(JSON.stringify(results));
`;

describe("the packed package in a new TypeScript project", () => {
  const project = useTempDir("skein-packed-");
  beforeAll(ensureBuilt, 180_000);

  it("compiles with the package's declarations checked, runs an agent and its tools, and the bin runs", async () => {
    const { stdout } = await run(
      "npm",
      ["pack", "--json", "--ignore-scripts", "--pack-destination", project],
      {
        cwd: ROOT,
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    const tarball = join(project, JSON.parse(stdout)[0].filename as string);
    const installed = join(project, "node_modules/skein");
    mkdirSync(installed, { recursive: true });
    await run("tar", ["xzf", tarball, "-C", installed, "--strip-components=1"]);
    // The package's dependencies, and what the project itself uses, as npm would install them.
    const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    for (const name of [
      ...Object.keys(manifest.dependencies),
      "zod",
      "better-sqlite3",
      "typescript",
      "@types/node",
      "undici-types",
    ]) {
      const link = join(project, "node_modules", name);
      mkdirSync(dirname(link), { recursive: true });
      symlinkSync(join(ROOT, "node_modules", name), link, "dir");
    }
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({ name: "fresh", private: true, type: "module" }),
    );
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          skipLibCheck: false,
          types: ["node"],
          outDir: "out",
        },
        include: ["main.ts"],
      }),
    );
    writeFileSync(join(project, "main.ts"), PROGRAM);
    mkdirSync(join(project, "workspace"));
    writeFileSync(join(project, "workspace/a.txt"), "hello world\n");

    await run(process.execPath, [join(project, "node_modules/typescript/bin/tsc"), "-p", project], {
      cwd: project,
    });
    const output = await run(process.execPath, ["out/main.js"], { cwd: project });
    expect(JSON.parse(output.stdout)).toEqual([
      "Glob: a.txt",
      "Grep: a.txt",
      "Bash: from bash",
      "get_weather: Sunny in Oslo.",
      expect.stringMatching(/^Read: +1\thello world$/),
      expect.stringMatching(/^Edit: Edited a\.txt: replaced 1 occurrence\./),
      "result: success",
      "mock server: true",
      "sqliteStore: function",
      "skein/web: true",
    ]);
    expect(readFileSync(join(project, "workspace/a.txt"), "utf8")).toBe("hello there\n");

    const bin = await run(process.execPath, [join(installed, manifest.bin.skein), "--version"]);
    expect(bin.stdout.trim()).toBe(manifest.version);
  }, 300_000); // npm pack and a full tsc (skipLibCheck off) take minutes on a starved machine
});
