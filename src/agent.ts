import { randomUUID } from "node:crypto";
import { setMaxListeners } from "node:events";
import { statSync } from "node:fs";
import path from "node:path";
import type { Mailbox, MailboxMessage } from "./agents/mailbox.ts";
import { checkAgentTools } from "./agents/reach.ts";
import { type AgentHandle, registerAgent } from "./agents/registry.ts";
import { type RunNextOptions, runNext } from "./agents/run-next.ts";
import {
  closeBackground,
  createBackgroundTasks,
  type RunBackground,
  runBackground,
} from "./builtin/background.ts";
import type { BuiltinEnvironment } from "./builtin/environment.ts";
import { BUILTIN_TOOL_NAMES, builtinTools } from "./builtin/index.ts";
import { probeSandbox, sandboxPolicy } from "./builtin/sandbox.ts";
import { createWorkspace } from "./builtin/workspace.ts";
import { ConfigurationError } from "./core/errors.ts";
import type { Message } from "./core/messages.ts";
import {
  AGENT_OPTION_KEYS,
  assertKnownOptions,
  assertOneOf,
  describeValue,
  PERMISSION_KEYS,
  QUERY_OPTION_KEYS,
  RESUME_OPTION_KEYS,
  RUN_OPTION_KEYS,
} from "./core/options.ts";
import type { SessionStore } from "./core/session-store.ts";
import { ANTHROPIC_DEFAULT_MODEL } from "./model/anthropic.ts";
import { modelFromName } from "./model/by-name.ts";
import { createPermissionGate, type PermissionGate } from "./permissions/gate.ts";
import { checkHardenedPreset, checkHardenedServers } from "./permissions/preset.ts";
import { checkSharedSecret, resolveApprovalSecret } from "./run/approval-secret.ts";
import { EventChannel } from "./run/channel.ts";
import { type EngineConfig, type ModelFactory, resolveConfig } from "./run/config.ts";
import { runLoop } from "./run/loop.ts";
import { newRun, unheard } from "./run/new-run.ts";
import { type RestoredRun, restoreRun } from "./run/state.ts";
import { queueOf, SteeringQueue } from "./run/steering.ts";
import { wildcard } from "./run/tool-filters.ts";
import { configWithSources, type SourceTools } from "./run/tool-source.ts";
import type {
  AgentEvent,
  AgentOptions,
  OutputOf,
  OutputSchema,
  ResumeOptions,
  RunOptions,
  RunState,
  SDKResultMessage,
  SessionTarget,
  Steering,
} from "./run/types.ts";
import { assertPrompt, type Prompt } from "./run/user-content.ts";
import type { Workspace } from "./tools/workspace.ts";

export type { Prompt };

import { isProcessLocal } from "./sessions/memory-store.ts";
import {
  checkHistory,
  checkSessionStore,
  isSessionTarget,
  journalForState,
  openSessionResume,
  openSessionRun,
  requireStore,
} from "./sessions/open-run.ts";
import { type RewindResult, rewindFiles } from "./sessions/rewind.ts";

/**
 * What `agent.stream()` returns: the run's events (ending with `result`), and `steer()` /
 * `followUp()` to talk to the run while it works.
 */
export type AgentRun<TOutput = unknown> = AsyncGenerator<AgentEvent<TOutput>, void, undefined> &
  Steering;

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

/** Checks agent options strictly and returns them, typed, for `createAgent` / `createBareAgent` later. */
export function defineAgent<S extends OutputSchema | undefined = undefined>(
  options: AgentOptions<S>,
): AgentDefinition<S> {
  assemble(options, { builtins: false, definition: true });
  return options;
}

/** An agent with skein's built-in tools (Read, LS, Glob, Grep, Write, Edit, Bash, ...) followed by yours. */
export function createAgent<S extends OutputSchema | undefined = undefined>(
  options: AgentOptions<S> | AgentDefinition<S>,
): Agent<OutputOf<S>> {
  return build(options, { builtins: true }) as Agent<OutputOf<S>>;
}

/** An agent with only the tools you give it. */
export function createBareAgent<S extends OutputSchema | undefined = undefined>(
  options: AgentOptions<S> | AgentDefinition<S>,
): Agent<OutputOf<S>> {
  return build(options, { builtins: false }) as Agent<OutputOf<S>>;
}

type Choice = { builtins: boolean; definition?: boolean; alsoKnown?: readonly string[] };

/** Assembles an agent and keeps its handle, so agent tools and handoffs can run it narrowed or hardened. */
function build(options: AgentOptions, choice: Choice): Agent {
  const [config, context] = assemble(options, choice);
  const handle = handleFor(options, choice, config, context);
  const agent = agentFrom(config, context, handle);
  registerAgent(agent, handle);
  return agent;
}

function handleFor(
  options: AgentOptions,
  choice: Choice,
  config: EngineConfig,
  context: AgentContext,
): AgentHandle {
  let hardened: AgentHandle | undefined;
  let agent: Agent | undefined;
  const handle: AgentHandle = {
    config,
    workspace: context.workspace,
    run: (prompt, runOptions) => handle.agent().run(prompt, runOptions),
    agent: () => {
      agent ??= agentFrom(config, context, handle);
      return agent;
    },
    withStore: (sessionStore, approvalSecret) => {
      checkSharedSecret(options.approvalSecret, approvalSecret);
      const stored: AgentOptions = { ...options, sessionStore, approvalSecret };
      const [w, c] = assemble(stored, choice);
      return handleFor(stored, choice, w, c);
    },
    hardened: () => {
      if (config.hardened) return handle;
      if (!hardened) {
        const hardenedOptions: AgentOptions = { ...options, preset: "hardened" };
        const [h, c] = assemble(hardenedOptions, choice);
        hardened = handleFor(hardenedOptions, choice, h, c);
      }
      return hardened;
    },
    narrowed: (carried) => {
      const own = options.permissions ?? {};
      const narrowedOptions: AgentOptions = {
        ...options,
        permissions: {
          ...own,
          deny: [...(own.deny ?? []), ...carried.deny],
          ask: [...(own.ask ?? []), ...carried.ask],
        },
        disallowedTools: [...(options.disallowedTools ?? []), ...carried.hidden],
      };
      // The carried rules were written for the sender's tools: they may name tools this agent lacks.
      const named = [...carried.deny, ...carried.ask].map((rule) => rule.replace(/\(.*$/s, ""));
      const wider: Choice = { ...choice, alsoKnown: [...(choice.alsoKnown ?? []), ...named] };
      const [n, c] = assemble(narrowedOptions, wider);
      return handleFor(narrowedOptions, wider, withAllowed(n, carried.allowed), c);
    },
  };
  return handle;
}

/**
 * Plugs the workspace, the built-in tools, the permission gate and the preset into the engine's
 * configuration. The engine sees them only through `resolveConfig`'s small interfaces.
 */
function assemble(options: AgentOptions, choice: Choice): [EngineConfig, AgentContext] {
  const prefix = "AgentOptions";
  assertKnownOptions(prefix, options, AGENT_OPTION_KEYS);
  assertOneOf(prefix, "preset", options.preset, ["hardened"]);
  assertKnownOptions(`${prefix}: permissions`, options.permissions, PERMISSION_KEYS);
  for (const behavior of PERMISSION_KEYS) {
    const list = (options.permissions as Record<string, unknown> | undefined)?.[behavior];
    if (list !== undefined && !Array.isArray(list))
      throw new ConfigurationError(
        `${prefix}: permissions.${behavior} must be an array of rules such as "Bash(npm run test:*)", received ${describeValue(list)}.`,
      );
  }
  const store = checkSessionStore(prefix, options.sessionStore);
  const workspace = createWorkspace(workspaceRoot(options.cwd, prefix));
  const hardened = options.preset === "hardened";
  const background = createBackgroundTasks();
  let gate: PermissionGate | undefined;
  const environment: BuiltinEnvironment = {
    workspace,
    // The gate is built once the tool list is known, after the built-ins that consult it.
    hiddenFromSearch: (relative, tool) => gate?.hiddenFromSearch(relative, tool) ?? false,
    recheck: (tool, given, opened) => gate?.recheck(tool, given, opened),
    get readDenyPatterns() {
      return gate?.readDenyPatterns ?? [];
    },
    background,
    sandboxed: hardened,
  };
  const approvalSecret = resolveApprovalSecret(prefix, options.approvalSecret, {
    durableStore: store !== undefined && !isProcessLocal(store),
  });
  const config = resolveConfig(options, {
    ...(approvalSecret !== undefined ? { approvalSecret } : {}),
    builtins: choice.builtins ? builtinTools(environment) : [],
    modelFactory: modelByName,
    trace: async (start) => (await import("./tracing/otel.ts")).otelTrace(start),
    background,
    ...(hardened
      ? {
          sandbox: async () => sandboxPolicy(workspace.root, (await probeSandbox()).available),
        }
      : {}),
    permissions: (tools, { extraDeny }) => {
      if (hardened) {
        checkHardenedPreset(tools, prefix);
        checkHardenedServers(options.mcpServers, prefix);
      }
      const reachable = checkAgentTools(tools, { root: workspace.root, hardened, prefix });
      gate = createPermissionGate({
        rules: options.permissions,
        extraDeny,
        tools,
        workspace,
        prefix,
        // A definition may go to createAgent later: rules may name the built-ins it will have;
        // rules may also name the tools of the agents this one's agent tools start.
        alsoKnown: [
          ...(choice.definition ? BUILTIN_TOOL_NAMES : []),
          ...reachable,
          ...(choice.alsoKnown ?? []),
          // An MCP server's tools are known at run time: rules may name any of them.
          ...Object.keys(options.mcpServers ?? {}).map((name) => `mcp__${name}__*`),
        ],
      });
      return gate;
    },
  });
  if (hardened) config.hardened = true;
  // A key known to be missing fails here, not as the first run's result (the provider made here
  // is dropped: each run makes its own, as SKEIN_MODEL may name another). A definition is checked
  // where it is used: a worker may have keys its author's process lacks.
  if (config.model.kind === "name" && !choice.definition) modelByName(config.model);
  // With a session store, a reply is logged before any of its calls is prepared: no eager starts.
  if (store) config.eager = false;
  return [config, { ...(store ? { store } : {}), root: workspace.root, workspace }];
}

function workspaceRoot(cwd: unknown, prefix: string): string {
  if (cwd !== undefined && (typeof cwd !== "string" || cwd === "")) {
    throw new ConfigurationError(
      `${prefix}: cwd must be the path of a directory, received ${describeValue(cwd)}.`,
    );
  }
  const root = path.resolve(cwd ?? process.cwd());
  let isDirectory = false;
  try {
    isDirectory = statSync(root).isDirectory();
  } catch {
    // Reported below, the same way as a file.
  }
  if (!isDirectory) {
    throw new ConfigurationError(
      `${prefix}: cwd ${JSON.stringify(cwd ?? root)} is not an existing directory; the workspace root must exist.`,
    );
  }
  return root;
}

/** The model used when an agent names none and `SKEIN_MODEL` is unset. */
export const DEFAULT_MODEL = ANTHROPIC_DEFAULT_MODEL;

/**
 * A model given by name picks its protocol from the name (model/by-name.ts: `claude-*`
 * Anthropic; `gpt-*`, `o1*`, `o3*`, `o4*` OpenAI; `anthropic:` / `openai:` for any other; a
 * bare name is Anthropic, as for DeepSeek's Anthropic endpoint), with `apiKey` and `baseURL` for
 * that provider. Called at assembly (a missing key is a `ConfigurationError` there) and again at
 * each run.
 */
const modelByName: ModelFactory = (choice) => {
  // An empty variable counts as unset, as for keys and base URLs.
  const fromEnvironment = !choice.name && Boolean(process.env.SKEIN_MODEL);
  return modelFromName(choice.name || process.env.SKEIN_MODEL || DEFAULT_MODEL, {
    ...(choice.apiKey !== undefined ? { apiKey: choice.apiKey } : {}),
    ...(choice.baseURL !== undefined ? { baseURL: choice.baseURL } : {}),
    ...(fromEnvironment ? { source: "SKEIN_MODEL" } : {}),
  });
};

export interface QueryOptions<S extends OutputSchema | undefined = OutputSchema | undefined>
  extends AgentOptions<S> {
  prompt: Prompt;
  signal?: AbortSignal | undefined;
  sessionId?: string | undefined;
  steering?: Steering | undefined;
}

/** The one-shot streaming form (seed 002): `for await (const event of query({ prompt, model, tools }))`. */
export function query<S extends OutputSchema | undefined = undefined>(
  options: QueryOptions<S>,
): AgentRun<OutputOf<S>> {
  assertKnownOptions("AgentOptions", options, QUERY_OPTION_KEYS);
  const { prompt, signal, sessionId, steering, ...agentOptions } = options;
  const runOptions: RunOptions = {};
  if (signal !== undefined) runOptions.signal = signal;
  if (sessionId !== undefined) runOptions.sessionId = sessionId;
  if (steering !== undefined) runOptions.steering = steering;
  const agent = createAgent(agentOptions as AgentOptions<S>);
  const run = agent.stream(prompt, runOptions);
  if (agentOptions.mcpServers === undefined) return run;
  // A one-shot query owns its MCP servers: they end with its stream.
  async function* closing() {
    try {
      yield* run;
    } finally {
      await agent.close();
    }
  }
  return Object.assign(closing(), { steer: run.steer, followUp: run.followUp });
}

function agentFrom(config: EngineConfig, context: AgentContext, handle?: AgentHandle): Agent {
  const { store } = context;
  const fresh = (prompt: Prompt, options: RunOptions | undefined, streamed: boolean) => {
    assertKnownOptions("RunOptions", options, RUN_OPTION_KEYS);
    // A plain copy: what the app keeps of the prompt cannot change the transcript later.
    const content = assertPrompt("run(prompt)", "prompt", prompt);
    const history = checkHistory(options?.messages, store !== undefined);
    const steering = steeringFor(options?.steering, streamed, "run");
    const start: Start = (emit, signal) =>
      withRunBackground(config, (background) => {
        const message: Message = { role: "user", content };
        const each = {
          emit,
          signal,
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
    return { start, steering };
  };
  const resumed = (
    target: RunState | string | SessionTarget,
    options: ResumeOptions | undefined,
    streamed: boolean,
  ) => {
    assertKnownOptions("ResumeOptions", options, RESUME_OPTION_KEYS);
    const given = steeringFor(options?.steering, streamed, "resume");
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
            ...(steering ? { steering } : {}),
            ...(sourced.sources ? { sources: { ...sourced.sources, base: config } } : {}),
            ...(background ? { background } : {}),
          }),
          restored,
        ),
      );
    };
    return { start, steering: given };
  };
  return {
    id: config.id,
    // A bad argument rejects the returned promise, as every other failure of run() does.
    run: async (prompt, options) => runToEnd(fresh(prompt, options, false).start, options?.signal),
    stream: (prompt, options) => {
      const { start, steering } = fresh(prompt, options, true);
      return steerable(streamEvents(start, options?.signal), steering!);
    },
    resume: async (state, options) =>
      runToEnd(resumed(state, options, false).start, options?.signal),
    resumeStream: (state, options) => {
      const { start, steering } = resumed(state, options, true);
      return steerable(streamEvents(start, options?.signal), steering!);
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

/**
 * The sender chain's `allowedTools` on top of the target's own: a tool stays visible only if every
 * list lets the model see a tool of that name.
 */
function withAllowed(config: EngineConfig, lists: string[][] | undefined): EngineConfig {
  if (!lists || lists.length === 0) return config;
  const matchers = lists.map((list) => list.map((entry) => wildcard(entry.replace(/\(.*$/s, ""))));
  const passes = (name: string) => matchers.every((list) => list.some((matches) => matches(name)));
  const visible = new Set([...config.visible].filter(passes));
  return {
    ...config,
    visible,
    admits: (name, tool) => passes(name) && config.admits(name, tool),
    toolSpecs: config.toolSpecs.filter((spec) => visible.has(spec.name)),
    restrictions: {
      ...config.restrictions,
      allowed: [...(config.restrictions.allowed ?? []), ...lists],
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

type Start = (emit: (event: AgentEvent) => void, signal: AbortSignal) => Promise<SDKResultMessage>;

/** What an agent keeps beside its engine configuration. */
interface AgentContext {
  store?: SessionStore;
  /** The workspace root, canonical. */
  root: string;
  workspace: Workspace;
}

/**
 * `resume({ sessionId })`: a paused run continues from its sealed state (checked before anything
 * is written), a crashed one from its log. The resume marker is written first: a second recoverer
 * of the same session loses that race and rejects with `SessionConflictError`.
 */
async function resumeSession(
  config: EngineConfig,
  store: SessionStore,
  request: {
    sessionId: string;
    options: ResumeOptions;
    emit: (event: AgentEvent) => void;
    signal: AbortSignal;
    steering: SteeringQueue | undefined;
    background: RunBackground | undefined;
  },
): Promise<SDKResultMessage> {
  const { emit, signal, options } = request;
  const background = request.background ? { background: request.background } : {};
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
  await journal.resumed();
  const run = newRun(config, {
    ...opened.run,
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
async function sourcesFor(
  config: EngineConfig,
  context: { emit: (event: AgentEvent) => void; signal: AbortSignal },
): Promise<{ config: EngineConfig; sources?: SourceTools }> {
  if (!config.sources) return { config };
  const sources: SourceTools = { fetched: new Map(), tried: new Set() };
  return { config: await configWithSources(config, sources, context), sources };
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

/** Messages a paused state carried go first; a queue is made for them when the app gave none. */
function withQueued(
  queue: SteeringQueue | undefined,
  queued: RestoredRun["queued"],
): SteeringQueue | undefined {
  if (queued.length === 0) return queue;
  const target = queue ?? new SteeringQueue();
  target.restore(queued);
  return target;
}

/** The stream, with `steer` and `followUp` feeding its run. */
function steerable<T>(
  events: AsyncGenerator<AgentEvent<T>, void, undefined>,
  queue: SteeringQueue,
): AgentRun<T> {
  return Object.assign(events, {
    steer: (message: Prompt) => queue.push("steer", message),
    followUp: (message: Prompt) => queue.push("follow_up", message),
  });
}

/**
 * Each run gets a signal of its own that follows the caller's: the engine hangs its listeners
 * (one per batch, model call and timed tool) there, never on the caller's signal. Runs that share
 * a caller's signal share one forwarding listener on it, however many run at once.
 */
const followers = new WeakMap<
  AbortSignal,
  { members: Set<AbortController>; forward: () => void }
>();

function runSignal(signal: AbortSignal | undefined): {
  controller: AbortController;
  unlink: () => void;
} {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  if (!signal) return { controller, unlink: () => {} };
  if (signal.aborted) {
    controller.abort(signal.reason);
    return { controller, unlink: () => {} };
  }
  let group = followers.get(signal);
  if (!group) {
    const members = new Set<AbortController>();
    const forward = () => {
      followers.delete(signal);
      for (const member of members) member.abort(signal.reason);
    };
    group = { members, forward };
    followers.set(signal, group);
    signal.addEventListener("abort", forward, { once: true });
  }
  const { members, forward } = group;
  members.add(controller);
  return {
    controller,
    unlink: () => {
      members.delete(controller);
      if (members.size === 0 && followers.get(signal)?.members === members) {
        followers.delete(signal);
        signal.removeEventListener("abort", forward);
      }
    },
  };
}

async function runToEnd(start: Start, signal: AbortSignal | undefined): Promise<SDKResultMessage> {
  const { controller, unlink } = runSignal(signal);
  try {
    return await start(unheard, controller.signal);
  } finally {
    unlink();
  }
}

/** One loop for both forms: the stream is the loop's events pushed through a channel. */
async function* streamEvents(
  start: Start,
  signal: AbortSignal | undefined,
): AsyncGenerator<AgentEvent, void, undefined> {
  const { controller, unlink } = runSignal(signal);
  const channel = new EventChannel<AgentEvent>();
  let settled = false;
  const done = start((event) => channel.push(event), controller.signal).then(
    (result) => {
      settled = true;
      channel.push(result);
      channel.close();
    },
    (error: unknown) => {
      settled = true;
      channel.fail(error);
    },
  );
  try {
    yield* channel;
  } finally {
    // The consumer stopped early: abort, and wait for started handlers to settle.
    if (!settled) {
      controller.abort(new Error("The stream's consumer stopped reading."));
      await done;
    }
    unlink();
  }
}
