// `skein worker --agents ./agents.js`: the module that names the agents a worker serves.
//
// It exports them as its default export or as `agents`, either as an object of agents by name
// ({ researcher: defineAgent({ ... }) }) or as a function ({ boss, sessionStore }) => that object
// (or a promise of it), so the module can build what needs the worker's pg-boss or store, such as
// a pgBossMailbox(boss) for handoffs to agents on other machines.

import { statSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describeValue } from "../core/options.ts";
import type { SessionStore } from "../index.ts";
import type { PgBossLike, WorkerAgents } from "../pgboss/types.ts";
import { CliError } from "./failure.ts";
import { oneLine } from "./format.ts";

/** What a function export is given. */
export interface AgentsContext {
  boss: PgBossLike;
  sessionStore: SessionStore;
}

export interface AgentsModule {
  /** The module's file, resolved. */
  file: string;
  /** The agents by name (calling the module's function, when it exported one). */
  agents(context: AgentsContext): Promise<WorkerAgents>;
}

const RECORD = "an object of agents by name ({ researcher: defineAgent({ ... }) })";
const SHAPE = `${RECORD}, or a function ({ boss, sessionStore }) => such an object`;

/**
 * Imports the module at `spec` (relative to `cwd`) and checks what it exports: an export of the
 * wrong shape is an error here, before any connection is made (a function's result is checked
 * when it is called).
 */
export async function loadAgentsModule(spec: string, cwd: string): Promise<AgentsModule> {
  const file = path.resolve(cwd, spec);
  const where = `--agents ${spec}`;
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
  } catch {
    throw new CliError(
      `${where}: no such file (${file}); give the path of the module that exports the worker's agents, such as --agents ./agents.js.`,
    );
  }
  if (!isFile)
    throw new CliError(
      `${where} is a directory (${file}); give the module's file, such as ./agents.js.`,
    );
  let namespace: Record<string, unknown>;
  try {
    namespace = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new CliError(`${where} could not be loaded: ${loadFailure(error)}`);
  }
  const exported = namespace.agents !== undefined ? namespace.agents : namespace.default;
  if (exported === undefined) {
    const names = Object.keys(namespace).sort();
    throw new CliError(
      `${where} exports no agents (${names.length > 0 ? `it exports ${names.join(", ")}` : "it exports nothing"}); export as default or as "agents" ${SHAPE}.`,
    );
  }
  const label = namespace.agents !== undefined ? "its `agents` export" : "its default export";
  if (typeof exported === "function") {
    const build = exported as (context: AgentsContext) => unknown;
    return {
      file,
      async agents(context) {
        let value: unknown;
        try {
          value = await build(context);
        } catch (error) {
          throw new CliError(`${where}: ${label} (a function) failed: ${loadFailure(error)}`);
        }
        if (!isRecord(value))
          throw new CliError(
            `${where}: ${label} is a function that returned ${describeValue(value)}; it must return ${RECORD}.`,
          );
        return checkAgents(value, `${where}: ${label}`);
      },
    };
  }
  if (!isRecord(exported))
    throw new CliError(
      `${where}: ${label} must be ${SHAPE}; it is ${typeof (exported as { then?: unknown }).then === "function" ? "a promise" : describeValue(exported)}.`,
    );
  const agents = checkAgents(exported, `${where}: ${label}`);
  return { file, agents: async () => agents };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as { then?: unknown }).then !== "function"
  );
}

/** At least one agent by name, each an object (createWorker checks the rest). */
function checkAgents(value: Record<string, unknown>, what: string): WorkerAgents {
  const entries = Object.entries(value);
  if (entries.length === 0)
    throw new CliError(`${what} names no agent; name at least one for the worker to serve.`);
  for (const [name, agent] of entries)
    if (typeof agent !== "object" || agent === null || Array.isArray(agent))
      throw new CliError(
        `${what}: "${name}" is ${describeValue(agent)}, not an agent; give defineAgent({ ... }) or createAgent(...).`,
      );
  return value as WorkerAgents;
}

function loadFailure(error: unknown): string {
  if (!(error instanceof Error)) return oneLine(String(error));
  const code = (error as NodeJS.ErrnoException).code;
  const text = oneLine(`${error.name}: ${error.message}`);
  if (code === "ERR_UNKNOWN_FILE_EXTENSION")
    return `${text}. Compile it to JavaScript first, or start the command under a loader such as tsx (node --import tsx ...).`;
  return text;
}
