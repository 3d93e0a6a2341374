// `skein worker`: a worker process for the agents a module exports (skein/pgboss's createWorker
// on pg-boss and the Postgres session store of one database), until SIGINT or SIGTERM.

import { createWorker } from "../pgboss/worker.ts";
import { loadAgentsModule } from "./agents-module.ts";
import {
  connectionError,
  databaseUrl,
  openDatabase,
  redactUrl,
  requireQueueSecret,
} from "./database.ts";
import { oneLine } from "./format.ts";
import { watchInterrupts } from "./interrupt.ts";
import type { Terminal } from "./terminal.ts";

export interface WorkerFlags {
  databaseUrl?: string;
  agents: string;
  concurrency?: number;
}

/** How long a stopping worker waits for its running runs before it aborts them. */
export const STOP_TIMEOUT_MS = 30_000;

/**
 * Runs the worker until a signal, then stops it (running runs finish, up to STOP_TIMEOUT_MS; what
 * is left is recovered by the next worker, as after a crash) and returns 0. A second signal exits
 * at once (130 for Ctrl-C, 143 for SIGTERM).
 */
export async function runWorker(flags: WorkerFlags, terminal: Terminal): Promise<number> {
  const url = databaseUrl(flags.databaseUrl, "worker", process.env);
  const { pgBossClass } = await import("../pgboss/peers.ts");
  pgBossClass("skein worker"); // the peers first: their error names what to install
  requireQueueSecret("worker");
  const agentsModule = await loadAgentsModule(flags.agents, process.cwd());
  const log = (line: string) =>
    terminal.stderr.write(`${terminal.colors.dim(`skein · ${line}`)}\n`);
  const warn = (line: string) =>
    terminal.stderr.write(`${terminal.colors.yellow(`skein · ${line}`)}\n`);
  const report = (what: string) => (error: Error) =>
    warn(`${what}: ${oneLine(`${error.name}: ${error.message}`)}`);
  const database = await openDatabase(url, {
    command: "worker",
    worker: true,
    onError: report("pg-boss error"),
  });
  try {
    const agents = await agentsModule.agents({ boss: database.boss, sessionStore: database.store });
    const worker = await createWorker(database.boss, {
      sessionStore: database.store,
      agents,
      ...(flags.concurrency !== undefined ? { concurrency: flags.concurrency } : {}),
      onError: report("worker error"),
    }).catch((error: unknown) => {
      throw connectionError(url, error);
    });
    // The handlers stay until the process exits: a second signal exits at once.
    const stopping = new Promise<void>((resolve) =>
      watchInterrupts(() => {
        warn(
          `stopping: waiting for ${worker.running} running run(s) to finish (up to ${STOP_TIMEOUT_MS / 1000} s; a second signal quits at once)`,
        );
        resolve();
      }),
    );
    terminal.stdout.write(
      `worker ${worker.id} ready: agents ${Object.keys(agents).join(", ")}; concurrency ${flags.concurrency ?? 1}; database ${redactUrl(url)}\n`,
    );
    await stopping;
    await worker.stop({ timeoutMs: STOP_TIMEOUT_MS });
    log(`worker ${worker.id} stopped`);
    return 0;
  } finally {
    // pg-boss keeps sockets open for seconds after stop(): the command exits explicitly (main.ts).
    await database.close();
  }
}
