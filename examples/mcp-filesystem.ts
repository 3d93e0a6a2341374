// skein's own example: the published MCP filesystem server's tools in an agent, as mcp__fs__*
// tools that rules, approvals and events see like any other. It runs offline against the real
// server (started from node_modules) in a temporary directory; a scripted model plays the
// model's side. Run it with `npx tsx examples/mcp-filesystem.ts`.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { createBareAgent } from "skein";
import { mcpServer } from "skein/mcp";
import { scriptedModel } from "skein/testing";

// What `npx -y @modelcontextprotocol/server-filesystem <dir>` runs, started here with node.
const require = createRequire(import.meta.url);
const manifest = require.resolve("@modelcontextprotocol/server-filesystem/package.json");
const serverEntry = path.join(path.dirname(manifest), "dist/index.js");

export async function main(log: (line: string) => void = console.log): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "skein-mcp-example-"));
  await writeFile(path.join(dir, "notes.md"), "# Notes\n- buy milk\n- call Ana\n");
  // Lazy: nothing starts until a run needs the server's tools.
  const fs = mcpServer({
    command: process.execPath,
    args: [serverEntry, dir],
    stderr: "ignore",
    security: { network: "none", filesystem: "workspace" },
  });
  const model = scriptedModel([
    {
      toolCalls: [
        { name: "mcp__fs__list_directory", input: { path: dir } },
        // "2" becomes 2: the server's JSON Schema wants a number.
        { name: "mcp__fs__read_text_file", input: { path: path.join(dir, "notes.md"), head: "2" } },
      ],
    },
    {
      toolCalls: [
        {
          name: "mcp__fs__write_file",
          input: { path: path.join(dir, "todo.md"), content: "- call Ana\n" },
        },
      ],
    },
    { text: "Your notes are about milk and Ana; todo.md now says to call Ana." },
  ]);
  try {
    // `await using` closes the agent, and so the server's process, when the block ends.
    await using agent = createBareAgent({
      model,
      mcpServers: { fs },
      disallowedTools: ["mcp__fs__move_file"],
      permissions: { ask: ["mcp__fs__write_file"] },
      approval: (name) => {
        log(`approve ${name}? yes`);
        return true;
      },
    });
    for await (const event of agent.stream("Read my notes and write a todo file.")) {
      if (event.type === "tool_end") {
        const text =
          typeof event.result.content === "string"
            ? event.result.content
            : event.result.content
                .map((block) => (block.type === "text" ? block.text : "[image]"))
                .join("");
        log(`${event.name} -> ${text.split("\n")[0]!.replace(dir, "<dir>")}`);
      }
      if (event.type === "result") log(`${event.subtype}: ${event.result}`);
    }
    const offered = model.requests[0]!.tools.map((tool) => tool.name);
    log(
      `offered ${offered.length} tools; move_file hidden: ${!offered.includes("mcp__fs__move_file")}`,
    );
    log(`todo.md: ${(await readFile(path.join(dir, "todo.md"), "utf8")).trim()}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();
