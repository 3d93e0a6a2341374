import {
  AbortError,
  type Agent,
  type AgentEvent,
  type Prompt,
  type SDKResultMessage,
} from "../index.ts";
import { askApprovals } from "./approve.ts";
import { CliError, describeFailure, type FailureContext } from "./failure.ts";
import { watchInterrupts } from "./interrupt.ts";
import type { Renderer } from "./render.ts";
import { printError, type Terminal } from "./terminal.ts";

export interface AgentRun {
  agent: Agent;
  /** What to ask; none when a session is only resumed. */
  prompt?: Prompt;
  /** The session `--continue` / `--resume` named; its unfinished run is resumed first. */
  session?: { id: string; status: "idle" | "paused" | "interrupted"; path: string };
  /** The agent logs to a session store: resume by session, and print the session id at the end. */
  logged: boolean;
  /** `--json`: the session id is in the result event, and stderr stays quiet. */
  json?: boolean;
  renderer: Renderer;
  terminal: Terminal;
  failure: FailureContext;
}

/**
 * Runs the agent to its end and returns the exit code: 0 on success; 1 with one line saying why
 * for any other result; 130 (143 for SIGTERM) when interrupted, after the started tools settled.
 */
export async function runAgent(run: AgentRun): Promise<number> {
  const { renderer, terminal } = run;
  const interrupts = watchInterrupts(() =>
    renderer.notice(
      terminal.colors.yellow(
        "stopping: waiting for running tools to finish (Ctrl-C again to quit now)",
      ),
    ),
  );
  try {
    const result = await streamRun(run, interrupts.signal);
    renderer.close();
    // Where to find this conversation again (`--json` has it in the result event).
    if (run.logged && !run.json)
      renderer.notice(terminal.colors.dim(`session ${result.sessionId}`));
    const failure = describeFailure(result, run.failure);
    if (failure === undefined) return 0;
    printError(terminal, failure);
    return 1;
  } catch (error) {
    renderer.close();
    if (error instanceof AbortError && interrupts.exitCode !== undefined) {
      if (!interrupts.pipeClosed) printError(terminal, "interrupted.");
      return interrupts.exitCode;
    }
    throw error;
  } finally {
    interrupts.dispose();
  }
}

/**
 * Resumes the named session's unfinished run first (paused calls are asked on the terminal,
 * interrupted ones recovered), then runs the prompt in it, if there is one.
 */
async function streamRun(run: AgentRun, signal: AbortSignal): Promise<SDKResultMessage> {
  const session = run.session;
  let resumed: SDKResultMessage | undefined;
  if (session && session.status !== "idle") {
    resumed = await drive(
      run,
      run.agent.resumeStream({ sessionId: session.id }, { signal }),
      signal,
    );
    if (resumed.subtype !== "success" || run.prompt === undefined) return resumed;
  }
  if (run.prompt === undefined)
    throw new CliError(
      `session ${session?.id ?? ""} has no unfinished run to resume; give a prompt to continue it.`,
    );
  const options = session ? { signal, sessionId: session.id } : { signal };
  return drive(run, run.agent.stream(run.prompt, options), signal);
}

/** Streams through the renderer; a run paused for approvals resumes when `askApprovals` decides. */
async function drive(
  run: AgentRun,
  stream: AsyncIterable<AgentEvent>,
  signal: AbortSignal,
): Promise<SDKResultMessage> {
  let events = stream;
  while (true) {
    const result = await render(events, run.renderer);
    const pending = result.pending ?? [];
    if (result.subtype !== "paused" || !result.state || pending.length === 0) return result;
    if (pending.some((call) => call.reason !== "approval")) return result;
    const approvals = await askApprovals(pending, { terminal: run.terminal, signal });
    if (approvals === undefined) return result;
    // A logged run resumes from its store, where the paused state was written.
    const target = run.logged ? { sessionId: result.sessionId } : result.state;
    events = run.agent.resumeStream(target, { approvals, signal });
  }
}

async function render(
  events: AsyncIterable<AgentEvent>,
  renderer: Renderer,
): Promise<SDKResultMessage> {
  let result: SDKResultMessage | undefined;
  for await (const event of events) {
    renderer.event(event);
    if (event.type === "result") result = event as SDKResultMessage;
  }
  // The stream always ends with its result (or throws): a stream without one is a defect.
  if (!result) throw new Error("The run's event stream ended without a result event.");
  return result;
}
