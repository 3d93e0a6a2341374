import { messageForModel, ResumeError, ToolTimeoutError } from "../core/errors.ts";
import { emptyUsage, type Message, type ToolResultBlock, type Usage } from "../core/messages.ts";
import { runtimeOf } from "../tools/definition.ts";
import type { ToolResult } from "../tools/types.ts";
import type { ResumeOptions } from "./agent-options.ts";
import { APPROVAL_SECRET_ENV } from "./approval-secret.ts";
import { type CallRecord, errorResult, newCallRecord, resultFromValue } from "./call.ts";
import type { EngineConfig } from "./config.ts";
import { agentRuntimeOf, type ChildResume, type RunLink, rootLink } from "./link.ts";
import { FINAL_OUTPUT } from "./output.ts";
import type { PermissionDecision } from "./permission-layer.ts";
import { checkPermissionMode, type PermissionMode } from "./policy.ts";
import { applyApproval } from "./prepare-call.ts";
import { batchDigest, callTuple, sealMatches } from "./seal.ts";
import { checkStateStory } from "./state-check.ts";
import { routeAnswers } from "./tree.ts";
import type { QueuedMessage, RunState, Step } from "./types.ts";
import { queuedOf } from "./user-content.ts";

/** What `restoreRun` hands the loop: the run so far, and the records of an interrupted batch. */
export interface RestoredRun {
  sessionId: string;
  messages: Message[];
  steps: Step[];
  usage: Usage;
  numTurns: number;
  records?: CallRecord[];
  /** Results of the batch's already-finished calls, by call id. */
  doneBlocks: Map<string, ToolResultBlock>;
  toolOutputs: Record<string, unknown>;
  /** Approved and held calls, which run when the batch resumes. */
  runnable: CallRecord[];
  runData: Map<string, unknown>;
  /** The run's place in a tree of agent runs. */
  link: RunLink;
  /** Steering messages and follow-ups the state carried, not delivered yet. */
  queued: QueuedMessage[];
  outputAttempts: number;
  /** The permission mode the run paused under (a resume's own `permissionMode` wins). */
  permissionMode?: PermissionMode;
}

/** Checks a state handed to `resume` and rebuilds the run from it. Throws `ResumeError` before any side effect. */
export async function restoreRun(
  state: unknown,
  config: EngineConfig,
  options: ResumeOptions,
  link: RunLink = rootLink(config, () => 0),
): Promise<RestoredRun> {
  if (typeof state === "string") {
    try {
      state = JSON.parse(state);
    } catch {
      throw new ResumeError(
        "resume: the state is a string that is not JSON. Pass the `state` of a paused result (or its JSON text).",
      );
    }
  }
  const candidate = state as Partial<RunState> | null;
  if (typeof candidate !== "object" || candidate === null || candidate.version !== 1) {
    throw new ResumeError(
      "resume: this is not a skein run state (expected { version: 1, ... } from a paused result's `state`).",
    );
  }
  if (
    !Array.isArray(candidate.messages) ||
    !Array.isArray(candidate.steps) ||
    typeof candidate.sessionId !== "string" ||
    typeof candidate.numTurns !== "number"
  ) {
    throw new ResumeError(
      "resume: the state is missing its messages, steps, sessionId or numTurns; pass it unchanged.",
    );
  }
  // The whole story first: a state edited to replay, reorder or re-answer calls goes no further.
  checkStateStory(candidate as RunState);
  for (const [name, given] of [
    ["toolOutputs", options.toolOutputs],
    ["approvals", options.approvals],
  ] as const) {
    if (
      given !== undefined &&
      (typeof given !== "object" || given === null || Array.isArray(given))
    )
      throw new ResumeError(
        `resume: ${name} must be an object mapping call ids to ${name === "approvals" ? "decisions" : "outputs"}.`,
      );
  }
  // Answers for calls waiting inside child runs go down to those runs.
  const routed = routeAnswers(candidate as RunState, options);
  const toolOutputs = routed.own.toolOutputs;
  const approvals = routed.own.approvals;
  link.childUsage = childUsageOf(candidate);
  // Until the run starts (and counts live), what a child may take is what the state has left.
  const turnsUsed = candidate.numTurns;
  link.turnsLeft = () => config.maxTurns - turnsUsed;
  const restored: RestoredRun = {
    sessionId: candidate.sessionId,
    // Resuming never changes the state it was given: it can be resumed again.
    messages: structuredClone(candidate.messages),
    steps: structuredClone(candidate.steps),
    usage: {
      inputTokens: 0,
      outputTokens: 0,
      cacheReadInputTokens: 0,
      cacheCreationInputTokens: 0,
      ...candidate.usage,
    },
    numTurns: candidate.numTurns,
    doneBlocks: new Map(),
    toolOutputs,
    runnable: [],
    runData: restoreRunData(candidate, config),
    link,
    queued: queuedOf(candidate.queued),
    outputAttempts:
      Number.isInteger(candidate.outputAttempts) && candidate.outputAttempts! > 0
        ? candidate.outputAttempts!
        : 0,
  };
  const mode =
    checkPermissionMode("resume", options.permissionMode, config.hardened === true) ??
    (candidate.permissionMode === undefined
      ? undefined
      : checkStateMode(candidate.permissionMode, config));
  if (mode !== undefined) restored.permissionMode = mode;
  const calls = candidate.batch ? structuredClone(candidate.batch.calls) : undefined;
  const digest = calls ? batchDigest(candidate.messages.at(-1), candidate.batch!.calls) : "";
  const waiting = { external: new Set<string>(), approval: new Set<string>() };
  const approvalChecks: (() => Promise<void>)[] = [];
  if (calls) {
    restored.records = [];
    for (const call of calls) {
      const record = newCallRecord(call.id, call.name, call.input);
      // Timed from the resume: waiting for an answer is not the tool's time.
      record.startedAt = performance.now();
      restored.records.push(record);
      if (call.status === "done") {
        record.result = call.result;
        record.stop = call.stop;
        if (call.failRunTimeoutMs !== undefined)
          record.failRun = new ToolTimeoutError(call.name, call.failRunTimeoutMs);
        record.preliminaryResults = call.preliminaryResults ?? [];
        restored.doneBlocks.set(call.id, call.block);
        continue;
      }
      if (
        call.reason !== "external" &&
        !sealMatches(
          config.approvalSecret,
          callTuple({
            sessionId: restored.sessionId,
            id: call.id,
            name: call.name,
            input: call.input,
            reason: call.reason,
            batch: digest,
          }),
          call.seal,
        )
      ) {
        throw new ResumeError(
          `resume: the call "${call.id}" waiting for approval does not match its seal: the state was altered after the pause, or it was paused under another approval secret. Every process that resumes an agent's runs needs the same approvalSecret option or ${APPROVAL_SECRET_ENV} (a run paused under the per-process key resumes only in the process that paused it).`,
        );
      }
      const tool =
        config.tools.get(call.name) ??
        (call.name === FINAL_OUTPUT ? config.output?.tool : undefined);
      if (!tool)
        throw new ResumeError(
          `resume: the paused call "${call.id}" is for the tool "${call.name}", which this agent does not have.`,
        );
      const outcome = await runtimeOf(tool).validate(call.input);
      if (!outcome.ok)
        throw new ResumeError(
          `resume: the stored input of call "${call.id}" (${call.name}) no longer passes its schema; the state was altered.`,
        );
      record.tool = tool;
      record.runtime = runtimeOf(tool);
      record.input = outcome.value;
      if (call.reason === "external") {
        record.pending = "external";
        waiting.external.add(call.id);
        continue;
      }
      if (call.reason === "child") {
        const agent = agentRuntimeOf(tool);
        if (!agent)
          throw new ResumeError(
            `resume: the paused call "${call.id}" waits in a child run, but "${call.name}" is not an agent tool here.`,
          );
        // The child's state is checked (and restored) now, whole, before anything runs.
        const resumeChild = await agent.restore(
          { id: call.id, input: record.input, state: call.state },
          { config, link, sessionId: restored.sessionId },
          routed.children.get(call.id) ?? {},
        );
        approvalChecks.push(() => admitChild(record, resumeChild, config));
        continue;
      }
      const reason = call.reason;
      // Held calls may be named too: on resume they are decided again, and may now ask.
      waiting.approval.add(call.id);
      approvalChecks.push(() => admitOnResume(record, reason, approvals, config));
    }
  }
  for (const id of Object.keys(toolOutputs)) {
    if (!waiting.external.has(id))
      throw new ResumeError(
        `resume: toolOutputs names "${id}", which is not a call waiting for output in this state.`,
      );
  }
  for (const [id, answer] of Object.entries(approvals)) {
    if (!waiting.approval.has(id))
      throw new ResumeError(
        `resume: approvals names "${id}", which is not a call waiting for approval in this state.`,
      );
    if (!isApprovalAnswer(answer))
      throw new ResumeError(
        `resume: the approval for "${id}" must be true, false, { behavior: "allow", updatedInput? } or { behavior: "deny", message }.`,
      );
  }
  // Only now, with the whole state checked, are deny rules and approvals applied.
  for (const check of approvalChecks) await check();
  restored.runnable = (restored.records ?? []).filter(
    (record) => !record.result && record.pending === undefined,
  );
  return restored;
}

/**
 * A call that waited for approval (or behind one) on resume: deny rules are checked again (rules
 * may have changed, and a state is not trusted to have been checked); then an approval call runs
 * only with an approval, and a held call runs as it would have.
 */
async function admitOnResume(
  record: CallRecord,
  reason: "approval" | "held",
  approvals: Record<string, unknown>,
  config: EngineConfig,
): Promise<void> {
  record.reachedHandler = false;
  const gate = config.permissions;
  // A call that waited for approval is checked against the deny rules again; a held one is
  // decided again from scratch (the resuming agent's rules may ask where the pausing one allowed).
  const verdict =
    reason === "approval"
      ? denialVerdict(await gate?.denial(record.tool!, record.input))
      : ((await gate?.decide(record.tool!, record.input)) ?? { behavior: "allow" as const });
  if (verdict.behavior === "deny") {
    record.result = errorResult(verdict.message, "denied");
    return;
  }
  // The resuming agent may hide the tool: a hidden tool never runs, as in a fresh run.
  if (!config.visible.has(record.name) && record.tool !== config.output?.tool) {
    record.result = errorResult(
      `Tool "${record.name}" is not available to this agent, so the resumed call was not run.`,
      "not_found",
    );
    return;
  }
  if (
    verdict.behavior === "allow" &&
    reason === "held" &&
    !Object.hasOwn(approvals, record.id) &&
    !(await toolAsksOnResume(record))
  )
    return;
  if (!Object.hasOwn(approvals, record.id)) {
    record.result = errorResult(
      `Permission to run "${record.name}" was not given (no approval when the run was resumed), so it was not run.`,
      "denied",
    );
    return;
  }
  await applyApproval(record, { config }, approvals[record.id]);
}

/**
 * A held call's tool may ask for approval itself (`needsApproval`), as it would in a fresh run; a
 * check that fails or answers anything but false counts as asking, so the call needs an approval.
 */
async function toolAsksOnResume(record: CallRecord): Promise<boolean> {
  const needsApproval = runtimeOf(record.tool!).needsApproval;
  if (!needsApproval) return false;
  try {
    const signal = new AbortController().signal;
    return (await needsApproval(record.input, { callId: record.id, signal })) !== false;
  } catch {
    return true;
  }
}

/**
 * An agent call whose child paused: it continues inside that child unless this agent's rules now
 * deny the agent tool or hide it (then the child's waiting calls are not run).
 */
async function admitChild(
  record: CallRecord,
  resumeChild: ChildResume,
  config: EngineConfig,
): Promise<void> {
  const denial = await config.permissions?.denial(record.tool!, record.input);
  if (denial) record.result = errorResult(denial, "denied");
  else if (!config.visible.has(record.name))
    record.result = errorResult(
      `Tool "${record.name}" is not available to this agent, so the resumed call was not run.`,
      "not_found",
    );
  else record.resumeChild = resumeChild;
}

/** What a run's children spent, from a state (`totalUsage - usage`). */
function childUsageOf(state: Partial<RunState>): Usage {
  const spent = emptyUsage();
  const total = state.totalUsage;
  if (typeof total !== "object" || total === null) return spent;
  for (const key of Object.keys(spent) as (keyof Usage)[]) {
    const value = (total[key] ?? 0) - (state.usage?.[key] ?? 0);
    spent[key] = Number.isFinite(value) && value > 0 ? value : 0;
  }
  return spent;
}

function denialVerdict(denial: string | undefined): PermissionDecision {
  return denial ? { behavior: "deny", message: denial } : { behavior: "ask", reason: "" };
}

/**
 * The run's `runData`, when its seal holds. Tools trust what they stored there (Read's records
 * let Edit change a file), so data altered since the pause, or sealed with another key, is
 * dropped rather than trusted: the tools then act as if nothing was recorded (Edit asks the
 * model to read the file again), and the resume goes on.
 */
function restoreRunData(candidate: Partial<RunState>, config: EngineConfig): Map<string, unknown> {
  const data = candidate.runData;
  if (typeof data !== "object" || data === null) return new Map();
  const sealed = sealMatches(
    config.approvalSecret,
    [candidate.sessionId, data],
    candidate.runDataSeal,
  );
  return sealed ? new Map(Object.entries(structuredClone(data))) : new Map();
}

function isApprovalAnswer(value: unknown): boolean {
  if (typeof value === "boolean") return true;
  if (typeof value !== "object" || value === null) return false;
  const answer = value as { behavior?: unknown; message?: unknown };
  return (
    answer.behavior === "allow" ||
    (answer.behavior === "deny" && typeof answer.message === "string")
  );
}

/** Fills the calls that waited for the app's output; their blocks come with the resumed batch. */
export async function fillToolOutputs(restored: RestoredRun): Promise<void> {
  for (const record of restored.records ?? []) {
    if (record.pending !== "external") continue;
    record.pending = undefined;
    record.reachedHandler = true;
    record.startedAt = performance.now();
    record.result = Object.hasOwn(restored.toolOutputs, record.id)
      ? await outputResult(record, restored.toolOutputs[record.id])
      : errorResult(
          `No output was provided for the call to "${record.name}" when the run was resumed.`,
          "no_output",
        );
  }
}

async function outputResult(record: CallRecord, output: unknown): Promise<ToolResult> {
  const runtime = record.runtime!;
  let value = output;
  if (runtime.onResponse) {
    try {
      value = await runtime.onResponse(output, record.input);
    } catch (error) {
      return errorResult(
        `The response for "${record.name}" was rejected: ${messageForModel(error)}`,
        "invalid_result",
      );
    }
  }
  return resultFromValue(record, runtime, value);
}

/** The mode a state carries: a known one, never above what the agent's preset allows. */
function checkStateMode(mode: unknown, config: EngineConfig): PermissionMode {
  try {
    return checkPermissionMode("resume", mode, config.hardened === true)!;
  } catch (error) {
    throw new ResumeError(
      `resume: the state's ${(error as Error).message.replace(/^resume: /, "")}`,
    );
  }
}
