// The agent object: run, stream, resume, rewindFiles, close and runNext over one engine
// configuration (assemble.ts makes it), and the Agent interface it implements.

import { randomUUID } from "node:crypto";
import { closeBackground, type RunBackground, runBackground } from "../builtin/background.ts";
import { ConfigurationError } from "../core/errors.ts";
import type { Message } from "../core/messages.ts";
import { assertKnownOptions, RESUME_OPTION_KEYS, RUN_OPTION_KEYS } from "../core/options.ts";
import type { SessionStore } from "../core/session-store.ts";
import type {
  AgentOptions,
  OutputSchema,
  ResumeOptions,
  RunOptions,
  SessionTarget,
  Steering,
} from "../run/agent-options.ts";
import { budgetOf } from "../run/budget.ts";
import { assertPricedBudget } from "../run/budget-price.ts";
import type { EngineConfig } from "../run/config.ts";
import { runLoop } from "../run/loop.ts";
import { newRun } from "../run/new-run.ts";
import { checkPermissionMode, ModeCell, type PermissionMode } from "../run/policy.ts";
import { restoreRun } from "../run/state.ts";
import { queueOf, SteeringQueue } from "../run/steering.ts";
import type { AgentEvent, RunState, SDKResultMessage } from "../run/types.ts";
import { assertPrompt, type Prompt } from "../run/user-content.ts";
import {
  checkHistory,
  isSessionTarget,
  journalForState,
  openSessionRun,
  requireStore,
} from "../sessions/open-run.ts";
import { type RewindResult, rewindFiles } from "../sessions/rewind.ts";
import type { Workspace } from "../tools/workspace.ts";
import { runToEnd, type Start, streamEvents } from "./drive.ts";
import type { Mailbox, MailboxMessage } from "./mailbox.ts";
import type { AgentHandle } from "./registry.ts";
import { resumeSession, sourcesFor, withQueued } from "./resume.ts";
import { type RunNextOptions, runNext } from "./run-next.ts";

/**
 * What `agent.stream()` returns: the run's events (ending with `result`), and `steer()` /
 * `followUp()` to talk to the run while it works.
 */
export type AgentRun<TOutput = unknown> = AsyncGenerator<AgentEvent<TOutput>, void, undefined> &
  Steering & {
    /**
     * Switches the run's permission mode, effective from the next call decided: logged in the
     * session store, kept in a paused state, and emitted as a `permission_mode` event. An unknown
     * mode (or `"bypassPermissions"` under the hardened preset) throws `ConfigurationError`.
     */
    setPermissionMode(mode: PermissionMode): void;
  };

export interface Agent<TOutput = unknown> {
  readonly id?: string;
  /** Runs to the end and resolves with the result. Rejects only with `AbortError`. */
  run(prompt: Prompt, options?: RunOptions): Promise<SDKResultMessage<TOutput>>;
  /** The same run as a stream of events, ending with the `result` event. Breaking out aborts the run. */
  stream(prompt: Prompt, options?: RunOptions): AgentRun<TOutput>;
  /**
   * Continues a paused run as if its pending tools had run (`toolOutputs`), in this process or
   * another. With a session store, `{ sessionId }` continues the session's unfinished run (paused,
   * or interrupted by a crash) from the store alone.
   */
  resume(
    state: RunState | string | SessionTarget,
    options?: ResumeOptions,
  ): Promise<SDKResultMessage<TOutput>>;
  /** `resume` as a stream of events. */
  resumeStream(
    state: RunState | string | SessionTarget,
    options?: ResumeOptions,
  ): AgentRun<TOutput>;
  /**
   * Puts the files Write and Edit changed since the checkpoint back as they were, all or nothing
   * (needs a session store; files changed only by Bash are not tracked).
   */
  rewindFiles(sessionId: string, checkpointId: string): Promise<RewindResult>;
  /**
   * Stops the agent's background tasks (Bash `run_in_background` shells included) and resolves
   * once they ended, under the hardened preset after the sandbox's clean-up. The agent stays usable.
   */
  close(): Promise<void>;
  /** `close()`, for `await using agent = createAgent(...)`. */
  [Symbol.asyncDispose](): Promise<void>;
  /**
   * Runs the oldest task handed off to this agent (`to`, default its `id`) as a top-level run,
   * narrowed by the sender's restrictions, and acks it; `undefined` when none waits.
   */
  runNext(
    mailbox: Mailbox,
    options?: RunNextOptions,
  ): Promise<(SDKResultMessage<TOutput> & { task: MailboxMessage }) | undefined>;
}

/** A checked, reusable agent definition: no connection, no state. */
export type AgentDefinition<S extends OutputSchema | undefined = OutputSchema | undefined> =
  Readonly<AgentOptions<S>>;

export function agentFrom(
  config: EngineConfig,
  context: AgentContext,
  handle?: AgentHandle,
): Agent {
  const { store } = context;
  const fresh = (prompt: Prompt, options: RunOptions | undefined, streamed: boolean) => {
    assertKnownOptions("RunOptions", options, RUN_OPTION_KEYS);
    // A plain copy: what the app keeps of the prompt cannot change the transcript later.
    const content = assertPrompt("run(prompt)", "prompt", prompt);
    const history = checkHistory(options?.messages, store !== undefined);
    const steering = steeringFor(options?.steering, streamed, "run");
    const mode = new ModeCell(
      checkPermissionMode("RunOptions", options?.permissionMode, config.hardened === true),
    );
    const budget = budgetOf("RunOptions", options);
    if (budget?.limits.maxBudgetUsd !== undefined) assertPricedBudget("RunOptions", config);
    const start: Start = (emit, signal) =>
      withRunBackground(config, (background) => {
        const message: Message = { role: "user", content };
        const each = {
          emit,
          signal,
          mode,
          ...(budget ? { budget } : {}),
          ...(steering ? { steering } : {}),
          ...(background ? { background } : {}),
        };
        if (!store)
          return runLoop(
            newRun(config, {
              sessionId: options?.sessionId ?? randomUUID(),
              messages: [...history, message],
              ...each,
            }),
          );
        return openSessionRun(store, config, options?.sessionId, message).then((opened) =>
          runLoop(newRun(config, { ...opened, ...each })),
        );
      });
    return { start, steering, mode };
  };
  const resumed = (
    target: RunState | string | SessionTarget,
    options: ResumeOptions | undefined,
    streamed: boolean,
  ) => {
    assertKnownOptions("ResumeOptions", options, RESUME_OPTION_KEYS);
    const given = steeringFor(options?.steering, streamed, "resume");
    const mode = new ModeCell();
    const start: Start = async (emit, signal) => {
      if (isSessionTarget(target))
        return withRunBackground(config, (background) =>
          resumeSession(config, requireStore(store, "resume({ sessionId })"), {
            sessionId: target.sessionId,
            options: options ?? {},
            emit,
            signal,
            steering: given,
            background,
            mode,
          }),
        );
      // A paused MCP call is checked against its server's tools: connect first.
      const sourced = await sourcesFor(config, { emit, signal });
      const restored = await restoreRun(target, sourced.config, options ?? {});
      const state = (typeof target === "string" ? JSON.parse(target) : target) as RunState;
      const journal = store ? await journalForState(store, config, state) : undefined;
      const steering = withQueued(given, restored.queued);
      return withRunBackground(sourced.config, (background) =>
        runLoop(
          newRun(sourced.config, {
            ...restored,
            ...journal,
            emit,
            signal,
            mode,
            ...(steering ? { steering } : {}),
            ...(sourced.sources ? { sources: { ...sourced.sources, base: config } } : {}),
            ...(background ? { background } : {}),
          }),
          restored,
        ),
      );
    };
    return { start, steering: given, mode };
  };
  return {
    id: config.id,
    // A bad argument rejects the returned promise, as every other failure of run() does.
    run: async (prompt, options) => runToEnd(fresh(prompt, options, false).start, options?.signal),
    stream: (prompt, options) => {
      const { start, steering, mode } = fresh(prompt, options, true);
      return steerable(streamEvents(start, options?.signal), steering!, mode);
    },
    resume: async (state, options) =>
      runToEnd(resumed(state, options, false).start, options?.signal),
    resumeStream: (state, options) => {
      const { start, steering, mode } = resumed(state, options, true);
      return steerable(streamEvents(start, options?.signal), steering!, mode);
    },
    rewindFiles: async (sessionId, checkpointId) =>
      rewindFiles({
        store: requireStore(store, "rewindFiles"),
        root: context.root,
        sessionId,
        checkpointId,
        secret: config.approvalSecret,
      }),
    close: () => closeAgent(config),
    [Symbol.asyncDispose]: () => closeAgent(config),
    runNext: async (mailbox, options) => {
      if (!handle) throw new ConfigurationError("runNext: this agent cannot receive handoffs.");
      return runNext(handle, mailbox, options);
    },
  };
}

/** Stops the agent's background tasks and ends its MCP servers' connections. */
async function closeAgent(config: EngineConfig): Promise<void> {
  await Promise.all([
    closeBackground(config.background),
    ...(config.sources ?? []).map(({ source }) => source.close()),
  ]);
}

/**
 * Runs `body` with a background registry view of its own (the run's `background`): the
 * sandboxed shells the run starts are stopped (and swept) before its result is returned, so
 * none outlives it. Chained, not awaited: no frame is kept alive for it while the run goes on.
 */
function withRunBackground<T>(
  config: EngineConfig,
  body: (background: RunBackground | undefined) => Promise<T>,
): Promise<T> {
  const view = runBackground(config.background);
  if (!view) return body(undefined);
  let running: Promise<T>;
  try {
    running = body(view);
  } catch (error) {
    running = Promise.reject(error);
  }
  return running.then(
    (value) => view.end().then(() => value),
    (error: unknown) =>
      view.end().then(() => {
        throw error;
      }),
  );
}

/** What an agent keeps beside its engine configuration. */
export interface AgentContext {
  store?: SessionStore;
  /** The workspace root, canonical. */
  root: string;
  workspace: Workspace;
}

/**
 * The run's steering queue: the one given (each serves one run), else, for a stream, one of its
 * own (its handle's `steer`/`followUp` feed it); `run()` without one needs none.
 */
function steeringFor(given: unknown, streamed: boolean, where: string): SteeringQueue | undefined {
  if (given !== undefined) {
    const queue = queueOf(given, `${where}(options.steering)`);
    queue.take(`${where}(options.steering)`);
    return queue;
  }
  return streamed ? new SteeringQueue() : undefined;
}

/** The stream, with `steer` and `followUp` feeding its run. */
function steerable<T>(
  events: AsyncGenerator<AgentEvent<T>, void, undefined>,
  queue: SteeringQueue,
  mode: ModeCell,
): AgentRun<T> {
  return Object.assign(events, {
    steer: (message: Prompt) => queue.push("steer", message),
    followUp: (message: Prompt) => queue.push("follow_up", message),
    setPermissionMode: (next: PermissionMode) => mode.set(next),
  });
}
