// The options an app gives: the agent's (AgentOptions, with its hooks and batch policy), a run's,
// and a resume's. types.ts has what the engine gives back: events, results, states.

import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { Message, Usage } from "../core/messages.ts";
import type { SessionStore } from "../core/session-store.ts";
import type { Model, ModelSettings } from "../model/model.ts";
import type { PriceTable } from "../model/pricing.ts";
import type { JsonSchema } from "../tools/schema.ts";
import type {
  ApprovalHandler,
  PermissionResult,
  ToolCall,
  ToolDefinition,
  ToolResult,
} from "../tools/types.ts";
import type { Guardrails } from "./guardrails.ts";
import type { PermissionMode } from "./policy.ts";
import type { ToolSource } from "./tool-source.ts";
import type { SDKResultMessage } from "./types.ts";
import type { Prompt } from "./user-content.ts";

// ---------------------------------------------------------------- batch policy

export type ToolBatchDecision =
  | { allowed: true }
  | {
      allowed: false;
      code?: string;
      message: string;
      conflictingToolCallIds?: string[];
      suggestedNextStep?: string;
    };

/** Sees every call of a model response before any handler runs. */
export interface ToolBatchPolicy {
  validate(batch: { toolCalls: ToolCall[] }): ToolBatchDecision | Promise<ToolBatchDecision>;
}

// ---------------------------------------------------------------- hooks

/** What `beforeModelCall` sees before each model call. */
export interface ModelCallContext extends HookPlaceContext {
  /** Equals the `turn_start` event's `turn`. */
  turn: number;
  /** The full transcript, in a new array: return replacements, do not mutate its messages. */
  messages: Message[];
  /** Names of the tools sent by default. */
  tools: string[];
  model: Model;
  modelSettings: ModelSettings;
  /** The run's usage so far. */
  usage: Usage;
  sessionId: string;
  signal: AbortSignal;
}

/** What `beforeModelCall` may change, for this call only. */
export interface ModelCallChange {
  messages?: Message[];
  /** A subset of `context.tools`. */
  tools?: string[];
  model?: Model;
  /** Merged over the agent's, key by key. */
  modelSettings?: ModelSettings;
}

/** What every hook context carries about where the event comes from in a tree of agents. */
export interface HookPlaceContext {
  /** 0 for the registering agent's own run; how many levels of agent tools below it otherwise. */
  depth: number;
  /** Below the registering agent: the agent tool call that started the run the event comes from. */
  parentCallId?: string;
}

export interface ToolHookContext extends HookPlaceContext {
  callId: string;
  name: string;
  input: unknown;
  sessionId: string;
  signal: AbortSignal;
}

export interface ToolResultHookContext extends ToolHookContext {
  result: ToolResult;
  isError: boolean;
}

export interface UserPromptSubmitContext extends HookPlaceContext {
  /** The prompt's text (text blocks joined). */
  prompt: string;
  /** The prompt as given (text, or text and image blocks). */
  content: Message["content"];
  sessionId: string;
  signal: AbortSignal;
}

export interface SessionStartContext extends HookPlaceContext {
  sessionId: string;
  /** `"new"` (no history), `"continue"` (a stored or given conversation goes on), `"resume"` (a paused or interrupted run). */
  source: "new" | "continue" | "resume" | "fork";
}

export interface SessionEndContext extends HookPlaceContext {
  sessionId: string;
  /** The result's subtype, or `"aborted"`. */
  reason: string;
}

export interface StopContext extends HookPlaceContext {
  sessionId: string;
  /** The answer the run would end with. */
  result: string;
  /** True when this stop follows a continuation a stop hook asked for. */
  stopHookActive: boolean;
}

export interface PreCompactContext extends HookPlaceContext {
  sessionId: string;
  /** What the next request would send, before anything is removed or summarised. */
  messages: Message[];
  /** Why: `"context_window"` (the estimate passed the threshold). */
  reason: string;
}

export interface SubagentContext extends HookPlaceContext {
  /** The agent tool call that starts (or started) the child run. */
  parentCallId: string;
  /** The child's name: the agent tool's name, or the delegate target. */
  name: string;
}

export interface SubagentStopContext extends SubagentContext {
  /** The child run's result. */
  result: SDKResultMessage;
}

/** A hook: a function, or `{ handler, scope }` (`"tree"` by default: every run beneath the agent). */
export type HookEntry<F> =
  | F
  | {
      handler: F;
      /** `"self"`: only the registering agent's own runs. Default `"tree"`. */
      scope?: "self" | "tree";
      /** How long the hook may take; default 60,000 ms. A hook out of time fails as if it threw. */
      timeoutMs?: number;
    };

type Answer<T> = T | Promise<T>;

/**
 * Hooks decide; events observe. Each hook is awaited, in call order, never concurrently. A hook
 * covers every run beneath its agent (child runs of agent tools, at any depth) unless registered
 * `{ scope: "self" }`; for a child's event the child's own hook runs first, then its parent's,
 * outwards. A throwing `beforeToolCall`/`afterToolCall` becomes that call's error result; a
 * throwing `onToolResult` leaves the result alone and emits `hook_error`; a throwing
 * `userPromptSubmit`, `sessionStart`, `stop` or `preCompact` ends the run with a `HookError`.
 */
export interface AgentHooks {
  /**
   * Awaited before every model call (after `turn_start`, resumed runs included): may replace the
   * messages sent for this call only, narrow the tools, or swap the model or its settings.
   */
  beforeModelCall?: HookEntry<(context: ModelCallContext) => Answer<void | ModelCallChange>>;
  /**
   * Return `{ block: true, reason }` to stop the call, `{ input }` to replace its input (validated
   * again), or `{ ask: reason }` to send it to approval as an ask rule would.
   */
  beforeToolCall?: HookEntry<
    (
      context: ToolHookContext,
    ) => Answer<void | { block: true; reason?: string } | { input: unknown } | { ask: string }>
  >;
  /** Return `{ result }` to replace the result, or `{ stop: true }` to end the run after this batch. */
  afterToolCall?: HookEntry<
    (
      context: ToolResultHookContext,
    ) => Answer<void | { result: ToolResult | string } | { stop: true }>
  >;
  /** Observes each final result, in call order. */
  onToolResult?: HookEntry<(context: ToolResultHookContext) => Answer<void>>;
  /**
   * Before the prompt is logged or sent: `{ prompt }` replaces it, `{ block: true, reason }` ends
   * the run at once (subtype `error_blocked`, no model call, the prompt not logged).
   */
  userPromptSubmit?: HookEntry<
    (
      context: UserPromptSubmitContext,
    ) => Answer<void | { prompt: string } | { block: true; reason: string }>
  >;
  /** When a run starts. */
  sessionStart?: HookEntry<(context: SessionStartContext) => Answer<void>>;
  /** When a run ended (after its result was decided). */
  sessionEnd?: HookEntry<(context: SessionEndContext) => Answer<void>>;
  /**
   * When the run would end with an answer: `{ continue: message }` keeps it going with that
   * message as the next user turn (at most `maxStopContinuations` times).
   */
  stop?: HookEntry<(context: StopContext) => Answer<void | { continue: string }>>;
  /** Before context management removes or summarises anything: `{ veto: true }` or `{ summary }`. */
  preCompact?: HookEntry<
    (context: PreCompactContext) => Answer<void | { veto: true } | { summary: string }>
  >;
  /** Before an agent tool call starts its child run. */
  subagentStart?: HookEntry<(context: SubagentContext) => Answer<void>>;
  /** After a child run ended (or paused). */
  subagentStop?: HookEntry<(context: SubagentStopContext) => Answer<void>>;
}

// ---------------------------------------------------------------- options

export type ConcurrencyMode = "safe" | "all" | "sequential";

/** What `output` takes: a Zod object schema or any Standard Schema with JSON Schema, or a JSON Schema object. */
export type OutputSchema = StandardSchemaV1 | JsonSchema;

/** The type `output` gives `structuredResult`. */
export type OutputOf<S> = S extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<S> : unknown;

/** Context management: `false` turns it off. */
export interface ContextOptions {
  /** The model's context window in tokens; default by model id (`claude-*` 200,000, ...). */
  window?: number | undefined;
  /** Compact when the next request's estimate passes this fraction of the window; default 0.8. */
  threshold?: number | undefined;
  /** Remove old results until the estimate is at most this fraction; default 0.5. */
  target?: number | undefined;
  /** Replace the early conversation by a summary (one model call) when removing results is not enough. */
  summarize?: boolean | { model?: Model; instructions?: string } | undefined;
}

export interface AgentOptions<S extends OutputSchema | undefined = OutputSchema | undefined> {
  /** A name for the agent. */
  id?: string | undefined;
  /**
   * A `Model` (a provider, or `scriptedModel`), or a model name with `apiKey`/`baseURL`: `claude-*`
   * speaks the Anthropic protocol, `gpt-*`/`o1*`/`o3*`/`o4*` OpenAI's, and `anthropic:<id>` /
   * `openai:<id>` choose for any other id; a bare name of no known family is Anthropic.
   */
  model?: Model | string | undefined;
  apiKey?: string | undefined;
  baseURL?: string | undefined;
  /** Overrides the model id the provider sends. */
  modelName?: string | undefined;
  /**
   * Prices by model id in US dollars per million tokens, added to (or overriding) skein's own
   * table `MODEL_PRICES`: `result.usage.costUsd` is computed from them. A model with no price
   * has `costUsd` undefined.
   */
  pricing?: PriceTable | undefined;
  systemPrompt?: string | undefined;
  tools?: ToolDefinition[] | undefined;
  /** Model calls per run; default 100. */
  maxTurns?: number | undefined;
  /**
   * How deep agent tools may nest runs under this one (a top-level run has depth 0); default 3.
   * The least along the chain applies: a child can only lower it.
   */
  maxDepth?: number | undefined;
  toolConcurrency?: { mode?: ConcurrencyMode; maxConcurrency?: number } | undefined;
  /** Seed 003's form: `{ toolConcurrency: n }` means `{ mode: "all", maxConcurrency: n }`. */
  toolExecution?: { toolConcurrency?: number } | undefined;
  toolBatchPolicy?: ToolBatchPolicy | undefined;
  hooks?: AgentHooks | undefined;
  /** Cap on the text of one tool result sent to the model; default 100,000 characters. */
  maxResultChars?: number | undefined;
  /** Tool names (`*` wildcards) the model may see; others are hidden. Grants nothing. */
  allowedTools?: string[] | undefined;
  /** Tool names (`*` wildcards) hidden from the model; a `Tool(pattern)` entry is a deny rule. */
  disallowedTools?: string[] | undefined;
  /** The workspace root the built-in tools are confined to; default `process.cwd()`. */
  cwd?: string | undefined;
  /** Permission rules such as `Bash(npm run test:*)`, `Read(src/**)`: deny beats ask beats allow. */
  permissions?: { allow?: string[]; ask?: string[]; deny?: string[] } | undefined;
  /** Decides calls the rules send to "ask"; without one, such a call pauses the run for approval. */
  approval?: ApprovalHandler | undefined;
  /** `"hardened"`: custom tools must declare `security` with network "none" or "loopback", and Bash runs sandboxed. */
  preset?: "hardened" | undefined;
  /**
   * The key that seals approval-pending calls in a paused state, so a state altered before resume
   * is refused: a random string of at least 16 characters, the same in every process that resumes
   * the agent's runs. Default: `$SKEIN_APPROVAL_SECRET`. `"per-process"`: a random key that lives
   * and dies with the process. An agent with a `sessionStore` (other than `memoryStore()`) needs
   * one or the other, since its paused runs are meant to be resumed after a restart.
   */
  approvalSecret?: "per-process" | (string & {}) | undefined;
  /** Sampling and tool-use settings for every model call (a `beforeModelCall` hook may change them per call). */
  modelSettings?: ModelSettings | undefined;
  /** Context management; on by default. */
  context?: false | ContextOptions | undefined;
  /** The run's final answer, validated: `result.structuredResult` is typed from this schema. */
  output?: S | undefined;
  /** Dollars the agent's runs may spend, each counted over its whole tree (needs prices: `usage.costUsd`). */
  maxBudgetUsd?: number | undefined;
  /** Input plus output tokens each run may spend over its whole tree (child runs included). */
  maxTotalTokens?: number | undefined;
  /** Tool calls each run may make over its whole tree (agent tools and child runs' calls included). */
  maxToolCalls?: number | undefined;
  /** Checks on the prompt, the answer, and each tool call's input and output; a tripwire ends the tree. */
  guardrails?: Guardrails | undefined;
  /** How many times `stop` hooks may keep one run going (`{ continue }`); default 3. */
  maxStopContinuations?: number | undefined;
  /** Invalid answers the model may correct before the run fails; default 2. */
  outputRetries?: number | undefined;
  /**
   * MCP servers by name (`mcpServer()` handles from `skein/mcp`): their tools join the agent as
   * `mcp__<name>__<tool>`, connected at the first run that needs them; `agent.close()` ends them.
   */
  mcpServers?: Record<string, ToolSource> | undefined;
  /**
   * Skills in Anthropic's format, loaded only from these paths (absolute, or relative to `cwd`):
   * each a skill folder (it holds `SKILL.md`) or a folder of skill folders. The system prompt
   * lists each skill's name and description; the `Skill` tool gives its instructions and the
   * paths of its files on demand, and Read reads those files (read-only, even outside the
   * workspace). Nothing is loaded from a workspace unless named here.
   */
  skills?: { paths: string[] } | undefined;
  /** An OpenTelemetry `Tracer`: runs, model calls and tool calls become spans (GenAI conventions). */
  tracer?: unknown | undefined;
  /**
   * Where runs are logged: `run(prompt, { sessionId })` continues the stored
   * conversation, and `agent.resume({ sessionId })` continues a paused or crashed run from the
   * store alone. `memoryStore()`, `sqliteStore()` from `skein/sqlite`, `postgresStore()` from
   * `skein/postgres`, or your own.
   */
  sessionStore?: SessionStore | undefined;
  /**
   * How calls the rules would ask about are treated: `"default"`, `"acceptEdits"`, `"plan"`,
   * `"dontAsk"` or `"bypassPermissions"` (refused under the hardened preset). A run's own
   * `permissionMode` replaces it; a child agent runs under the stricter of its own and its parent's.
   */
  permissionMode?: PermissionMode | undefined;
}

export interface RunOptions {
  signal?: AbortSignal | undefined;
  /** With a session store: the session to continue (a new one with this id if it has no entry). */
  sessionId?: string | undefined;
  /**
   * The conversation so far (a previous result's `messages`), for apps that keep their own
   * history; the new prompt follows it. Not with a session store: one source of history.
   */
  messages?: Message[] | undefined;
  /** Where `steer()` and `followUp()` messages come from (`createSteering()`); one run each. */
  steering?: Steering | undefined;
  /** This run's permission mode (replaces the agent's); the stream handle's `setPermissionMode` changes it. */
  permissionMode?: PermissionMode | undefined;
  /** A budget for this run's tree, beside the agent's own (the first exceeded ends it). */
  maxBudgetUsd?: number | undefined;
  maxTotalTokens?: number | undefined;
  maxToolCalls?: number | undefined;
}

/** Messages for a running agent (`createSteering()`, or the handle `agent.stream()` returns). */
export interface Steering {
  /** Delivered at the next call boundary; calls of the batch not yet started are not run. */
  steer(message: Prompt): void;
  /** Runs when the current prompt would end, in the same run. */
  followUp(message: Prompt): void;
}

/** What `agent.resume` continues from the store alone: the session's unfinished run. */
export interface SessionTarget {
  sessionId: string;
}

export interface ResumeOptions {
  signal?: AbortSignal | undefined;
  /**
   * Call id -> what the app's tool returned (the shapes a handler may return). A call waiting
   * inside a child run is named by its own id (or `"<parentCallId>/<id>"`, as `pending` lists it
   * when two calls of the tree share an id).
   */
  toolOutputs?: Record<string, unknown> | undefined;
  /** Messages for the resumed run (a new `Steering`: one serves one run). */
  steering?: Steering | undefined;
  /** Call id (as for `toolOutputs`) -> approval: `true`, `false`, `{ behavior: "allow", updatedInput? }` or `{ behavior: "deny", message }`. */
  approvals?: Record<string, PermissionResult> | undefined;
  /** The resumed run's permission mode; default: the one the state paused under. */
  permissionMode?: PermissionMode | undefined;
}
