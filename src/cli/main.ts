#!/usr/bin/env node
// The `skein` command (package.json "bin"). The program itself is in program.ts.
import { runCli } from "./program.ts";

// A reader of stdout that went away (EPIPE) stops a run quietly (interrupt.ts); outside a run,
// such as a write after it, there is no one left to tell, and it must not crash the exit.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
});

const exitCode = await runCli(process.argv.slice(2));
// Let what was written reach the pipes, then exit without waiting for idle keep-alive sockets.
await new Promise<void>((resolve) => process.stdout.write("", () => resolve()));
await new Promise<void>((resolve) => process.stderr.write("", () => resolve()));
process.exit(exitCode);
