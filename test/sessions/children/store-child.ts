// A child process for the kill -9 and racing tests: appends to a store and prints each outcome.
import { createInterface } from "node:readline";
import { SessionConflictError } from "../../../src/core/errors.ts";
import { postgresStore } from "../../../src/sessions/postgres.ts";
import { sqliteStore } from "../../../src/sessions/sqlite.ts";
import type { ChildStore } from "../helpers.ts";

type Task =
  | { mode: "loop"; store: ChildStore; sessionId: string; batch: number; pad: number }
  | { mode: "race"; store: ChildStore; sessionId: string; name: string; count: number };

const task = JSON.parse(process.argv[2]!) as Task;
const store =
  task.store.kind === "sqlite"
    ? sqliteStore({ path: task.store.path })
    : postgresStore({ connectionString: task.store.url, schema: task.store.schema });
// stdout to a pipe is synchronous on Linux: a printed line was written before the next append.
const say = (line: string) => process.stdout.write(`${line}\n`);

if (task.mode === "loop") {
  // Appends batches of `batch` entries until killed; prints "ack <last seq>" after each resolves.
  const stored = await store.read(task.sessionId);
  let next = stored.length + 1;
  say(`ready ${stored.length}`);
  for (;;) {
    const entries = Array.from({ length: task.batch }, (_, i) =>
      JSON.stringify({ seq: next + i, pad: "x".repeat(task.pad) }),
    );
    await store.append(task.sessionId, next, entries);
    next += task.batch;
    say(`ack ${next - 1}`);
  }
} else {
  // Appends one entry at a time until the session holds `count`, starting on "go" from stdin.
  // After a conflict it goes on at the winner's last seq + 1, so both writers keep racing for
  // the same seq at the front of the log.
  await store.list(); // creates the tables now, not inside the race
  say("ready");
  await new Promise<void>((resolve) =>
    createInterface({ input: process.stdin }).once("line", () => resolve()),
  );
  let next = 1;
  while (next <= task.count) {
    try {
      await store.append(task.sessionId, next, [`${task.name} ${next}`]);
      say(`ok ${next}`);
      next += 1;
    } catch (error) {
      if (!(error instanceof SessionConflictError) || error.lastSeq === undefined) {
        say(`error ${next} ${String(error)}`);
        break;
      }
      say(`conflict ${next}`);
      next = error.lastSeq + 1;
    }
  }
  await store.close();
  say("done");
  process.exit(0);
}
