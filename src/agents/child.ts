// One agent tool call in call mode: the child run, narrowed to what its parent may do, and what
// its result means for the parent (design/agents.md, "Call mode" and "Permissions").

import { randomUUID } from "node:crypto";
import { describeThrown, ResumeError } from "../core/errors.ts";
import { addUsage, emptyUsage, type Usage } from "../core/messages.ts";
import type { ResumeOptions } from "../run/agent-options.ts";
import { freshBudget } from "../run/budget.ts";
import type { CallRecord } from "../run/call.ts";
import type { EngineConfig, Restrictions } from "../run/config.ts";
import { callHook, chainOf, type HookPlace, hasHook, treeScoped } from "../run/hooks.ts";
import type { AgentOutcome, ChildResume, ParentRun, RunLink } from "../run/link.ts";
import { runLoop } from "../run/loop.ts";
import { placeOf } from "../run/model-call.ts";
import { newRun } from "../run/new-run.ts";
import { totalUsageOf } from "../run/paused-state.ts";
import type { PermissionDecision, PermissionLayer } from "../run/permission-layer.ts";
import { stricterMode } from "../run/policy.ts";
import { type RestoredRun, restoreRun } from "../run/state.ts";
import type { AgentEvent, RunState, SDKResultMessage } from "../run/types.ts";
import { toolResultFromReturn } from "../tools/result.ts";
import type { ApprovalHandler, ToolHandlerReturn, ToolResult } from "../tools/types.ts";
import type { Workspace } from "../tools/workspace.ts";
import type { AgentHandle } from "./registry.ts";

/** What one agent tool knows about the child it starts. */
export interface ChildSpec {
  handle: AgentHandle;
  /** The tool's name (agentTool) or the target's key (delegateTool). */
  agent: string;
  /** The tool's own `maxTurns`. */
  maxTurns?: number;
  toModelOutput?: (result: SDKResultMessage) => ToolHandlerReturn | Promise<ToolHandlerReturn>;
}

/** A paused child, checked and restored, ready to go on (the engine holds it opaquely). */
interface Resumed extends ChildResume {
  restored: RestoredRun;
  config: EngineConfig;
  link: RunLink;
  /** What the child had spent when it paused (already in the parent's usage). */
  spentBefore: Usage;
}

/** Runs (or resumes) the child of one call; never rejects except with `AbortError`. */
export async function runChild(
  spec: ChildSpec,
  record: CallRecord,
  prompt: string,
  parent: ParentRun,
  signal: AbortSignal,
  resume: ChildResume | undefined,
): Promise<AgentOutcome> {
  const { link } = parent;
  if (!resume && link.depth + 1 > link.depthLimit)
    return {
      kind: "value",
      value: {
        content: `Agent "${spec.agent}" was not started: the depth limit of ${link.depthLimit} nested agent runs was reached (maxDepth). Do this part yourself.`,
        isError: true,
        details: { agent: spec.agent, reason: "max_depth", maxDepth: link.depthLimit },
      },
    };
  let child: { config: EngineConfig; link: RunLink };
  try {
    child = resume
      ? (resume as Resumed)
      : childSetup(spec, { config: parent.env.config, link }, record.id);
  } catch (error) {
    // A hardened variant that cannot be assembled, say: the call fails, the parent goes on.
    return { kind: "value", value: failed(spec, describeThrown(error).message) };
  }
  const emit = (event: AgentEvent) => {
    if (event.type === "result") return;
    parent.env.emit(
      event.parentCallId === undefined ? { ...event, parentCallId: record.id } : event,
    );
  };
  const restored = resume ? (resume as Resumed).restored : undefined;
  const place = placeOf({ config: parent.env.config, link });
  const hooked = { name: spec.agent, parentCallId: record.id };
  if (!resume && hasHook(place, "subagentStart")) {
    const failure = await subagentHooks(place, "subagentStart", hooked, parent.env.signal);
    if (failure) return { kind: "value", value: failed(spec, failure) };
  }
  const run = restored
    ? newRun(child.config, { ...restored, link: child.link, emit, signal })
    : newRun(child.config, {
        sessionId: randomUUID(),
        messages: [{ role: "user", content: prompt }],
        emit,
        signal,
        link: child.link,
      });
  // What the child spends counts in the parent's total as it is spent, aborted or not; a resumed
  // child's spending before its pause is in the parent's restored total already.
  const before = resume ? (resume as Resumed).spentBefore : undefined;
  link.children.add(() => (before ? minus(totalUsageOf(run), before) : totalUsageOf(run)));
  const result = await runLoop(run, restored);
  if (hasHook(place, "subagentStop")) {
    const failure = await subagentHooks(
      place,
      "subagentStop",
      { ...hooked, result },
      new AbortController().signal,
    );
    if (failure) return { kind: "value", value: failed(spec, failure) };
  }
  if (result.subtype === "paused")
    return { kind: "child", state: result.state!, pending: result.pending ?? [] };
  return { kind: "value", value: await resultOf(spec, result) };
}

/**
 * `subagentStart` / `subagentStop` over the parent run's chain: `depth` is how far below each
 * hook's agent the child runs. The first failure is returned as text for the call's result.
 */
async function subagentHooks(
  place: HookPlace,
  name: "subagentStart" | "subagentStop",
  base: { name: string; parentCallId: string; result?: SDKResultMessage },
  signal: AbortSignal,
): Promise<string | undefined> {
  for (const link of chainOf(place, name)) {
    try {
      await callHook(link, { ...base, depth: link.depth + 1 }, { event: name }, signal);
    } catch (error) {
      if (signal.aborted) throw error;
      return describeThrown(error).message;
    }
  }
  return undefined;
}

/** Checks and restores a paused child's state, with the parent's secret and the child's narrowing. */
export async function restoreChild(
  spec: ChildSpec,
  call: { id: string; state: RunState },
  parent: { config: EngineConfig; link: RunLink },
  answers: Pick<ResumeOptions, "approvals" | "toolOutputs">,
): Promise<ChildResume> {
  const child = childSetup(spec, parent, call.id);
  const restored = await restoreRun(call.state, child.config, answers, child.link);
  // A child run takes no steering: messages queued in its state would have nowhere to go.
  if (restored.queued.length > 0)
    throw new ResumeError(
      `resume: the paused child run of call "${call.id}" carries queued messages, which a child run never has; the state was altered.`,
    );
  const spentBefore = emptyUsage();
  addUsage(spentBefore, call.state.totalUsage ?? call.state.usage);
  const resumed: Resumed = {
    kind: "child_resume",
    restored,
    config: child.config,
    link: restored.link,
    spentBefore,
  };
  return resumed;
}

/** What a child spent since `before` (its total when it paused). */
function minus(spent: Usage, before: Usage): Usage {
  const left = emptyUsage();
  for (const key of TOKEN_COUNTS) left[key] = Math.max(0, spent[key] - before[key]);
  if (spent.reasoningTokens !== undefined)
    left.reasoningTokens = Math.max(0, spent.reasoningTokens - (before.reasoningTokens ?? 0));
  // Known only when both are (a child priced from its start).
  if (spent.costUsd !== undefined && (before.costUsd !== undefined || isZero(before)))
    left.costUsd = Math.max(0, spent.costUsd - (before.costUsd ?? 0));
  return left;
}

const TOKEN_COUNTS = [
  "inputTokens",
  "outputTokens",
  "cacheReadInputTokens",
  "cacheCreationInputTokens",
] as const;

function isZero(usage: Usage): boolean {
  return (
    usage.inputTokens +
      usage.outputTokens +
      usage.cacheReadInputTokens +
      usage.cacheCreationInputTokens ===
    0
  );
}

/** The call's result from the child's: its text, or `toModelOutput`'s; failures are error results. */
async function resultOf(spec: ChildSpec, result: SDKResultMessage): Promise<ToolResult> {
  const details: Record<string, unknown> = {
    agent: spec.agent,
    sessionId: result.sessionId,
    subtype: result.subtype,
    numTurns: result.numTurns,
    usage: result.totalUsage,
  };
  if (result.subtype !== "success")
    return failed(spec, result.error?.message ?? `it ended with ${result.subtype}.`, details);
  let output: ToolResult;
  if (spec.toModelOutput) output = toolResultFromReturn(await spec.toModelOutput(result));
  else {
    const text =
      result.result === "" && result.structuredResult !== undefined
        ? JSON.stringify(result.structuredResult)
        : result.result;
    output = { content: text };
  }
  if (output.details === undefined) output.details = details;
  if (output.structuredResult === undefined && result.structuredResult !== undefined)
    output.structuredResult = result.structuredResult;
  return output;
}

function failed(
  spec: ChildSpec,
  message: string,
  details: Record<string, unknown> = { agent: spec.agent },
): ToolResult {
  return {
    content: `Agent "${spec.agent}" failed: ${message}`,
    isError: true,
    details: { ...details, reason: "agent_failed" },
  };
}

/**
 * The child's configuration for one call: its own, narrowed by the parent's (which already
 * carries the chain above it). Tools every level would let the model see, rules combined (deny
 * beats ask beats allow, across levels), asks to the nearest handler up the chain, the parent's
 * seal key, and a turn budget within the parent's.
 */
function childSetup(
  spec: ChildSpec,
  parent: { config: EngineConfig; link: RunLink },
  callId: string,
): { config: EngineConfig; link: RunLink } {
  const hardened = parent.link.hardened || parent.config.hardened === true;
  // A hardened ancestor sandboxes the child's Bash: the child runs as its hardened variant.
  const handle = hardened ? spec.handle.hardened() : spec.handle;
  const own = handle.config;
  const above = parent.config;
  const visible = new Set(
    [...own.visible].filter((name) => above.admits(name, own.tools.get(name))),
  );
  const maxTurns = Math.max(
    0,
    Math.min(own.maxTurns, spec.maxTurns ?? Number.POSITIVE_INFINITY, parent.link.turnsLeft()),
  );
  const config: EngineConfig = {
    ...own,
    // An agent file's `model: inherit`: the parent's model, as the parent runs it.
    ...(own.inheritsModel
      ? { model: above.model, modelFactory: above.modelFactory, modelName: above.modelName }
      : {}),
    visible,
    admits: (name, tool) => own.admits(name, tool) && above.admits(name, tool),
    toolSpecs: own.toolSpecs.filter((toolSpec) => visible.has(toolSpec.name)),
    restrictions: {
      deny: [...own.restrictions.deny, ...above.restrictions.deny],
      ask: [...own.restrictions.ask, ...above.restrictions.ask],
      hidden: [...own.restrictions.hidden, ...above.restrictions.hidden],
      ...allowedOf(own.restrictions, above.restrictions),
    },
    maxTurns,
    permissions: combined(own.permissions, above.permissions, handle.workspace),
    hardened,
  };
  // Seals of the child's pauses are checked with the key of the run that will be resumed.
  if (above.approvalSecret !== undefined) config.approvalSecret = above.approvalSecret;
  else delete config.approvalSecret;
  // The child's own handler is not used: it must not approve what the parent would ask about.
  const handler = parent.link.approval;
  if (handler) config.approval = withParent(handler, callId);
  else delete config.approval;
  const link: RunLink = {
    depth: parent.link.depth + 1,
    depthLimit: Math.min(parent.link.depthLimit, own.maxDepth),
    childUsage: emptyUsage(),
    children: new Set(),
    turnsLeft: () => maxTurns,
    hardened,
    // Read live: a parent switched to plan holds its children to plan from their next call.
    mode: () => stricterMode(own.permissionMode ?? "default", parent.link.mode()),
    parentCallId: callId,
  };
  // The parent's tree-scoped hooks, then those it inherited: a child's own options cannot drop them.
  const inherited = [
    { entries: treeScoped(above.hooks), depth: parent.link.depth },
    ...(parent.link.hooks ?? []),
  ].filter((level) => Object.keys(level.entries).length > 0);
  if (inherited.length > 0) link.hooks = inherited;
  // The tree's trip, its budgets (the child's own first) and guardrails (the parent's, then above).
  const tree = parent.link.tree;
  if (tree) link.tree = tree;
  const budgets = [
    ...(own.budget ? [freshBudget(own.budget)] : []),
    ...(parent.link.budgets ?? []),
  ];
  if (budgets.length > 0) link.budgets = budgets;
  const rails = [
    ...(above.guardrails ? [{ ...above.guardrails, depth: parent.link.depth }] : []),
    ...(parent.link.guardrails ?? []),
  ];
  if (rails.length > 0) link.guardrails = rails;
  if (parent.link.inputGuard) link.inputGuard = parent.link.inputGuard;
  if (handler) link.approval = handler;
  return { config, link };
}

function withParent(handler: ApprovalHandler, parentCallId: string): ApprovalHandler {
  return (name, input, options) => handler(name, input, { ...options, parentCallId });
}

const ALLOW: PermissionDecision = { behavior: "allow" };

/**
 * A child's rules and its ancestors', as one layer: deny if any denies, ask if any asks, allow
 * only if all allow. The ancestors read the call's paths from the child's workspace.
 */
function combined(
  own: PermissionLayer | undefined,
  above: PermissionLayer | undefined,
  workspace: Workspace,
): PermissionLayer | undefined {
  if (!above) return own;
  return {
    decide(tool, input, base) {
      const mine = own?.decide(tool, input, base) ?? ALLOW;
      const theirs = above.decide(tool, input, base ?? workspace);
      if (mine instanceof Promise || theirs instanceof Promise)
        return Promise.all([mine, theirs]).then(([a, b]) => stricter(a, b));
      return stricter(mine, theirs);
    },
    denial(tool, input, base) {
      const mine = own?.denial(tool, input, base);
      const theirs = () => above.denial(tool, input, base ?? workspace);
      if (mine instanceof Promise) return mine.then((denied) => denied ?? theirs());
      return mine ?? theirs();
    },
    hides: (name, tool) => own?.hides(name, tool) === true || above.hides(name, tool),
    hiddenFromSearch: (relative, tool, base) =>
      own?.hiddenFromSearch?.(relative, tool, base) === true ||
      above.hiddenFromSearch?.(relative, tool, base ?? workspace) === true,
  };
}

function stricter(a: PermissionDecision, b: PermissionDecision): PermissionDecision {
  if (a.behavior === "deny") return a;
  if (b.behavior === "deny") return b;
  if (a.behavior === "ask" && b.behavior === "ask")
    return HARDNESS[basisOf(b)] > HARDNESS[basisOf(a)] ? b : a;
  if (a.behavior === "ask") return a;
  return b;
}

/** Which ask the permission modes lift less: the one a combined layer keeps when both ask. */
const HARDNESS = { default: 0, rule: 1, protected: 2, outside: 3 } as const;

function basisOf(decision: PermissionDecision & { behavior: "ask" }) {
  return decision.basis ?? "rule";
}

/** The `allowedTools` lists of both chains, when either has any. */
export function allowedOf(a: Restrictions, b: Restrictions): { allowed?: string[][] } {
  const lists = [...(a.allowed ?? []), ...(b.allowed ?? [])];
  return lists.length > 0 ? { allowed: lists } : {};
}
