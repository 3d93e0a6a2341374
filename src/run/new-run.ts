import type { Message } from "../core/messages.ts";
import { emptyUsage } from "../core/messages.ts";
import type { BackgroundTasks } from "../tools/types.ts";
import { type Budget, freshBudget, TreeState } from "./budget.ts";
import type { EngineConfig } from "./config.ts";
import type { RunJournal } from "./journal.ts";
import { type RunLink, rootLink } from "./link.ts";
import type { RunContext } from "./loop.ts";
import { ModeCell } from "./policy.ts";
import type { RestoredRun } from "./state.ts";
import type { SteeringQueue } from "./steering.ts";
import type { SourceTools } from "./tool-source.ts";
import type { AgentEvent } from "./types.ts";

/**
 * The event sink of a run nobody streams (`run()`, `resume()`): events that cost something to
 * build, such as a `tool_input_delta` with its `partialInput`, are not built for it.
 */
export const unheard = (_event: AgentEvent): void => {};

/** A run's context, fresh or from a restored state; `link` places it in a tree of agent runs. */
export function newRun(
  config: EngineConfig,
  options: Partial<RestoredRun> & {
    sessionId: string;
    messages: Message[];
    emit: (event: AgentEvent) => void;
    signal: AbortSignal;
    journal?: RunJournal;
    checkpointId?: string;
    link?: RunLink;
    steering?: SteeringQueue;
    outputAttempts?: number;
    sources?: SourceTools & { base: EngineConfig };
    /** The run's view of the agent's background tasks (ended with the run). */
    background?: BackgroundTasks;
    /** A top-level run's permission mode, switchable while it works. */
    mode?: ModeCell;
    /** The run's own budget (`RunOptions`), beside the agent's. */
    budget?: Budget;
  },
): RunContext {
  const seenIds = new Set<string>();
  for (const message of options.messages) {
    if (typeof message.content === "string") continue;
    for (const block of message.content) if (block.type === "tool_use") seenIds.add(block.id);
  }
  const link = options.link ?? rootLink(config, () => 0);
  let signal = options.signal;
  if (link.depth === 0) {
    const budgets = [
      ...(options.budget ? [options.budget] : []),
      ...(config.budget ? [freshBudget(config.budget)] : []),
    ];
    if (budgets.length > 0) link.budgets = budgets;
    // A tree that may trip (a budget, a guardrail, or children that may have either) ends
    // through one abort of its own, beside the caller's.
    if (budgets.length > 0 || config.guardrails || config.parent) {
      link.tree = new TreeState();
      signal = AbortSignal.any([signal, link.tree.controller.signal]);
    }
  }
  const run: RunContext = {
    config,
    sessionId: options.sessionId,
    signal,
    emit: options.emit,
    runData: options.runData ?? new Map(),
    messages: options.messages,
    steps: options.steps ?? [],
    usage: options.usage ?? emptyUsage(),
    numTurns: options.numTurns ?? 0,
    seenIds,
    startedAt: Date.now(),
    link,
    outputAttempts: options.outputAttempts ?? 0,
    ...(options.journal ? { journal: options.journal } : {}),
    ...(options.checkpointId !== undefined ? { checkpointId: options.checkpointId } : {}),
    ...(options.steering ? { steering: options.steering } : {}),
    ...(options.sources ? { sources: options.sources } : {}),
    ...(options.background ? { background: options.background } : {}),
  };
  // The budget a child run may take is what this run has left, counted live.
  link.turnsLeft = () => config.maxTurns - run.numTurns;
  if (link.depth === 0) {
    const cell = options.mode ?? new ModeCell();
    cell.start(
      options.permissionMode ?? config.permissionMode ?? "default",
      config.hardened === true,
      (mode, previous) => {
        // Logged with the next entry, so the log keeps the order of what happened.
        run.journal?.mode(mode);
        run.emit({ type: "permission_mode", mode, previous });
      },
    );
    link.mode = () => cell.current;
  }
  return run;
}
