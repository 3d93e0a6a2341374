import { HookError, messageForModel } from "../core/errors.ts";
import { runtimeOf } from "../tools/definition.ts";
import type { ToolRuntime } from "../tools/types.ts";
import { untilAborted } from "./abortable.ts";
import {
  type CallEnvironment,
  type CallRecord,
  cancelledResult,
  describeKind,
  errorResult,
  hookContext,
  isObject,
  isPlainObject,
} from "./call.ts";
import { classify, validateInto } from "./call-input.ts";
import type { EngineConfig } from "./config.ts";
import { checkToolInput } from "./guardrails.ts";
import { type ChainLink, callHook, chainOf, contextFor, hookLabel } from "./hooks.ts";
import { placeOf } from "./model-call.ts";
import { FINAL_OUTPUT } from "./output.ts";
import type { PermissionDecision, PermissionLayer } from "./permission-layer.ts";
import { applyMode, type PermissionMode } from "./policy.ts";
import type { AgentEvent } from "./types.ts";

/**
 * Emits `tool_start`, then finds the tool, rewrites and validates the input, runs
 * `beforeToolCall`, and reads the concurrency rules. Calls that fail here get their result now
 * and never reach a handler.
 */
export async function prepareCall(
  record: CallRecord,
  env: CallEnvironment,
  options: { early?: boolean } = {},
): Promise<void> {
  const { config } = env;
  const tool = toolFor(record.name, env);
  const startEvent: AgentEvent = {
    type: "tool_start",
    callId: record.id,
    name: record.name,
    input: record.rawInput,
  };
  if (tool?.label !== undefined) startEvent.label = tool.label;
  env.emit(startEvent);
  record.startedAt = performance.now();
  if (record.result) return;

  if (!tool) {
    const available = [...(env.offered ?? config.visible)].join(", ") || "none";
    record.result = errorResult(
      `Tool "${record.name}" does not exist. Available tools: ${available}.`,
      "not_found",
    );
    return;
  }
  record.tool = tool;
  const runtime = runtimeOf(tool);
  record.runtime = runtime;

  if (!isPlainObject(record.rawInput)) {
    record.result = errorResult(
      `Invalid input for tool "${record.name}": the input must be a JSON object, received ${describeKind(record.rawInput)}. Call the tool again with an object of its parameters.`,
      "invalid_input",
    );
    return;
  }
  let input: unknown = record.rawInput;
  if (runtime.prepareArguments) {
    try {
      input = runtime.prepareArguments({ ...record.rawInput });
      if (!isPlainObject(input)) {
        record.result = errorResult(
          `Tool "${record.name}" could not prepare its arguments: its prepareArguments returned ${describeKind(input)}; it must return an object.`,
          "invalid_input",
        );
        return;
      }
    } catch (error) {
      record.result = errorResult(
        `Tool "${record.name}" could not prepare its arguments: ${messageForModel(error)}`,
        "invalid_input",
      );
      return;
    }
  }
  if (await validateInto(record, runtime, input))
    await afterValidation(record, env, options.early === true);
}

/** The hook, the permission gate and the concurrency rules, for a call with valid input. */
function afterValidation(
  record: CallRecord,
  env: CallEnvironment,
  early: boolean,
): void | Promise<void> {
  const chain = chainOf(placeOf(env), "beforeToolCall");
  if (chain.length > 0) return withBeforeToolCall(record, env, early, chain);
  return permitAndClassify(record, env, early, undefined);
}

async function withBeforeToolCall(
  record: CallRecord,
  env: CallEnvironment,
  early: boolean,
  chain: ChainLink[],
): Promise<void> {
  const runtime = record.runtime!;
  // `{ ask: reason }` from beforeToolCall: the call goes to approval as an ask rule would send it.
  let hookAsk: string | undefined;
  // The child's own hook first, then its ancestors', each seeing the input the one before left.
  for (const link of chain) {
    let decision: unknown;
    const label = hookLabel(link);
    try {
      decision = await callHook(
        link,
        contextFor(link, hookContext(record, env), env.link?.parentCallId),
        { event: "beforeToolCall" },
        env.signal,
      );
    } catch (error) {
      if (env.signal.aborted) {
        record.result = cancelledResult(record, "before it started");
        return;
      }
      record.result = errorResult(
        `The ${label} hook failed for tool "${record.name}": ${messageForModel(unwrapHook(error))}`,
        "blocked",
      );
      return;
    }
    if (isObject(decision) && decision.block === true) {
      const reason =
        typeof decision.reason === "string" && decision.reason
          ? decision.reason
          : "no reason given";
      record.result = errorResult(`Tool call blocked: ${reason}`, "blocked");
      return;
    }
    if (
      isObject(decision) &&
      "input" in decision &&
      !(await validateInto(record, runtime, decision.input))
    )
      return;
    if (isObject(decision) && "ask" in decision) {
      if (typeof decision.ask !== "string") {
        record.result = errorResult(
          `The ${label} hook answered { ask } without a reason string for tool "${record.name}".`,
          "blocked",
        );
        return;
      }
      hookAsk ??= decision.ask;
    }
  }
  await permitAndClassify(record, env, early, hookAsk);
}

/** What a hook threw, from inside the `HookError` that names it. */
export function unwrapHook(error: unknown): unknown {
  return error instanceof HookError && error.cause !== undefined ? error.cause : error;
}

/**
 * The tool's own approval check (a tool adapted from another SDK may carry one), the permission
 * gate (or the hook's ask), then the concurrency rules if the call may run.
 */
function permitAndClassify(
  record: CallRecord,
  env: CallEnvironment,
  early: boolean,
  hookAsk: string | undefined,
): void | Promise<void> {
  const needsApproval = record.runtime!.needsApproval;
  if (!needsApproval) return gateAndClassify(record, env, early, hookAsk);
  return toolAsks(record, needsApproval, env).then((toolAsk) => {
    if (!record.result) return gateAndClassify(record, env, early, hookAsk ?? toolAsk);
  });
}

/**
 * Whether the tool asks for approval of this call: the reason when it does. A check that throws,
 * or answers anything but true or false, leaves the call unrun (as a deny would).
 */
async function toolAsks(
  record: CallRecord,
  needsApproval: NonNullable<ToolRuntime["needsApproval"]>,
  env: CallEnvironment,
): Promise<string | undefined> {
  let answer: unknown;
  try {
    answer = await untilAborted(
      needsApproval(record.input, { callId: record.id, signal: env.signal }),
      env.signal,
    );
  } catch (error) {
    record.result = env.signal.aborted
      ? cancelledResult(record, "before it started")
      : errorResult(
          `Tool "${record.name}" was not run: its needsApproval check failed: ${messageForModel(error)}`,
          "denied",
        );
    return undefined;
  }
  if (answer === true) return `the tool "${record.name}" asks for approval (needsApproval)`;
  if (answer !== false)
    record.result = errorResult(
      `Tool "${record.name}" was not run: its needsApproval check answered ${describeKind(answer)}, not true or false.`,
      "denied",
    );
  return undefined;
}

function gateAndClassify(
  record: CallRecord,
  env: CallEnvironment,
  early: boolean,
  hookAsk: string | undefined,
): void | Promise<void> {
  const { config } = env;
  let waiting: Promise<void> | undefined;
  // The answer of `output` is not a tool of the agent's: no rule or mode governs it.
  const answer = record.tool === config.output?.tool;
  const mode = answer ? "default" : modeOf(env);
  if (config.permissions && !answer) waiting = permit(record, env, early, hookAsk, mode);
  else {
    const asked: PermissionDecision =
      hookAsk !== undefined ? { behavior: "ask", reason: hookAsk } : ALLOW;
    waiting = applyDecision(record, env, applyMode(mode, record.tool!, asked), early);
  }
  if (waiting) return waiting.then(() => classifyUnanswered(record, config));
  classifyUnanswered(record, config);
}

const ALLOW: PermissionDecision = { behavior: "allow" };

/** The permission mode the call is decided under (a child's: the stricter of its own and its parent's). */
function modeOf(env: CallEnvironment): PermissionMode {
  return env.link?.mode() ?? env.config.permissionMode ?? "default";
}

function classifyUnanswered(record: CallRecord, config: EngineConfig): void {
  if (!record.result) classify(record, record.runtime!, config);
}

/** The tool a call names, among those the request offered (`final_output` with `output`). */
function toolFor(name: string, env: CallEnvironment) {
  const { config, offered } = env;
  if (offered && !offered.has(name)) return undefined;
  if (config.visible.has(name)) return config.tools.get(name);
  return name === FINAL_OUTPUT && offered?.has(name) ? config.output?.tool : undefined;
}

/**
 * The permission gate, after hooks (so a hook's rewritten input is what is checked): a deny is an
 * error result; an ask goes to the approval handler, or, with none, leaves the call waiting for
 * approval (the run pauses). Anything the gate or handler does wrong counts as a deny.
 */
function permit(
  record: CallRecord,
  env: CallEnvironment,
  early: boolean,
  hookAsk: string | undefined,
  mode: PermissionMode,
): Promise<void> | undefined {
  let decision: ReturnType<PermissionLayer["decide"]>;
  try {
    decision = env.config.permissions!.decide(record.tool!, record.input);
  } catch (error) {
    permissionFailed(record, error);
    return undefined;
  }
  const settle = (settled: PermissionDecision) =>
    applyDecision(record, env, applyMode(mode, record.tool!, withHookAsk(settled, hookAsk)), early);
  // Awaited only when the gate needed the file system, so eager calls keep their pace.
  if (decision instanceof Promise)
    return decision.then(settle, (error: unknown) => permissionFailed(record, error));
  return settle(decision);
}

function permissionFailed(record: CallRecord, error: unknown): void {
  record.result = errorResult(
    `Permission check failed for tool "${record.name}", so it was not run: ${messageForModel(error)}`,
    "denied",
  );
}

/** A hook's ask stands unless a rule denies. */
function withHookAsk(settled: PermissionDecision, hookAsk: string | undefined): PermissionDecision {
  return hookAsk !== undefined && settled.behavior !== "deny"
    ? { behavior: "ask", reason: hookAsk }
    : settled;
}

function applyDecision(
  record: CallRecord,
  env: CallEnvironment,
  decision: PermissionDecision,
  early: boolean,
): Promise<void> | undefined {
  if (decision.behavior === "deny") {
    record.result = errorResult(decision.message, "denied");
    return undefined;
  }
  // The tool input guardrails: after the rules, before approval.
  const guarding = checkToolInput(record, env);
  if (guarding)
    return guarding.then((passed) => (passed ? approve(record, env, decision, early) : undefined));
  return approve(record, env, decision, early);
}

/** A call the rules and guardrails let through: it runs, or waits for approval. */
function approve(
  record: CallRecord,
  env: CallEnvironment,
  decision: PermissionDecision,
  early: boolean,
): Promise<void> | undefined {
  if (decision.behavior !== "ask") return undefined;
  record.approvalReason = decision.reason;
  if (!env.config.approval) {
    record.pending = "approval";
    return undefined;
  }
  // Nobody is asked about a reply the model has not finished: the batch asks once it is complete.
  if (early) {
    record.askLater = true;
    return undefined;
  }
  return askApproval(record, env);
}

/** Asks the approval handler about a call the rules sent to "ask", and applies the answer. */
export async function askApproval(record: CallRecord, env: CallEnvironment): Promise<void> {
  record.askLater = false;
  const handler = env.config.approval!;
  const reason = record.approvalReason ?? "";
  let answer: unknown;
  try {
    answer = await untilAborted(
      handler(record.name, record.input, {
        signal: env.signal,
        callId: record.id,
        sessionId: env.sessionId,
        reason,
      }),
      env.signal,
    );
  } catch (error) {
    record.result = env.signal.aborted
      ? cancelledResult(record, "before it started")
      : errorResult(
          `The approval handler failed for tool "${record.name}", so the call was denied: ${messageForModel(error)}`,
          "denied",
        );
    return;
  }
  await applyApproval(record, env, answer);
  // Approved input may differ from what the concurrency rules first read.
  if (!record.result) classify(record, record.runtime!, env.config);
}

/**
 * Applies an approval answer (from the handler, or from `resume`'s `approvals`): `true` or
 * `{ behavior: "allow", updatedInput? }` lets the call run (rewritten input is validated and
 * checked against the deny rules again); anything else denies it with an error result.
 */
export async function applyApproval(
  record: CallRecord,
  env: Pick<CallEnvironment, "config">,
  answer: unknown,
): Promise<void> {
  const allowed = answer === true || (isObject(answer) && answer.behavior === "allow");
  if (!allowed) {
    const message =
      isObject(answer) && answer.behavior === "deny" && typeof answer.message === "string"
        ? answer.message
        : "the user did not approve it";
    record.result = errorResult(
      `Permission to run "${record.name}" was denied: ${message}`,
      "denied",
    );
    return;
  }
  if (isObject(answer) && answer.updatedInput !== undefined) {
    if (!(await validateInto(record, record.runtime!, answer.updatedInput))) return;
    const denial = await env.config.permissions?.denial(record.tool!, record.input);
    if (denial) record.result = errorResult(denial, "denied");
  }
}
