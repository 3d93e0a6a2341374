// `resume({ sessionId })` from a session's log, and what resuming shares with a resume from a
// state: the MCP servers' tools fetched first, and the messages a paused state carried.

import type { RunBackground } from "../builtin/background.ts";
import type { SessionStore } from "../core/session-store.ts";
import type { ResumeOptions } from "../run/agent-options.ts";
import type { EngineConfig } from "../run/config.ts";
import { runLoop } from "../run/loop.ts";
import { newRun } from "../run/new-run.ts";
import { checkPermissionMode, type ModeCell } from "../run/policy.ts";
import type { RestoredRun } from "../run/state.ts";
import { restoreRun } from "../run/state.ts";
import { SteeringQueue } from "../run/steering.ts";
import { configWithSources, type SourceTools } from "../run/tool-source.ts";
import type { AgentEvent, SDKResultMessage } from "../run/types.ts";
import { openSessionResume } from "../sessions/open-run.ts";

/**
 * `resume({ sessionId })`: a paused run continues from its sealed state (checked before anything
 * is written), a crashed one from its log. The resume marker is written first: a second recoverer
 * of the same session loses that race and rejects with `SessionConflictError`.
 */
export async function resumeSession(
  config: EngineConfig,
  store: SessionStore,
  request: {
    sessionId: string;
    options: ResumeOptions;
    emit: (event: AgentEvent) => void;
    signal: AbortSignal;
    steering: SteeringQueue | undefined;
    background: RunBackground | undefined;
    mode?: ModeCell;
  },
): Promise<SDKResultMessage> {
  const { emit, signal, options } = request;
  const background = {
    ...(request.background ? { background: request.background } : {}),
    ...(request.mode ? { mode: request.mode } : {}),
  };
  const opened = await openSessionResume(store, config, request.sessionId, options);
  const { journal, checkpointId } = opened;
  if (opened.kind === "paused") {
    const sourced = await sourcesFor(config, { emit, signal });
    const restored = await restoreRun(opened.state, sourced.config, options);
    await journal.resumed();
    const steering = withQueued(request.steering, restored.queued);
    const run = newRun(sourced.config, {
      ...restored,
      ...(sourced.sources ? { sources: { ...sourced.sources, base: config } } : {}),
      journal,
      checkpointId,
      emit,
      signal,
      ...(steering ? { steering } : {}),
      ...background,
    });
    return runLoop(run, restored);
  }
  const mode = checkPermissionMode("resume", options.permissionMode, config.hardened === true);
  await journal.resumed();
  const run = newRun(config, {
    ...opened.run,
    ...(mode ? { permissionMode: mode } : {}),
    journal,
    checkpointId,
    emit,
    signal,
    ...(request.steering ? { steering: request.steering } : {}),
    ...background,
  });
  return runLoop(run, undefined, opened.recovery);
}

/** The agent's configuration with its MCP servers' tools, fetched now (a resumed run checks its calls against them). */
export async function sourcesFor(
  config: EngineConfig,
  context: { emit: (event: AgentEvent) => void; signal: AbortSignal },
): Promise<{ config: EngineConfig; sources?: SourceTools }> {
  if (!config.sources) return { config };
  const sources: SourceTools = { fetched: new Map(), tried: new Set() };
  return { config: await configWithSources(config, sources, context), sources };
}

/** Messages a paused state carried go first; a queue is made for them when the app gave none. */
export function withQueued(
  queue: SteeringQueue | undefined,
  queued: RestoredRun["queued"],
): SteeringQueue | undefined {
  if (queued.length === 0) return queue;
  const target = queue ?? new SteeringQueue();
  target.restore(queued);
  return target;
}
