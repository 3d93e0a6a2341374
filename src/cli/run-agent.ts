import { emptyUsage } from "../core/messages.ts";
import {
  AbortError,
  type Agent,
  type AgentEvent,
  type PendingToolCall,
  type Prompt,
  type SDKResultMessage,
  type Steering,
} from "../index.ts";
import { type ApprovalOutcome, askApprovals } from "./approve.ts";
import { CliError, describeFailure, type FailureContext } from "./failure.ts";
import { printable } from "./format.ts";
import { type Interrupts, watchInterrupts } from "./interrupt.ts";
import { answerPaused, type PausedSession, stillPaused } from "./paused-session.ts";
import type { Renderer } from "./render.ts";
import { type KeyInput, TerminalSteering } from "./steer-input.ts";
import { RunTally } from "./tally.ts";
import { printError, type Terminal } from "./terminal.ts";

export interface AgentRun {
  agent: Agent;
  /** What to ask; none when a session is only resumed. */
  prompt?: Prompt;
  /** The session `--continue` / `--resume` named; its unfinished run is resumed first. */
  session?: {
    id: string;
    status: "idle" | "paused" | "interrupted";
    path: string;
    /** A paused session's waiting calls and transcript, as the store holds them. */
    paused?: PausedSession;
  };
  /** MCP calls an --allow rule names: a paused one is answered without asking. */
  mcpAllowed?: (name: string) => boolean;
  /** The agent logs to a session store: resume by session, and print the session id at the end. */
  logged: boolean;
  /** `--json`: the session id is in the result event, and stderr stays quiet. */
  json?: boolean;
  renderer: Renderer;
  terminal: Terminal;
  failure: FailureContext;
  /** Where typed steering lines come from; stdin by default (only when it is a terminal). */
  input?: KeyInput;
}

type AgentStream = AsyncIterable<AgentEvent> & Steering;

/** One command's run as it goes: what stops it, and what it has counted. */
interface Driving {
  run: AgentRun;
  interrupts: Interrupts;
  tally: RunTally;
  /** A question holds the terminal: nothing runs, so an interrupt has nothing to wait for. */
  asking: boolean;
  /** Why approvals could not be asked, for the paused result's message. */
  unasked?: string;
  /** Lines typed while the run streams (on an interactive terminal only). */
  steering?: TerminalSteering;
}

/**
 * Runs the agent to its end and returns the exit code: 0 on success; 1 with one line saying why
 * for any other result; 130 (143 for SIGTERM) when interrupted, after the started tools settled,
 * or at an approval question. The usage line comes once, for the whole run.
 */
export async function runAgent(run: AgentRun): Promise<number> {
  const { renderer, terminal } = run;
  const driving: Driving = {
    run,
    tally: new RunTally(),
    asking: false,
    interrupts: watchInterrupts(() => {
      if (!driving.asking)
        renderer.notice(
          terminal.colors.yellow(
            "stopping: waiting for running tools to finish (Ctrl-C again to quit now)",
          ),
        );
    }),
  };
  const { interrupts } = driving;
  if (terminal.interactive) driving.steering = typedSteering(driving);
  try {
    const result = await streamRun(driving);
    // Ctrl-C at an approval question: the paused result (the last line with --json) stands.
    if (interrupts.exitCode !== undefined) return interrupted(driving, result.sessionId);
    closingLines(driving, result.sessionId);
    const failure = describeFailure(result, {
      ...run.failure,
      ...(driving.unasked !== undefined ? { unasked: driving.unasked } : {}),
    });
    if (failure === undefined) return 0;
    printError(terminal, failure);
    return 1;
  } catch (error) {
    if (!(error instanceof AbortError) || interrupts.exitCode === undefined) {
      renderer.close();
      throw error;
    }
    // The stream ends by throwing, without a result: --json still ends with one.
    const aborted = abortedResult(error, driving.tally.stretchElapsed());
    driving.tally.endStretch(aborted);
    if (!interrupts.pipeClosed) renderer.event(aborted);
    return interrupted(driving, error.sessionId);
  } finally {
    interrupts.dispose();
  }
}

/** Steering typed on the terminal: the line in the status line, `steering: <line>` once sent. */
function typedSteering(driving: Driving): TerminalSteering {
  const { renderer, terminal } = driving.run;
  const { dim, yellow } = terminal.colors;
  return new TerminalSteering(driving.run.input ?? process.stdin, {
    draft: (text) => renderer.typing(text),
    sent: (line) => renderer.notice(dim(`steering: ${printable(line)}`)),
    notSent: (line, why) =>
      renderer.notice(yellow(`steering not sent (${printable(why)}): ${printable(line)}`)),
    interrupt: () => driving.interrupts.interrupt("SIGINT"),
  });
}

/** The usage of the whole run, then where to find this conversation again. */
function closingLines({ run, tally, steering }: Driving, sessionId: string): void {
  // Read in raw mode, a line typed but never sent would otherwise vanish without a word.
  const unsent = steering?.unsent ?? "";
  if (unsent !== "") run.renderer.notice(run.terminal.colors.dim(`not sent: ${printable(unsent)}`));
  run.renderer.close();
  if (tally.worthShowing) run.renderer.usage(tally.totals());
  // `--json` has the session id in the result event.
  if (run.logged && !run.json) run.renderer.notice(run.terminal.colors.dim(`session ${sessionId}`));
}

function interrupted(driving: Driving, sessionId: string): number {
  const { interrupts, run } = driving;
  // A reader of stdout that went away: nothing more to say.
  if (interrupts.pipeClosed) run.renderer.close();
  else {
    closingLines(driving, sessionId);
    printError(run.terminal, "interrupted.");
  }
  return interrupts.exitCode!;
}

/** The result of a run stopped by an interrupt: its transcript, turns and tokens so far. */
function abortedResult(error: AbortError, durationMs: number): SDKResultMessage {
  const why = error.cause instanceof Error ? ` ${error.cause.message}` : "";
  const message = `${error.message}${why}`;
  return {
    type: "result",
    subtype: "error_during_execution",
    result: "",
    isError: true,
    numTurns: error.numTurns ?? 0,
    sessionId: error.sessionId,
    usage: error.usage ?? emptyUsage(),
    totalUsage: error.totalUsage ?? error.usage ?? emptyUsage(),
    durationMs,
    messages: error.messages,
    steps: [],
    error: { name: error.name, message },
  };
}

/**
 * Resumes the named session's unfinished run first (paused calls are asked on the terminal,
 * interrupted ones recovered), then runs the prompt in it, if there is one.
 */
async function streamRun(driving: Driving): Promise<SDKResultMessage> {
  const { run } = driving;
  const { signal } = driving.interrupts;
  const session = run.session;
  if (session && session.status !== "idle") {
    const resumed = await drive(driving, await resumeSession(driving, session));
    if (resumed.subtype !== "success" || run.prompt === undefined) return resumed;
    driving.tally.nextRun();
  }
  if (run.prompt === undefined)
    throw new CliError(
      `session ${session?.id ?? ""} has no unfinished run to resume; give a prompt to continue it.`,
    );
  const options = session ? { signal, sessionId: session.id } : { signal };
  return drive(driving, run.agent.stream(run.prompt, options));
}

/**
 * The stream that resumes the session's unfinished run. A paused run's calls are answered first
 * (rules, then the terminal); one this command cannot answer is not resumed: it stays paused, and
 * the stream is its paused result alone.
 */
async function resumeSession(
  driving: Driving,
  session: NonNullable<AgentRun["session"]>,
): Promise<AgentStream> {
  const { run, interrupts } = driving;
  const target = { sessionId: session.id };
  const paused = session.paused;
  if (!paused || paused.pending.some((call) => call.reason !== "approval"))
    return run.agent.resumeStream(target, { signal: interrupts.signal });
  const outcome = await answerPaused(
    run.agent,
    paused.pending,
    (calls) => ask(driving, calls),
    run.mcpAllowed,
  );
  if (outcome.kind === "answered")
    return run.agent.resumeStream(target, {
      approvals: outcome.decisions,
      signal: interrupts.signal,
    });
  if (outcome.kind === "unasked" && outcome.why !== undefined) driving.unasked = outcome.why;
  return resultOnly(stillPaused(paused));
}

/** Asks on the terminal, with interrupts read as answers to the question. */
async function ask(driving: Driving, calls: PendingToolCall[]): Promise<ApprovalOutcome> {
  const { run, interrupts } = driving;
  driving.asking = true;
  try {
    return await askApprovals(calls, {
      terminal: run.terminal,
      signal: interrupts.signal,
      onInterrupt: () => interrupts.interrupt("SIGINT"),
    });
  } finally {
    driving.asking = false;
  }
}

/** A stream of one result event, which nothing can steer. */
function resultOnly(result: SDKResultMessage): AgentStream {
  return {
    async *[Symbol.asyncIterator]() {
      yield result;
    },
    steer() {},
    followUp() {},
  };
}

/** Streams through the renderer; a run paused for approvals resumes when `askApprovals` decides. */
async function drive(driving: Driving, stream: AgentStream): Promise<SDKResultMessage> {
  const { run, interrupts, tally } = driving;
  let events = stream;
  while (true) {
    tally.startStretch();
    // A line typed while the run streams steers it (the terminal's own input, not a piped prompt);
    // the terminal is back in cooked mode before a question, and when the stream ends or fails.
    const stopListening = driving.steering?.listen(events) ?? (() => {});
    const result = await render(events, run.renderer).finally(stopListening);
    tally.endStretch(result);
    const pending = result.pending ?? [];
    if (result.subtype !== "paused" || !result.state || pending.length === 0) return result;
    if (pending.some((call) => call.reason !== "approval")) return result;
    const outcome = await ask(driving, pending);
    if (outcome.kind === "unasked" && outcome.why !== undefined) driving.unasked = outcome.why;
    if (outcome.kind !== "answered") return result;
    // A logged run resumes from its store, where the paused state was written.
    const target = run.logged ? { sessionId: result.sessionId } : result.state;
    events = run.agent.resumeStream(target, {
      approvals: outcome.decisions,
      signal: interrupts.signal,
    });
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
