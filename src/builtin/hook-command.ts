// `commandHook(command)`: a hook that runs a shell command in Claude Code's hook format
// (design/policy.md), so the hook scripts a team already has work unchanged.

import { ConfigurationError, HookError } from "../core/errors.ts";
import { type HookCall, type HookName, markCommandHook } from "../run/hooks.ts";
import { scrubbedEnvironment } from "./shell-env.ts";

export interface CommandHookOptions {
  /** The directory the command runs in, and the `cwd` it is told; default `process.cwd()`. */
  cwd?: string;
}

/** Claude Code's event name for each skein hook a command may serve. */
const EVENT_NAMES: Partial<Record<HookName, string>> = {
  beforeToolCall: "PreToolUse",
  afterToolCall: "PostToolUse",
  onToolResult: "PostToolUse",
  userPromptSubmit: "UserPromptSubmit",
  stop: "Stop",
  sessionStart: "SessionStart",
  sessionEnd: "SessionEnd",
  preCompact: "PreCompact",
  subagentStart: "SubagentStart",
  subagentStop: "SubagentStop",
};

/** The hooks a command hook can serve (every one but `beforeModelCall`). */
export const COMMAND_HOOK_EVENTS: readonly HookName[] = Object.keys(EVENT_NAMES) as HookName[];

/** What a command's run came to. */
interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * A hook that runs `command` with `sh -c`: the hook's input as JSON on stdin (`hook_event_name`,
 * `session_id`, `cwd`, and per event `tool_name`, `tool_input`, `tool_response`, `prompt`, ...),
 * its decision from its exit code and stdout. Exit 2 blocks with stderr as the reason; exit 0 may
 * print JSON (`decision: "block"` + `reason`, or `hookSpecificOutput.permissionDecision`); any
 * other exit is a `HookError`. Refused under the hardened preset.
 */
export function commandHook(
  command: string,
  options: CommandHookOptions = {},
): (context: any, call?: HookCall) => Promise<any> {
  if (typeof command !== "string" || command.trim() === "")
    throw new ConfigurationError(
      'commandHook(command): give the shell command to run, such as commandHook("./hooks/check.sh").',
    );
  const cwd = options.cwd ?? process.cwd();
  const handler = async (context: Record<string, unknown>, given?: HookCall): Promise<unknown> => {
    const call = given ?? { event: "beforeToolCall" };
    const event = EVENT_NAMES[call.event];
    if (!event)
      throw new HookError(`commandHook(${JSON.stringify(command)}) cannot serve ${call.event}.`);
    const input = inputFor(event, context, cwd);
    const ran = await runCommand(command, cwd, JSON.stringify(input), call);
    return decisionOf(command, event, context, ran);
  };
  markCommandHook(handler);
  return handler;
}

function inputFor(event: string, context: Record<string, unknown>, cwd: string) {
  const input: Record<string, unknown> = {
    hook_event_name: event,
    session_id: context.sessionId ?? "",
    cwd,
  };
  if (event === "PreToolUse" || event === "PostToolUse") {
    input.tool_name = context.name;
    input.tool_input = context.input;
    input.tool_use_id = context.callId;
    if (event === "PostToolUse")
      input.tool_response = (context.result as { content?: unknown })?.content;
  }
  if (event === "UserPromptSubmit") input.prompt = context.prompt;
  if (event === "Stop" || event === "SubagentStop")
    input.stop_hook_active = context.stopHookActive === true;
  if (event === "SessionStart") input.source = context.source;
  if (event === "SessionEnd") input.reason = context.reason;
  if (event === "PreCompact") input.trigger = "auto";
  if (event === "SubagentStart" || event === "SubagentStop") input.agent_type = context.name;
  return input;
}

async function runCommand(
  command: string,
  cwd: string,
  stdin: string,
  call: HookCall,
): Promise<Ran> {
  // Loaded with the first command hook that runs: `import("skein")` starts no process machinery.
  const { spawn } = await import("node:child_process");
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", command], {
      cwd,
      env: scrubbedEnvironment(),
      stdio: ["pipe", "pipe", "pipe"],
      // Its own process group: a timeout or an abort ends the command and what it started.
      detached: true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {}
    };
    const abortSignal = call.signal;
    abortSignal?.addEventListener("abort", kill, { once: true });
    // Past the hook's timeout the hook fails (callHook); the command is ended then too.
    const timer = call.timeoutMs !== undefined ? setTimeout(kill, call.timeoutMs) : undefined;
    timer?.unref();
    const done = () => {
      if (timer) clearTimeout(timer);
      abortSignal?.removeEventListener("abort", kill);
    };
    child.on("error", (error) => {
      done();
      reject(
        new HookError(`commandHook(${JSON.stringify(command)}) could not start: ${error.message}`),
      );
    });
    child.on("close", (code) => {
      done();
      resolve({
        code,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
      });
    });
    // The hook may not read its input: a closed pipe is no failure.
    child.stdin.on("error", () => {});
    child.stdin.end(stdin);
  });
}

/** The exit code and stdout as the skein hook's answer. */
function decisionOf(
  command: string,
  event: string,
  context: Record<string, unknown>,
  ran: Ran,
): unknown {
  if (ran.code === 2) return blocking(event, ran.stderr.trim() || `the hook ${command} blocked it`);
  if (ran.code !== 0)
    throw new HookError(
      `commandHook(${JSON.stringify(command)}) exited with ${ran.code === null ? "a signal" : `code ${ran.code}`}${ran.stderr.trim() ? `: ${ran.stderr.trim().slice(0, 500)}` : ""}.`,
    );
  const text = ran.stdout.trim();
  let output: Record<string, unknown> | undefined;
  if (text.startsWith("{")) {
    try {
      const parsed = JSON.parse(text);
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) output = parsed;
    } catch {
      throw new HookError(
        `commandHook(${JSON.stringify(command)}) printed output that starts like JSON but is not JSON.`,
      );
    }
  }
  if (!output) {
    // Plain text from UserPromptSubmit is context for the model, as in Claude Code.
    if (event === "UserPromptSubmit" && text !== "")
      return { prompt: `${String(context.prompt)}\n\n${text}` };
    return undefined;
  }
  const reason = typeof output.reason === "string" ? output.reason : undefined;
  if (output.decision === "block")
    return blocking(event, reason ?? `the hook ${command} blocked it`);
  const specific = output.hookSpecificOutput as Record<string, unknown> | undefined;
  if (event === "PreToolUse" && specific) {
    const why =
      typeof specific.permissionDecisionReason === "string"
        ? specific.permissionDecisionReason
        : `the hook ${command} decided so`;
    if (specific.permissionDecision === "deny") return { block: true, reason: why };
    if (specific.permissionDecision === "ask") return { ask: why };
    // "allow" never widens skein's rules: the call goes on to them as without the hook.
    if (specific.updatedInput !== undefined) return { input: specific.updatedInput };
  }
  if (event === "UserPromptSubmit" && typeof specific?.additionalContext === "string")
    return { prompt: `${String(context.prompt)}\n\n${specific.additionalContext}` };
  return undefined;
}

/** What blocking means for each event. */
function blocking(event: string, reason: string): unknown {
  switch (event) {
    case "PreToolUse":
    case "UserPromptSubmit":
      return { block: true, reason };
    case "PostToolUse":
      return { result: { content: reason, isError: true } };
    case "Stop":
      // Claude Code's "block" of a stop: the model goes on, told why.
      return { continue: reason };
    case "PreCompact":
      return { veto: true };
    default:
      return undefined;
  }
}
