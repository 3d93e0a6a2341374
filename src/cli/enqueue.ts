// `skein enqueue`: puts a run on an agent's queue (skein/pgboss's enqueueRun) and prints its
// session and run ids; with --wait, waits for a worker to run it and prints the answer.

import type { SDKResultMessage } from "../index.ts";
import { boardOf } from "../pgboss/board.ts";
import { enqueueRun } from "../pgboss/enqueue.ts";
import { waitForRun } from "../pgboss/follow.ts";
import { queueOf } from "../pgboss/queue.ts";
import { isValidSessionId } from "../sessions/validate.ts";
import { connectionError, databaseUrl, openDatabase, requireQueueSecret } from "./database.ts";
import { CliError } from "./failure.ts";
import { oneLine } from "./format.ts";
import { watchInterrupts } from "./interrupt.ts";
import { printError, type Terminal } from "./terminal.ts";

export interface EnqueueFlags {
  databaseUrl?: string;
  agent: string;
  session?: string;
  wait?: boolean;
}

/** How recently a worker must have served the agent for the run not to be said to wait. */
const SERVED_WITHIN_MS = 60_000;

/**
 * Enqueues the prompt for `flags.agent`. Without --wait: `session <id>` and `run <id>` on stdout,
 * exit 0. With --wait: those on stderr, the answer on stdout; 1 when the run did not succeed,
 * 130 (143 for SIGTERM) when the wait is interrupted (the run goes on).
 */
export async function runEnqueue(
  prompt: string,
  flags: EnqueueFlags,
  terminal: Terminal,
): Promise<number> {
  const url = databaseUrl(flags.databaseUrl, "enqueue", process.env);
  try {
    queueOf("--agent", flags.agent);
  } catch {
    throw new CliError(
      `--agent ${JSON.stringify(flags.agent)} is not an agent's name: 1-100 characters from A-Z, a-z, 0-9, "_", "." and "-", as the worker's agents module names it.`,
    );
  }
  if (flags.session !== undefined && !isValidSessionId(flags.session))
    throw new CliError(
      `--session ${JSON.stringify(flags.session)} is not a session id: 1-128 characters from A-Z, a-z, 0-9, ".", "_", ":" and "-".`,
    );
  requireQueueSecret("enqueue");
  const notice = (line: string) =>
    terminal.stderr.write(`${terminal.colors.dim(`skein · ${line}`)}\n`);
  const database = await openDatabase(url, {
    command: "enqueue",
    worker: false,
    onError: () => {}, // a failure that matters rejects the call that met it
  });
  try {
    const run = await enqueueRun(database.boss, {
      agent: flags.agent,
      prompt,
      sessionStore: database.store,
      ...(flags.session !== undefined ? { sessionId: flags.session } : {}),
    }).catch((error: unknown) => {
      throw connectionError(url, error);
    });
    const ids = `session ${run.sessionId}\nrun ${run.runId}\n`;
    if (flags.wait) terminal.stderr.write(terminal.colors.dim(ids));
    else terminal.stdout.write(ids);
    const served = await boardOf("skein enqueue", database.store)
      .servedAgents(SERVED_WITHIN_MS)
      .catch(() => undefined);
    if (served && !served.has(flags.agent))
      terminal.stderr.write(
        `${terminal.colors.yellow(`skein · no worker has served "${flags.agent}" in the last minute: the run waits on the queue until one does (start one with skein worker)`)}\n`,
      );
    if (!flags.wait) return 0;
    return await waitFor(run.sessionId, run.runId, database.store, terminal, notice);
  } finally {
    await database.close();
  }
}

async function waitFor(
  sessionId: string,
  runId: string,
  store: Parameters<typeof waitForRun>[0],
  terminal: Terminal,
  notice: (line: string) => void,
): Promise<number> {
  const interrupts = watchInterrupts(() =>
    notice(`stopped waiting; the run goes on (skein sessions --database-url ... shows it)`),
  );
  try {
    const result = await waitForRun(store, sessionId, { runId, signal: interrupts.signal });
    const failure = describeResult(result);
    if (failure === undefined) {
      if (result.result !== "") terminal.stdout.write(`${result.result}\n`);
      return 0;
    }
    printError(terminal, failure);
    return 1;
  } catch (error) {
    if (interrupts.exitCode !== undefined) return interrupts.exitCode;
    if ((error as Error).name === "AbortError")
      throw new CliError(`the run was cancelled (session ${sessionId}).`);
    throw error;
  } finally {
    interrupts.dispose();
  }
}

/** Why a run that a worker ended did not succeed, as one line; undefined on success. */
export function describeResult(result: SDKResultMessage): string | undefined {
  switch (result.subtype) {
    case "success":
      return undefined;
    case "error_max_turns":
      return `the run stopped after ${result.numTurns} turns without a final answer (the agent's maxTurns).`;
    case "paused": {
      const pending = result.pending ?? [];
      return `the run paused: ${pending.length} tool call(s) (${pending.map((call) => call.name).join(", ")}) wait for approval or for the app; continue it with resumeRun() of skein/pgboss (session ${result.sessionId}).`;
    }
    case "error_during_execution": {
      const error = result.error;
      if (!error) return "the run failed without saying why.";
      return `the run failed: ${error.name}: ${oneLine(error.message).replace(/\.$/, "")}.`;
    }
  }
}
