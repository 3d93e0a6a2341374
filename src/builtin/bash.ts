/**
 * The Bash, BashOutput and KillShell built-in tools: what the model sees (names, descriptions,
 * schemas, result texts) and how a call flows through the shell machinery in `./shell/`. A Bash
 * call takes the agent's shell session lock, starts in the session's working directory, runs in
 * the foreground to its end (or time cap) or as a background shell, and reports the output, the
 * exit status and notes; BashOutput and KillShell read and stop those background shells.
 */
import type { ToolDefinition, ToolResult } from "../tools/types.ts";
import { BuiltinToolError, defineBuiltin } from "./define.ts";
import type { BuiltinEnvironment } from "./environment.ts";
import {
  compileFilter,
  FILTER_LINE_CHARS,
  FILTER_TIMEOUT_MS,
  filterLines,
} from "./shell/filter.ts";
import {
  backgroundOf,
  describeStatus,
  findShell,
  startBackground,
  untilGone,
} from "./shell/jobs.ts";
import { prepareSandbox, shellRun } from "./shell/launch.ts";
import {
  OUTPUT_HEAD_CHARS,
  OUTPUT_TAIL_CHARS,
  OutputBuffer,
  trimTrailingNewlines,
} from "./shell/output.ts";
import { runShell, type ShellOutcome } from "./shell/process.ts";
import { exclusive, keepCwd, sessionOf, startingCwd } from "./shell/session.ts";

export { OUTPUT_HEAD_CHARS, OUTPUT_TAIL_CHARS, OutputBuffer } from "./shell/output.ts";
export { runShell, type ShellOutcome, type ShellRun } from "./shell/process.ts";

export const DEFAULT_TIMEOUT_MS = 120_000;
export const MAX_TIMEOUT_MS = 600_000;

export interface BashInput {
  command: string;
  timeout?: number;
  description?: string;
  run_in_background?: boolean;
}

const BASH_DESCRIPTION = `Runs a shell command with /bin/bash and returns its output (stdout and stderr together).
- The working directory persists between calls (cd sub, then later commands run in sub); it never leaves the workspace.
- timeout is in milliseconds: default ${DEFAULT_TIMEOUT_MS}, at most ${MAX_TIMEOUT_MS}. On timeout the whole process tree is killed.
- stdin is closed: commands that read input get end-of-file at once. Use non-interactive flags.
- Long output keeps the first ${OUTPUT_HEAD_CHARS} and last ${OUTPUT_TAIL_CHARS} characters.
- run_in_background: true starts the command and returns a bash_id at once; read its output with BashOutput and stop it with KillShell.
- A non-zero exit code is reported as an error with the output's tail.`;

export function bashTool(env: BuiltinEnvironment): ToolDefinition<BashInput> {
  return defineBuiltin<BashInput>({
    name: "Bash",
    description: BASH_DESCRIPTION,
    schema: {
      type: "object",
      properties: {
        command: { type: "string", description: "The command to execute" },
        timeout: {
          type: "number",
          description: `Optional timeout in milliseconds (default ${DEFAULT_TIMEOUT_MS}, max ${MAX_TIMEOUT_MS})`,
        },
        description: {
          type: "string",
          description: "Clear, concise description of what this command does in 5-10 words",
        },
        run_in_background: {
          type: "boolean",
          description:
            "Set to true to run this command in the background. Use BashOutput to read the output later.",
        },
      },
      required: ["command"],
      additionalProperties: false,
    },
    security: { network: "unrestricted", filesystem: "unrestricted", sideEffects: "external" },
    concurrencySafe: false,
    permission: { kind: "bash", command: (input) => input.command },
    async handler(input, context) {
      if (!input.command.trim()) throw new BuiltinToolError("The command is empty.");
      const timeoutMs = Math.min(
        MAX_TIMEOUT_MS,
        Math.max(1, Math.round(input.timeout ?? DEFAULT_TIMEOUT_MS)),
      );
      // Refuse before anything runs when the preset's sandbox is missing.
      const sandbox = await prepareSandbox(env);
      const session = sessionOf(env);
      const result = await exclusive(session, context.signal, async (): Promise<ToolResult> => {
        const notes: string[] = [];
        const cwd = startingCwd(env, session, notes);
        const run = shellRun(sandbox, input.command, cwd);
        if (input.run_in_background) {
          const id = startBackground(backgroundOf(env, context), run, input.description);
          return {
            content: [
              `Command running in the background with bash_id ${id}.`,
              `Read its output with BashOutput { "bash_id": "${id}" }; stop it with KillShell { "shell_id": "${id}" }.`,
              ...notes,
            ].join("\n"),
            details: { bashId: id, cwd, sandboxed: sandbox !== undefined },
          };
        }
        const output = new OutputBuffer();
        const outcome = await runShell({ ...run, signal: context.signal, timeoutMs, output });
        keepCwd(env, session, outcome, notes);
        return foregroundResult(outcome, output, timeoutMs, notes, {
          cwd: session.cwd ?? env.workspace.root,
          sandboxed: sandbox !== undefined,
        });
      });
      return result ?? { content: "The command was not run: the call was aborted.", isError: true };
    },
  });
}

export interface BashOutputInput {
  bash_id: string;
  filter?: string;
}

export function bashOutputTool(env: BuiltinEnvironment): ToolDefinition<BashOutputInput> {
  return defineBuiltin<BashOutputInput>({
    name: "BashOutput",
    description: `Returns the new output of a background Bash command since the last BashOutput for it, and its status (running, exited with code N, killed). filter: an optional regular expression; only matching lines are returned (the others are consumed). Keep the pattern simple: matching stops with an error after ${FILTER_TIMEOUT_MS} ms, and only the first ${FILTER_LINE_CHARS} characters of a line are tested.`,
    schema: {
      type: "object",
      properties: {
        bash_id: { type: "string", description: "The id of the background shell" },
        filter: {
          type: "string",
          description: "Optional regular expression; only output lines matching it are shown",
        },
      },
      required: ["bash_id"],
      additionalProperties: false,
    },
    security: { network: "none", filesystem: "none", sideEffects: "none" },
    concurrencySafe: true,
    permission: { kind: "none" },
    async handler(input, context) {
      const { task, shell } = findShell(backgroundOf(env, context), input.bash_id);
      const filter = input.filter === undefined ? undefined : compileFilter(input.filter);
      const total = shell.output.total;
      let text = shell.output.since(shell.read);
      // A filter that takes too long throws before the output counts as read.
      if (filter) text = filterLines(text, filter);
      shell.read = total;
      const status =
        task.status === "stopped"
          ? "killed (KillShell)"
          : task.status === "running"
            ? "running"
            : describeStatus(shell.outcome);
      return {
        content: `Status: ${status}\n${trimTrailingNewlines(text) || "(no new output)"}`,
        details: { bashId: input.bash_id, status, exitCode: shell.outcome?.exitCode ?? null },
      };
    },
  });
}

export interface KillShellInput {
  shell_id: string;
}

export function killShellTool(env: BuiltinEnvironment): ToolDefinition<KillShellInput> {
  return defineBuiltin<KillShellInput>({
    name: "KillShell",
    description:
      "Stops a background Bash command started with run_in_background, killing its whole process tree.",
    schema: {
      type: "object",
      properties: {
        shell_id: { type: "string", description: "The id of the background shell to kill" },
      },
      required: ["shell_id"],
      additionalProperties: false,
    },
    security: { network: "none", filesystem: "none", sideEffects: "external" },
    concurrencySafe: false,
    permission: { kind: "none" },
    async handler(input, context) {
      const registry = backgroundOf(env, context);
      const { shell } = findShell(registry, input.shell_id);
      if (!registry.stop(input.shell_id)) {
        return `Shell ${input.shell_id} is not running (${describeStatus(shell.outcome)}).`;
      }
      await untilGone(shell);
      return `Killed shell ${input.shell_id}.`;
    },
  });
}

/** The Bash result: a head line for failures, the output, then the notes. */
function foregroundResult(
  outcome: ShellOutcome,
  output: OutputBuffer,
  timeoutMs: number,
  notes: string[],
  details: Record<string, unknown>,
): ToolResult {
  const text = trimTrailingNewlines(output.text());
  const removed = outcome.removedProtected ?? [];
  const withNotes = (head: string, body: string): string =>
    [head, body, ...removed, ...notes].filter((part) => part !== "").join("\n");
  const resultDetails = {
    ...details,
    exitCode: outcome.exitCode,
    signal: outcome.signal,
    timedOut: outcome.timedOut,
    outputChars: output.total,
    truncated: output.truncated,
    ...(removed.length > 0 ? { removedProtected: removed } : {}),
  };
  let head: string | undefined;
  if (outcome.spawnError) head = `The command could not be started: ${outcome.spawnError}`;
  else if (outcome.timedOut)
    head = `Command timed out after ${timeoutMs} ms; it and every process it started were killed. Output so far:`;
  else if (outcome.aborted)
    head = "Command was aborted; it and every process it started were killed.";
  else if (outcome.signal) head = `Command was killed by signal ${outcome.signal}.`;
  else if (outcome.exitCode !== 0) head = `Exit code ${outcome.exitCode}`;
  if (head !== undefined || removed.length > 0) {
    return { content: withNotes(head ?? "", text), isError: true, details: resultDetails };
  }
  return { content: withNotes("", text || "(no output)"), details: resultDetails };
}
