import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { createAgent, SkeinError } from "../index.ts";
import type { McpServer } from "../mcp/index.ts";
import { runDemo } from "./demo.ts";
import type { DevFlags } from "./dev/command.ts";
import type { EnqueueFlags } from "./enqueue.ts";
import { CliError } from "./failure.ts";
import { oneLine } from "./format.ts";
import {
  DATABASE_URL_HELP,
  DEV_HELP,
  ENQUEUE_HELP,
  ENVIRONMENT,
  SESSIONS_HELP,
  WORKER_HELP,
} from "./help.ts";
import { askForMcpCalls, chooseMcpServers, mcpCallAllowed, readMcpConfig } from "./mcp.ts";
import {
  agentsOption,
  apiOption,
  collect,
  parseConcurrency,
  parsePort,
  parseTurns,
  parseURL,
  providerOption,
  skillsOption,
  userSkillsOption,
} from "./options.ts";
import { projectSecret, SECRET_READ_DENY } from "./project-dir.ts";
import {
  cliSystemPrompt,
  type ProviderFlags,
  type ProviderName,
  resolveProvider,
} from "./provider.ts";
import { createRenderer, type Renderer } from "./render.ts";
import { runAgent } from "./run-agent.ts";
import {
  type CliStore,
  listSessions,
  openCliStore,
  pickSession,
  requireCliStore,
} from "./sessions.ts";
import { type SkillFlags, skillOptions } from "./skills.ts";
import { printError, processTerminal, type Terminal } from "./terminal.ts";
import type { WorkerFlags } from "./worker.ts";

interface RunFlags extends ProviderFlags, SkillFlags {
  maxTurns?: number;
  json?: boolean;
  allow?: string[];
  deny?: string[];
  continue?: boolean;
  resume?: string;
  mcpServer?: string[];
}

/**
 * Parses `argv` (without `node` and the script) and runs the command. Resolves with the exit
 * code; never throws: every failure becomes one line on stderr.
 */
export async function runCli(
  argv: readonly string[],
  terminal: Terminal = processTerminal(),
): Promise<number> {
  let exitCode = 0;
  const program = new Command("skein")
    .description("Run a skein agent on a prompt, in the current directory.")
    .version(packageVersion(), "-V, --version")
    .argument(
      "[prompt...]",
      "what to ask (read from stdin when not given and stdin is not a terminal)",
    )
    .addOption(providerOption())
    .addOption(apiOption())
    .option(
      "-m, --model <id>",
      "the model id, such as claude-sonnet-4-6, gpt-4o or openai:qwen3 (default: the provider's)",
    )
    .option(
      "--base-url <url>",
      "the API's base URL (default: $ANTHROPIC_BASE_URL / $OPENAI_BASE_URL, else the provider's)",
      parseURL,
    )
    .option("--max-turns <n>", "model calls at most (default 100)", parseTurns)
    .option(
      "--allow <rule>",
      'a permission rule to allow, such as "Bash(npm test)" (repeatable)',
      collect,
    )
    .option(
      "--deny <rule>",
      'a permission rule to deny, such as "Read(.env)" (repeatable)',
      collect,
    )
    .option("--json", "print the event stream as NDJSON on stdout, one event a line")
    .option(
      "-c, --continue",
      "continue the most recent session (resuming its unfinished run first)",
    )
    .option("-r, --resume <id>", "continue the session <id> (resuming its unfinished run first)")
    .option(
      "--mcp-server <name>",
      "start this MCP server of .mcp.json without asking (repeatable)",
      collect,
    )
    .addOption(skillsOption())
    .addOption(userSkillsOption())
    .addOption(agentsOption())
    .addHelpText("after", ENVIRONMENT)
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({ writeErr: (text) => terminal.stderr.write(text) })
    .action(async (words: string[], flags: RunFlags, command: Command) => {
      const continuing = flags.continue === true || flags.resume !== undefined;
      const prompt = await readPrompt(words, continuing);
      if (prompt === undefined && !continuing) {
        command.outputHelp({ error: true });
        exitCode = 1;
        return;
      }
      exitCode = await runPrompt(prompt, flags, terminal);
    });

  program
    .command("sessions")
    .description(
      "list the sessions logged in .skein/sessions.db (or, with --database-url, in Postgres), newest first",
    )
    .option("--json", "one JSON object per session and line")
    .option(
      "--database-url <url>",
      "list the sessions of this Postgres database instead (skein worker's), with queued and running runs",
    )
    .addHelpText("after", SESSIONS_HELP)
    .exitOverride()
    .configureOutput({ writeErr: (text) => terminal.stderr.write(text) })
    .action(async (flags: { json?: boolean; databaseUrl?: string }) => {
      exitCode = await listSessions({
        json: flags.json === true,
        terminal,
        ...(flags.databaseUrl !== undefined ? { databaseUrl: flags.databaseUrl } : {}),
      });
    });

  program
    .command("worker")
    .description(
      "run a worker: take the queued runs of the agents a module exports and run them (skein/pgboss)",
    )
    .option("--database-url <url>", DATABASE_URL_HELP)
    .requiredOption(
      "--agents <module>",
      "the module exporting the agents to serve: as default or as `agents`, an object of agents by name, or a function ({ boss, sessionStore }) => that object",
    )
    .option("--concurrency <n>", "runs at once in this process (default 1)", parseConcurrency)
    .addHelpText("after", WORKER_HELP)
    .exitOverride()
    .configureOutput({ writeErr: (text) => terminal.stderr.write(text) })
    .action(async (flags: WorkerFlags) => {
      const { runWorker } = await import("./worker.ts");
      exitCode = await runWorker(flags, terminal);
    });

  program
    .command("enqueue")
    .description("put a run on an agent's queue for a worker; prints its session and run ids")
    .argument(
      "[prompt...]",
      "what to ask (read from stdin when not given and stdin is not a terminal)",
    )
    .option("--database-url <url>", DATABASE_URL_HELP)
    .requiredOption("--agent <name>", "the agent to run, as the worker's agents module names it")
    .option("--session <id>", "continue this session (its last run must have ended)")
    .option("--wait", "wait for the run to end and print its answer")
    .addHelpText("after", ENQUEUE_HELP)
    .exitOverride()
    .configureOutput({ writeErr: (text) => terminal.stderr.write(text) })
    .action(async (words: string[], flags: EnqueueFlags, command: Command) => {
      const prompt = await readPrompt(
        words,
        false,
        `skein enqueue --agent ${flags.agent} "summarise the notes"`,
      );
      if (prompt === undefined) {
        command.outputHelp({ error: true });
        exitCode = 1;
        return;
      }
      const { runEnqueue } = await import("./enqueue.ts");
      exitCode = await runEnqueue(prompt, flags, terminal);
    });

  program
    .command("dev")
    .description(
      "open the inspector: a local web page over the logged sessions (runs, approvals, fork, rewind)",
    )
    .option(
      "--database-url <url>",
      "show the sessions of this Postgres database instead of .skein/sessions.db",
    )
    .option("--port <n>", "the port on 127.0.0.1 (default: a free one)", parsePort)
    .addOption(providerOption())
    .addOption(apiOption())
    .option("-m, --model <id>", "the model that resumes approved runs (as for skein)")
    .option("--base-url <url>", "the API's base URL (as for skein)", parseURL)
    .option("--max-turns <n>", "model calls at most per resumed run (as for skein)", parseTurns)
    .option("--allow <rule>", "a permission rule to allow in resumed runs (repeatable)", collect)
    .option("--deny <rule>", "a permission rule to deny in resumed runs (repeatable)", collect)
    .option("--mcp-server <name>", "start this MCP server of .mcp.json (repeatable)", collect)
    .addOption(skillsOption())
    .addOption(userSkillsOption())
    .addOption(agentsOption())
    .addHelpText("after", DEV_HELP)
    .exitOverride()
    .configureOutput({ writeErr: (text) => terminal.stderr.write(text) })
    .action(async (flags: DevFlags) => {
      const { runDev } = await import("./dev/command.ts");
      exitCode = await runDev(flags, terminal);
    });

  program
    .command("demo")
    .description(
      "run an example agent offline: skein's mock server plays the model (no key, no network)",
    )
    .addOption(providerOption())
    .option("--json", "print the event stream as NDJSON on stdout, one event a line")
    .exitOverride()
    .configureOutput({ writeErr: (text) => terminal.stderr.write(text) })
    .action(async (_flags: unknown, command: Command) => {
      // `skein --json demo` and `skein demo --json` alike: the program's options count too.
      const flags = command.optsWithGlobals<{ provider?: ProviderName; json?: boolean }>();
      exitCode = await runDemo({
        provider: flags.provider ?? "anthropic",
        json: flags.json === true,
        terminal,
      });
    });

  try {
    await program.parseAsync(argv, { from: "user" });
    return exitCode;
  } catch (error) {
    // Commander has already printed its own message (usage errors), or this is --help / --version.
    if (error instanceof CommanderError) return error.exitCode;
    printError(terminal, messageOf(error));
    return 1;
  }
}

async function runPrompt(
  prompt: string | undefined,
  flags: RunFlags,
  terminal: Terminal,
): Promise<number> {
  const provider = resolveProvider(flags);
  const continuing = flags.continue === true || flags.resume !== undefined;
  const cli = continuing
    ? await requireCliStore(process.cwd())
    : await optionalStore(terminal, flags);
  try {
    const session = cli && continuing ? await pickSession(cli, flags) : undefined;
    const renderer = createRenderer({ json: flags.json === true, terminal });
    if (!flags.json) {
      renderer.notice(
        terminal.colors.dim(
          `skein · ${provider.name}${provider.api ? ` (${provider.api})` : ""} ${provider.modelId} at ${provider.baseURL}`,
        ),
      );
    }
    const mcp = await mcpServersFor(flags, terminal, renderer);
    if (mcp === "interrupted") {
      printError(terminal, "interrupted.");
      return 130;
    }
    const named = skillOptions(flags, process.cwd());
    const agent = createAgent({
      model: provider.model,
      ...(named.skills ? { skills: named.skills } : {}),
      ...(named.tools.length > 0 ? { tools: named.tools } : {}),
      systemPrompt: cliSystemPrompt(process.cwd()),
      ...(flags.maxTurns !== undefined ? { maxTurns: flags.maxTurns } : {}),
      permissions: {
        allow: flags.allow ?? [],
        deny: [...(flags.deny ?? []), ...(cli ? [SECRET_READ_DENY] : [])],
      },
      // Its paused runs resume in the next command: seals with the project's key, not the process's.
      ...(cli ? { sessionStore: cli.store, approvalSecret: projectSecret(process.cwd()) } : {}),
      ...(mcp
        ? {
            mcpServers: mcp,
            hooks: { beforeToolCall: askForMcpCalls(flags.allow ?? []) },
          }
        : {}),
    });
    try {
      return await runAgent({
        agent,
        ...(prompt !== undefined ? { prompt } : {}),
        ...(session ? { session: { ...session, path: cli!.path } } : {}),
        mcpAllowed: mcpCallAllowed(flags.allow ?? []),
        logged: cli !== undefined,
        json: flags.json === true,
        renderer,
        terminal,
        failure: {
          provider: provider.name,
          modelId: provider.modelId,
          ...(flags.maxTurns !== undefined ? { maxTurns: flags.maxTurns } : {}),
        },
      });
    } finally {
      // The MCP servers' processes end with the command.
      if (mcp) await agent.close();
    }
  } finally {
    await cli?.store.close();
  }
}

/**
 * The MCP servers of the workspace's .mcp.json this run may start (named with --mcp-server, or
 * approved on the terminal), after saying which do not start; undefined when there are none.
 */
async function mcpServersFor(
  flags: RunFlags,
  terminal: Terminal,
  renderer: Renderer,
): Promise<Record<string, McpServer> | undefined | "interrupted"> {
  const config = await readMcpConfig(process.cwd());
  const named = flags.mcpServer ?? [];
  if (!config && named.length === 0) return undefined;
  const controller = new AbortController();
  const choice = await chooseMcpServers(config, named, {
    terminal,
    signal: controller.signal,
    onInterrupt: () => controller.abort(),
  });
  if (choice.interrupted) return "interrupted";
  // Said even with --json (on stderr): which servers of the workspace's file did not start.
  for (const notice of choice.notices) renderer.notice(terminal.colors.yellow(`skein · ${notice}`));
  return Object.keys(choice.servers).length > 0 ? choice.servers : undefined;
}

/** The workspace's store for a plain run; without the driver, the run goes on unlogged. */
async function optionalStore(terminal: Terminal, flags: RunFlags): Promise<CliStore | undefined> {
  const opened = await openCliStore(process.cwd());
  if ("store" in opened) return opened.store;
  if (!flags.json)
    terminal.stderr.write(`${terminal.colors.dim(`skein · not logging this run: ${opened.missing}`)}
`);
  return undefined;
}

/**
 * The words given, or stdin when none were and stdin is not a terminal; undefined to show the
 * help (or, when continuing a session, to resume it without a new prompt).
 */
async function readPrompt(
  words: string[],
  continuing: boolean,
  example = 'skein "hello", or try skein demo',
): Promise<string | undefined> {
  let prompt = words.join(" ");
  if (words.length === 0) {
    if (process.stdin.isTTY || continuing) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    prompt = Buffer.concat(chunks).toString("utf8");
  }
  if (prompt.trim() === "") throw new CliError(`the prompt is empty; pass one, such as ${example}`);
  return prompt;
}

/** One readable line, never a stack: our own errors and skein's say what to do. */
function messageOf(error: unknown): string {
  if (error instanceof CliError || SkeinError.isInstance(error)) return oneLine(error.message);
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return `unexpected error: ${oneLine(text)}`;
}

function packageVersion(): string {
  try {
    const url = new URL("../../package.json", import.meta.url);
    return (JSON.parse(readFileSync(url, "utf8")) as { version: string }).version;
  } catch {
    return "unknown";
  }
}
