import {
  AbortError,
  type Agent,
  type AgentEvent,
  type Prompt,
  type SDKResultMessage,
} from "../index.ts";
import { askApprovals } from "./approve.ts";
import { describeFailure, type FailureContext } from "./failure.ts";
import { watchInterrupts } from "./interrupt.ts";
import type { Renderer } from "./render.ts";
import { printError, type Terminal } from "./terminal.ts";

export interface AgentRun {
  agent: Agent;
  prompt: Prompt;
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

/** Streams the run through the renderer; a run paused for approvals resumes when `askApprovals` decides. */
async function streamRun(run: AgentRun, signal: AbortSignal): Promise<SDKResultMessage> {
  let events = run.agent.stream(run.prompt, { signal });
  while (true) {
    const result = await render(events, run.renderer);
    const pending = result.pending ?? [];
    if (result.subtype !== "paused" || !result.state || pending.length === 0) return result;
    if (pending.some((call) => call.reason !== "approval")) return result;
    const approvals = await askApprovals(pending, { terminal: run.terminal, signal });
    if (approvals === undefined) return result;
    events = run.agent.resumeStream(result.state, { approvals, signal });
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
